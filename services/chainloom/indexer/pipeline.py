"""The running pipeline: spy stream -> dedupe -> verify -> bounded buffer -> batched writes.

Why it is shaped this way:

* **At-least-once.** A verified VAA enters the buffer and leaves it only after the write that
  carried it returned. A failed write keeps its batch and retries that same batch (the event
  writer still holds it), so an outage loses nothing; a crash loses only what the spy will
  send again on the next subscription or what gap detection finds. Writes are idempotent,
  so writing a VAA twice leaves the store as writing it once.
* **Copies cost a hash.** The ~19 guardian copies of a VAA are dropped by the recent-digest
  set (:mod:`chainloom.indexer.dedupe`) before verification; copies with other signature
  subsets verify through the signature cache and add their signatures to the row.
* **Bounded memory.** Three bounds hold under any burst: the spy client's buffer
  (``spy.buffer`` VAAs), this buffer (``buffer`` verified VAAs) and the dedupe window
  (``dedupe_window`` digests). When this buffer is full, the reader stops taking from the
  spy client; its buffer fills, and then it pushes back on the stream (``overflow=block``:
  gRPC flow control slows the sender; a real spy cuts a consumer blocked for 5 s and the
  client reconnects) or drops and counts (``overflow=drop``).
* **Small batches, bounded latency.** A batch is written when it has ``batch.rows`` VAAs or
  when its oldest VAA has waited ``batch.latency`` seconds, whichever comes first. One batch
  is written at a time, by one thread, in arrival order, so a restarted replay writes rows in
  the same order as a clean run.
* **Outages are states, not errors.** A failed write marks the store down (one log line),
  keeps the buffer and retries with backoff; the first write or check that succeeds marks it
  up again (one line). ``/readyz`` reads these states.
* **Drain.** :meth:`Pipeline.run` returns once asked to stop and the buffer is written: the
  spy stream is closed first, what the spy client had already received is still verified and
  written, and all of it must finish within ``drain_timeout`` seconds.

The pipeline knows its neighbours only as Protocols (:class:`VaaSource`, :class:`BatchStore`,
:class:`SequenceObserver`); :mod:`chainloom.indexer.service` wires the spy client and the event
writer in.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import trace

from chainloom import telemetry
from chainloom.backoff import Backoff
from chainloom.eventstore.errors import EventStoreError, UnverifiedVAAError
from chainloom.eventstore.planner import MessageInput
from chainloom.indexer.dedupe import RecentDigests, vaa_digest
from chainloom.indexer.errors import DrainTimeoutError
from chainloom.indexer.metrics import IndexerCounters, MetricsSnapshot
from chainloom.wormhole.errors import WormholeError

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("chainloom.indexer")

DEFAULT_STORE_RETRY = Backoff(initial=0.5, maximum=30.0, jitter=0.2)
"""Wait between writes of a batch while the store is down: 0.5 s doubling to 30 s, jittered."""


class VaaSource(Protocol):
    """Where VAAs come from: the relayer's :class:`~chainloom.spy.client.SpyClient`."""

    @property
    def connected(self) -> bool:
        """Whether a stream is established."""
        ...

    def messages(self) -> AsyncIterator[bytes]:
        """Every VAA received, across reconnections, until :meth:`stop` (then what is already
        received, then the end)."""
        ...

    def stop(self) -> None:
        """Close the stream."""
        ...


class BatchStore(Protocol):
    """Where verified VAAs go; called from one thread at a time (blocking calls)."""

    def prepare(self, raw: bytes) -> MessageInput:
        """Parse and verify one VAA (raises the wormhole library's errors or
        :class:`~chainloom.eventstore.errors.UnverifiedVAAError`)."""
        ...

    def write(self, batch: Sequence[MessageInput]) -> None:
        """Write a batch; raises an :class:`~chainloom.eventstore.errors.EventStoreError` when the
        store fails. After a failure the next call carries the same batch."""
        ...

    def check(self) -> None:
        """One light call to the store; raises as :meth:`write` does when it is unreachable."""
        ...

    def outcomes(self) -> Mapping[str, int]:
        """Rows written so far by outcome (new, updated, unchanged, conflicting)."""
        ...


class SequenceObserver(Protocol):
    """Told of every VAA once its write returned: the hook gap detection plugs into."""

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        """``(chain, emitter, sequence)`` is stored; ``at`` is the wall-clock time (seconds)."""
        ...


