"""The pipeline's contract, server-free: a scripted source and an in-memory store.

The store here is a list; the real verification is used (dev-signed VAAs through
:meth:`EventWriter.prepare`), so what is refused is what the real writer refuses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

import pytest

from chainloom.backoff import Backoff
from chainloom.eventstore.errors import StoreUnavailableError
from chainloom.eventstore.planner import MessageInput
from chainloom.eventstore.writer import EventWriter
from chainloom.indexer.errors import DrainTimeoutError
from chainloom.indexer.pipeline import Pipeline, PipelineBounds
from chainloom_dev.sim.dev_guardians import DevGuardians
from tests.ingest_support import flip_signature_byte, signed_transfer

KIT = DevGuardians()
FAST_RETRY = Backoff(initial=0.01, maximum=0.02)


class ScriptedSource:
    """Yields the VAAs put into it; ``stop`` ends it once what is queued was taken."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.stopped = asyncio.Event()
        self.connected = True
        self.taken = 0

    def feed(self, vaas: Sequence[bytes]) -> None:
        for vaa in vaas:
            self.queue.put_nowait(vaa)

    def stop(self) -> None:
        self.stopped.set()

    async def messages(self) -> AsyncIterator[bytes]:
        while True:
            if self.stopped.is_set() and self.queue.empty():
                return
            getter = asyncio.ensure_future(self.queue.get())
            stopping = asyncio.ensure_future(self.stopped.wait())
            done, _ = await asyncio.wait({getter, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if getter in done:
                self.taken += 1
                yield getter.result()
            else:
                getter.cancel()


class ListStore:
    """Keeps written inputs in a list; ``fail`` makes the next writes raise an outage."""

    def __init__(self) -> None:
        self.verifier = EventWriter(None, KIT.sets(0))  # type: ignore[arg-type]  # prepare only
        self.written: list[MessageInput] = []
        self.calls: list[list[str]] = []
        self.fail = 0
        self.down = False
        self.gate: asyncio.Event | None = None

    def prepare(self, raw: bytes) -> MessageInput:
        return self.verifier.prepare(raw)

    def write(self, batch: Sequence[MessageInput]) -> None:
        self.calls.append([item.vaa.message_id for item in batch])
        if self.fail > 0 or self.down:
            self.fail -= 1
            raise StoreUnavailableError("emulator test:1", "connection refused")
        self.written.extend(batch)

    def check(self) -> None:
        if self.down:
            raise StoreUnavailableError("emulator test:1", "connection refused")

    def outcomes(self) -> Mapping[str, int]:
        return {"new": len(self.written)}


def vaas(count: int, start: int = 0) -> list[bytes]:
    return [signed_transfer(start + i).to_bytes() for i in range(count)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


async def until(condition: Callable[[], bool], timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def bounds(**changes: float) -> PipelineBounds:
    values: dict[str, object] = {
        "buffer": 1000,
        "batch_rows": 50,
        "batch_latency": 0.02,
        "store_retry": FAST_RETRY,
        "drain_timeout": 5.0,
    }
    values.update(changes)
    return PipelineBounds(**values)  # type: ignore[arg-type]


def test_copies_are_dropped_and_each_vaa_is_written_once_in_order() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds())
        distinct = vaas(30)
        source.feed([vaa for vaa in distinct for _ in range(19)])
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        await until(lambda: pipeline.counters.written == 30)
        stop.set()
        await running
        assert [i.raw for i in store.written] == distinct
        assert pipeline.counters.received == 30 * 19
        assert pipeline.counters.duplicates == 30 * 18
        assert pipeline.buffer_depth == 0

    run(scenario)


def test_a_copy_with_other_signatures_is_not_a_duplicate() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds())
        first = signed_transfer(7, signers=list(range(13))).to_bytes()
        other = signed_transfer(7, signers=list(range(6, 19))).to_bytes()
        source.feed([first, first, other, other])
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        await until(lambda: pipeline.counters.written == 2)
        stop.set()
        await running
        assert [i.raw for i in store.written] == [first, other]
        assert pipeline.counters.duplicates == 2

    run(scenario)


def test_unverifiable_and_malformed_vaas_are_refused_and_counted() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds())
        good = vaas(2)
        source.feed([good[0], flip_signature_byte(good[1]), b"\x01garbage", good[1]])
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        await until(lambda: pipeline.counters.written == 2)
        stop.set()
        await running
        assert pipeline.counters.refused == 2
        assert [i.raw for i in store.written] == good

    run(scenario)


def test_a_batch_is_written_at_its_size_or_at_its_latency() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(batch_rows=10, batch_latency=0.3))
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(25))
        await until(lambda: len(store.calls) == 2)
        assert [len(call) for call in store.calls] == [10, 10]  # size-bound, at once
        await asyncio.sleep(0.1)
        assert len(store.calls) == 2  # the last 5 wait for the latency bound
        await until(lambda: len(store.calls) == 3)
        assert len(store.calls[2]) == 5
        stop.set()
        await running

    run(scenario)


