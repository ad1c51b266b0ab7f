"""The gap filler without servers: which sequences it asks for, what it hands on, what it
records and what it saves."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chainloom import telemetry
from chainloom.eventstore.errors import StoreUnavailableError
from chainloom.indexer import gapfill
from chainloom.indexer.config import GapSettings
from chainloom.indexer.gapfill import GapFiller
from chainloom.indexer.metrics import IndexerCounters
from chainloom.publicrpc import FetchResult, FetchStatus
from chainloom.wormhole.sequences import GapBook

EMITTER = "00" * 31 + "07"


class Answers:
    """A fetcher answering from a table: found (bytes), not found, or error."""

    def __init__(self, answers: dict[int, bytes | str]) -> None:
        self.answers = answers
        self.asked: list[int] = []

    def fetch(self, chain: int, emitter: str, sequence: int) -> FetchResult:
        self.asked.append(sequence)
        answer = self.answers.get(sequence, "not_found")
        if isinstance(answer, bytes):
            return FetchResult(chain, emitter, sequence, FetchStatus.FOUND, answer, "a:1", 1)
        status = FetchStatus.NOT_FOUND if answer == "not_found" else FetchStatus.ERROR
        return FetchResult(chain, emitter, sequence, status, calls=1, reason=f"a:1: {answer}")

    def close(self) -> None:
        pass


class Saved:
    def __init__(self, fail: bool = False) -> None:
        self.rows: list[dict[str, Any]] = []
        self.fail = fail

    def load(self, book: GapBook) -> list[str]:
        for row in self.rows:
            book.restore(row)
        return []

    def save(self, states: Iterable[dict[str, Any]]) -> int:
        if self.fail:
            raise StoreUnavailableError("emulator x", "down")
        batch = list(states)
        self.rows += batch
        return len(batch)


def filler(
    answers: dict[int, bytes | str], state: Saved, now: list[float], retry_after: float = 60
) -> GapFiller:
    settings = GapSettings(grace=10, retry_after=retry_after, per_round=100)
    return GapFiller(GapBook(), settings, state, IndexerCounters(), fetcher=Answers(answers),
                     wall_clock=lambda: now[0])  # fmt: skip


def test_overdue_gaps_are_fetched_found_ones_handed_on_others_recorded() -> None:
    now = [100.0]
    state = Saved()
    gaps = filler({3: b"vaa-3", 4: "INTERNAL"}, state, now)
    for sequence in (1, 2, 6):
        gaps.book.see(2, EMITTER, sequence, 95.0)
    handed: list[bytes] = []

    async def submit(raw: bytes) -> str | None:
        handed.append(raw)
        return None

    async def rounds() -> None:
        stop = asyncio.Event()
        assert await gaps.fill_round(submit, stop) == 0  # noticed 5 s ago: within the grace
        now[0] = 106.0
        assert await gaps.fill_round(submit, stop) == 1
        now[0] = 120.0
        assert await gaps.fill_round(submit, stop) == 0  # 3 in flight, 4 and 5 wait to retry
        await gaps.save()

    asyncio.run(rounds())
    fetcher = gaps.fetcher
    assert isinstance(fetcher, Answers)
    assert fetcher.asked == [3, 4, 5]
    assert handed == [b"vaa-3"]
    counters = gaps.counters
    assert (counters.gaps_filled, counters.gaps_not_found, counters.gaps_failed) == (1, 1, 1)
    listed = gaps.book.open_gaps()[0].to_json()
    assert [(f["sequence"], f["status"]) for f in listed["failures"]] == [
        (4, "error"),
        (5, "not_found"),
    ]
    restored = filler({}, state, now)
    restored.load()
    assert restored.book.open_gaps() == gaps.book.open_gaps()


def test_a_failed_save_keeps_the_emitters_for_the_next_one() -> None:
    state = Saved(fail=True)
    gaps = filler({}, state, [0.0])
    gaps.book.see(2, EMITTER, 1, 0.0)
    gaps.book.see(2, EMITTER, 5, 0.0)
    asyncio.run(gaps.save())
    assert gaps.book.dirty == {(2, EMITTER)}
    state.fail = False
    asyncio.run(gaps.save())
    assert gaps.book.dirty == set()
    assert [row["emitter"] for row in state.rows] == [EMITTER]


def test_a_fetched_vaa_whose_write_is_pending_is_not_fetched_again_even_with_no_retry_wait() -> (
    None
):
    """``retry_after`` 0 retries failures at once, but a VAA already handed to the pipeline
    is not asked for again while its write is pending (a loaded store takes seconds); once
    written (the book sees it) its gap is closed."""
    now = [100.0]
    gaps = filler({3: b"vaa-3", 4: "not_found"}, Saved(), now, retry_after=0)
    gaps.book.see(2, EMITTER, 2, 80.0)
    gaps.book.see(2, EMITTER, 5, 80.0)

    async def submit(raw: bytes) -> str | None:
        return None

    async def rounds() -> None:
        stop = asyncio.Event()
        assert await gaps.fill_round(submit, stop) == 1
        now[0] = 101.0
        assert await gaps.fill_round(submit, stop) == 0  # 3 still being written; 4 again
        gaps.book.see(2, EMITTER, 3, 102.0)  # the write returned
        now[0] = 130.0
        assert await gaps.fill_round(submit, stop) == 0

    asyncio.run(rounds())
    fetcher = gaps.fetcher
    assert isinstance(fetcher, Answers)
    assert fetcher.asked == [3, 4, 4, 4]


def test_each_fetched_sequence_is_one_gap_fill_span_with_its_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(gapfill, "_tracer", provider.get_tracer("test"))
    now = [100.0]
    gaps = filler({3: b"vaa-3", 4: "INTERNAL", 5: b"refused-vaa"}, Saved(), now)
    for sequence in (2, 7):
        gaps.book.see(2, EMITTER, sequence, 80.0)

    async def submit(raw: bytes) -> str | None:
        return "refused: bad signature" if raw == b"refused-vaa" else None

    telemetry.enable_tracing()
    try:
        assert asyncio.run(gaps.fill_round(submit, asyncio.Event())) == 1
    finally:
        telemetry.enable_tracing(False)
    spans = exporter.get_finished_spans()
    assert {span.name for span in spans} == {"indexer.gap_fill"}
    attributes = sorted((dict(span.attributes or {}) for span in spans), key=str)
    assert attributes == [
        {"chainloom.emitter_chain": 2, "chainloom.sequence": seq, "chainloom.outcome": outcome}
        for seq, outcome in ((3, "handed"), (4, "error"), (5, "refused"), (6, "not_found"))
    ]
    counters = gaps.counters
    assert (counters.gaps_filled, counters.gaps_failed, counters.gaps_not_found) == (1, 2, 1)