@dataclass(frozen=True, slots=True)
class PipelineBounds:
    """The pipeline's bounds and pacing (from the indexer's settings)."""

    buffer: int = 10_000
    """Most verified VAAs waiting for their write."""
    batch_rows: int = 200
    """Most VAAs per write."""
    batch_latency: float = 0.2
    """Seconds the oldest waiting VAA may wait before a partial batch is written."""
    dedupe_window: int = 100_000
    """Digests of recent VAAs remembered."""
    drain_timeout: float = 20.0
    """Seconds a stop may spend writing what is buffered."""
    store_check_interval: float = 5.0
    """Seconds without contact with the store after which it is asked again."""
    store_retry: Backoff = DEFAULT_STORE_RETRY
    """Wait between writes of a batch while the store is down."""

    def __post_init__(self) -> None:
        if self.buffer < 1 or self.batch_rows < 1 or self.dedupe_window < 1:
            raise ValueError("buffer, batch_rows and dedupe_window must be at least 1")
        if self.batch_latency <= 0 or self.store_check_interval <= 0 or self.drain_timeout < 0:
            raise ValueError("batch_latency and store_check_interval must be positive")


@dataclass(slots=True)
class _Pending:
    """One verified VAA in the buffer."""

    item: MessageInput
    """The verified VAA."""
    received: float
    """Monotonic time it left the spy client."""