def test_an_outage_keeps_the_batch_and_retries_the_same_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(batch_rows=10))
        store.down = True
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(15))
        await until(lambda: pipeline.buffer_depth == 15)
        await until(lambda: len(store.calls) >= 4)
        assert not pipeline.store_up
        ready, details = pipeline.ready()
        assert not ready
        assert "connection refused" in str(details["store"])
        assert all(call == store.calls[0] for call in store.calls)  # the very same batch
        store.down = False
        await until(lambda: pipeline.counters.written == 15)
        assert pipeline.store_up
        assert pipeline.ready()[0]
        stop.set()
        await running
        assert [i.raw for i in store.written] == vaas(15)

    with caplog.at_level(logging.WARNING, logger="chainloom.indexer.pipeline"):
        run(scenario)
    lines = [r.getMessage() for r in caplog.records if r.name == "chainloom.indexer.pipeline"]
    assert len(lines) == 2, lines  # one line per state change, however many retries
    assert "store down" in lines[0]
    assert "store up again" in lines[1]
    assert all(r.exc_info is None for r in caplog.records)


def test_a_full_buffer_stops_the_reader_and_memory_stays_bounded() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(buffer=20, batch_rows=5))
        store.down = True
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(100))
        await until(lambda: pipeline.buffer_depth == 20)
        await asyncio.sleep(0.2)
        assert pipeline.buffer_depth == 20  # never past the bound
        assert source.taken <= 21  # the reader waits with at most one VAA in hand
        store.down = False
        await until(lambda: pipeline.counters.written == 100)
        stop.set()
        await running
        assert [i.raw for i in store.written] == vaas(100)

    run(scenario)


def test_stop_drains_everything_already_taken() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        # A latency bound far away: nothing would be written before the stop.
        pipeline = Pipeline(source, store, bounds(batch_rows=1000, batch_latency=60))
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(40))
        await until(lambda: pipeline.buffer_depth == 40)
        assert store.written == []
        stop.set()
        await running
        assert len(store.written) == 40
        assert source.stopped.is_set()

    run(scenario)


def test_a_drain_that_cannot_write_gives_up_after_its_bound() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(drain_timeout=0.3))
        store.down = True
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(5))
        await until(lambda: pipeline.buffer_depth == 5)
        stop.set()
        with pytest.raises(DrainTimeoutError) as caught:
            await running
        assert caught.value.unwritten == 5
        assert "connection refused" in str(caught.value)

    run(scenario)


def test_the_store_is_checked_when_idle_and_readiness_follows() -> None:
    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(store_check_interval=0.05))
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        assert pipeline.ready()[0]
        store.down = True
        await until(lambda: not pipeline.store_up)
        source.connected = False
        store.down = False
        await until(lambda: pipeline.store_up)
        assert not pipeline.ready()[0]  # the spy is not connected
        source.connected = True
        assert pipeline.ready()[0]
        stop.set()
        await running

    run(scenario)


def test_observers_hear_of_each_vaa_after_its_write() -> None:
    seen: list[tuple[int, bytes, int]] = []

    class Recorder:
        def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
            assert at > 0
            seen.append((chain, emitter, sequence))

    async def scenario() -> None:
        source, store = ScriptedSource(), ListStore()
        pipeline = Pipeline(source, store, bounds(), observers=[Recorder()])
        stop = asyncio.Event()
        running = asyncio.create_task(pipeline.run(stop))
        source.feed(vaas(3, start=40))
        await until(lambda: pipeline.counters.written == 3)
        stop.set()
        await running
        assert [s for _, _, s in seen] == [40, 41, 42]
        assert len(seen) == len(store.written)

    run(scenario)