class Pipeline:
    """Takes VAAs from a source, verifies, de-duplicates and writes them in batches."""

    def __init__(
        self,
        source: VaaSource,
        store: BatchStore,
        bounds: PipelineBounds | None = None,
        *,
        observers: Sequence[SequenceObserver] = (),
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.source = source
        self.store = store
        self.bounds = bounds or PipelineBounds()
        self.observers = tuple(observers)
        self.counters = IndexerCounters()
        self.recent = RecentDigests(self.bounds.dedupe_window)
        self.store_up = True
        """Whether the last write or check succeeded (True until one fails)."""
        self.store_error: str | None = None
        """The last store failure, while the store is down."""
        self.draining = False
        """Set once a stop was asked: no new VAAs are taken from the stream."""
        self.gap_gauges: Callable[[], Mapping[str, int]] | None = None
        """Reads gap detection's gauges for ``/metrics`` (None: no gap detection)."""
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._buffer: deque[_Pending] = deque()
        self._in_flight: list[_Pending] | None = None
        self._room = asyncio.Semaphore(self.bounds.buffer)
        self._arrived = asyncio.Event()
        self._taking_done = False
        self._last_contact = clock()
        self._verify_pool = ThreadPoolExecutor(1, thread_name_prefix="indexer-verify")
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="indexer-write")

    # --- state -----------------------------------------------------------------------------

    @property
    def buffer_depth(self) -> int:
        """VAAs verified and not yet written."""
        return len(self._buffer)

    def lag(self) -> float:
        """Seconds the oldest unwritten VAA has waited (0 when none waits)."""
        return self._clock() - self._buffer[0].received if self._buffer else 0.0

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Whether the indexer is doing its job (spy connected, store up, not draining)."""
        details: dict[str, object] = {
            "spy": "connected" if self.source.connected else "disconnected",
            "store": "up" if self.store_up else f"down: {self.store_error}",
            "buffer": self.buffer_depth,
        }
        if self.draining:
            details["draining"] = True
        ok = self.source.connected and self.store_up and not self.draining
        return ok, details

    def snapshot(
        self, spy: Mapping[str, int] | None = None, gaps: Mapping[str, int] | None = None
    ) -> MetricsSnapshot:
        """The counters and gauges for ``/metrics`` (``gaps``: open, ranges, given_up; else
        :attr:`gap_gauges` when set)."""
        gauges = gaps if gaps is not None else (self.gap_gauges() if self.gap_gauges else {})
        return MetricsSnapshot(
            counters=self.counters,
            rows=dict(self.store.outcomes()),
            buffer_depth=self.buffer_depth,
            buffer_capacity=self.bounds.buffer,
            lag_seconds=self.lag(),
            spy_connected=self.source.connected,
            store_up=self.store_up,
            spy=dict(spy or {}),
            gaps_open=gauges.get("open", 0),
            gap_ranges=gauges.get("ranges", 0),
            gaps_given_up=gauges.get("given_up", 0),
        )

    # --- running ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Index until ``stop`` is set (or the source ends), then drain the buffer.

        Raises :class:`DrainTimeoutError` when the drain does not finish within
        ``drain_timeout`` seconds, and whatever ends the source for good (a spy refusing
        the filters).
        """
        reader = asyncio.create_task(self._take(), name="indexer-take")
        writer = asyncio.create_task(self._write_loop(), name="indexer-write")
        checker = asyncio.create_task(self._check_loop(), name="indexer-check")
        stopping = asyncio.create_task(stop.wait())
        tasks: tuple[asyncio.Task[object], ...] = (reader, writer, checker, stopping)
        try:
            await asyncio.wait({reader, writer, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for part in (reader, writer):
                if part.done() and part.exception() is not None:
                    part.result()  # a failure of the source or a bug: raise it
            await self._drain(reader, writer)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._verify_pool.shutdown(wait=False, cancel_futures=True)
            self._write_pool.shutdown(wait=False, cancel_futures=True)

    async def _drain(self, reader: asyncio.Task[None], writer: asyncio.Task[None]) -> None:
        self.draining = True
        self.source.stop()
        log.info("indexer: draining %d buffered VAAs", self.buffer_depth)
        try:
            async with asyncio.timeout(self.bounds.drain_timeout):
                await reader
                await writer
        except TimeoutError:
            unwritten = self.buffer_depth
            cause = self.store_error or "no write finished"
            raise DrainTimeoutError(unwritten, self.bounds.drain_timeout, cause) from None
        log.info("indexer: drained; %d VAAs written in all", self.counters.written)

    async def _take(self) -> None:
        try:
            async for raw in self.source.messages():
                self.counters.received += 1
                await self.submit(raw)
        finally:
            self._taking_done = True
            self._arrived.set()

    async def submit(self, raw: bytes) -> str | None:
        """Take one VAA the way every spy VAA is taken (dedupe, verify, buffer, then the
        batched write); gap recovery hands fetched VAAs in here. Returns None once it is
        buffered, else why not (``duplicate`` or the verification error). Waits for room in
        the buffer."""
        if not self.recent.add(vaa_digest(raw)):
            self.counters.duplicates += 1
            return "duplicate"
        received = self._clock()
        loop = asyncio.get_running_loop()
        try:
            item = await loop.run_in_executor(self._verify_pool, self.store.prepare, raw)
        except (WormholeError, UnverifiedVAAError) as error:
            self.counters.refused += 1
            log.info("indexer: refused a VAA: %s", error)
            return f"refused: {error}"
        await self._room.acquire()
        self._buffer.append(_Pending(item, received))
        self._arrived.set()
        return None

    async def _next_batch(self) -> list[_Pending]:
        """The next batch once a bound is reached; empty when the stream ended and all is
        written."""
        if self._in_flight is not None:
            return self._in_flight  # a failed write retries the very same batch
        rows, latency = self.bounds.batch_rows, self.bounds.batch_latency
        while True:
            waiting = len(self._buffer)
            timeout: float | None = None
            if waiting >= rows or (waiting and self._taking_done):
                break
            if waiting:
                timeout = self._buffer[0].received + latency - self._clock()
                if timeout <= 0:
                    break
            elif self._taking_done:
                return []
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._arrived.wait()
        self._in_flight = [self._buffer[i] for i in range(min(rows, len(self._buffer)))]
        return self._in_flight

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while batch := await self._next_batch():
            items = [pending.item for pending in batch]
            attributes = {"chainloom.rows": len(items), "chainloom.attempt": failures + 1}
            try:
                with telemetry.start_span(_tracer, "indexer.write_batch", attributes=attributes):
                    # The writer's own spans (eventstore.write_batch) run in the pool's
                    # thread: hand them this context so they are children of this span.
                    write = contextvars.copy_context().run
                    await loop.run_in_executor(self._write_pool, write, self.store.write, items)
            except EventStoreError as error:
                self.counters.write_failures += 1
                self._store_failed(error)
                delay = self.bounds.store_retry.delay(failures, self._rng)
                failures += 1
                await asyncio.sleep(delay)
                continue
            failures = 0
            self._store_answered()
            self._acknowledge(batch)

    def _acknowledge(self, batch: list[_Pending]) -> None:
        now, wall = self._clock(), self._wall_clock()
        for pending in batch:
            self._buffer.popleft()
            self._room.release()
            self.counters.written += 1
            self.counters.latency.observe(now - pending.received)
            vaa = pending.item.vaa
            for observer in self.observers:
                observer.observe(vaa.emitter_chain, vaa.emitter_address, vaa.sequence, wall)
        self._in_flight = None

    async def _check_loop(self) -> None:
        """Ask the store when nothing else did for ``store_check_interval`` seconds."""
        loop = asyncio.get_running_loop()
        interval = self.bounds.store_check_interval
        while True:
            await asyncio.sleep(max(self._last_contact + interval - self._clock(), 0.05))
            if self._clock() - self._last_contact < interval:
                continue
            try:
                await loop.run_in_executor(self._write_pool, self.store.check)
            except EventStoreError as error:
                self._store_failed(error)
                self._last_contact = self._clock()  # ask again one interval later
                continue
            self._store_answered()

    def _store_failed(self, error: EventStoreError) -> None:
        reason = str(error)
        if self.store_up:
            log.warning(
                "indexer: store down: %s; %d VAAs kept in the buffer, retrying",
                reason,
                self.buffer_depth,
            )
        self.store_up = False
        self.store_error = reason

    def _store_answered(self) -> None:
        self._last_contact = self._clock()
        if not self.store_up:
            log.warning("indexer: store up again; %d VAAs buffered", self.buffer_depth)
        self.store_up = True
        self.store_error = None
