"""Finding, fetching and keeping the state of gaps: the steps every gap filler shares.

Three callers fill gaps and must agree on what a gap is and how it is filled: the Spark
``gap-backfill`` job (at bulk scale), ``chainloom events backfill`` (on demand) and the
streaming indexer (as it runs). They share:

* :func:`scan_emitter` - one emitter's stored sequences (row keys only) through the
  :class:`~chainloom.wormhole.sequences.SequenceTracker`, and the missing ranges, capped;
* :func:`fetch_missing` - each missing sequence asked of the public API through
  :class:`~chainloom.publicrpc.PublicRpcClient` (found / not found / error);
* :func:`find_gaps` and :func:`fill_gaps` - ``chainloom events gaps`` and ``events
  backfill``: the saved state when there is one, else the store scanned; what is found
  written by the event writer, the rest kept with its reason;
* :class:`GapStateRows` - the streaming :class:`~chainloom.wormhole.sequences.GapBook` kept in the
  index table, one row per emitter under the ``gaps:`` prefix (why there: docs/indexer.md).

What is fetched is written by the event writer exactly as any other input (verified, with
its index rows), so a filled gap is indistinguishable from a message that never went missing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from chainloom.eventstore import keys
from chainloom.eventstore.bigtable import BigtableTables, endpoint
from chainloom.eventstore.cells import IndexEntry
from chainloom.eventstore.errors import StoreUnavailableError, UnverifiedVAAError
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.publicrpc import FetchResult, FetchStatus, PublicRpcClient
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.sequences import (
    MAX_SEQUENCE,
    GapBook,
    OpenGap,
    SequenceRange,
    SequenceTracker,
)

STATE_QUALIFIER = "state"
"""The index-table column of a ``gaps:`` row holding the emitter's JSON state."""


@dataclass(frozen=True, slots=True)
class EmitterScan:
    """What the store holds of one emitter and what it lacks."""

    chain: int
    """Emitter chain."""
    emitter: str
    """Emitter address, 64 lower-case hex."""
    stored: int
    """Distinct sequences stored (within the bounds)."""
    lowest: int | None
    """The lowest stored sequence (None: none stored)."""
    highest: int | None
    """The highest stored sequence (None: none stored)."""
    missing: list[SequenceRange]
    """The missing ranges, ascending, at most ``max_missing`` sequences in all."""
    skipped: int
    """Missing sequences beyond ``max_missing`` (left for a later run)."""


def scan_emitter(
    reader: EventReader,
    chain: int,
    emitter: str,
    *,
    first: int | None = None,
    last: int | None = None,
    max_missing: int = 100_000,
) -> EmitterScan:
    """The holes of one emitter in the store (between ``first`` and ``last`` when given; else
    between its lowest and highest stored sequence)."""
    tracker = SequenceTracker(first)
    low = 0 if first is None else first
    high = MAX_SEQUENCE if last is None else last
    tracker.add_all(reader.sequences(chain, emitter, from_seq=low, to_seq=high))
    kept, skipped = first_sequences(tracker.missing(last), max_missing)
    return EmitterScan(chain, emitter, tracker.seen, tracker.lowest, tracker.highest, kept, skipped)


def first_sequences(ranges: list[SequenceRange], limit: int) -> tuple[list[SequenceRange], int]:
    """The first ``limit`` sequences of ``ranges``, and how many are left out."""
    kept: list[SequenceRange] = []
    room = limit
    for item in ranges:
        if room <= 0:
            break
        take = min(room, item.count)
        kept.append(SequenceRange(item.first, item.first + take - 1))
        room -= take
    return kept, sum(r.count for r in ranges) - sum(r.count for r in kept)


def fetch_missing(
    client: PublicRpcClient, chain: int, emitter: str, ranges: Iterable[SequenceRange]
) -> Iterator[FetchResult]:
    """Ask the public API for every sequence of ``ranges`` in turn (one result each)."""
    for item in ranges:
        for sequence in item:
            yield client.fetch(chain, emitter, sequence)


class GapStateRows:
    """The :class:`GapBook` of a streaming gap filler, one index-table row per emitter."""

    def __init__(self, tables: BigtableTables) -> None:
        self.tables = tables

    def load(
        self, book: GapBook, chain: int | None = None, emitter: str | None = None
    ) -> list[str]:
        """Restore the saved emitters (of one chain or emitter when given) into ``book``;
        returns the row keys whose state could not be read (left out)."""
        if chain is not None and emitter is not None:
            rows = list(self.tables.read_index_rows([keys.gap_state_key(chain, emitter)]).items())
        else:
            start = keys.GAP_STATE_PREFIX if chain is None else keys.gap_state_prefix(chain)
            rows = self.tables.scan_index(start, start[:-1] + ";")
        broken = []
        for row_key, cells in rows:
            try:
                book.restore(orjson.loads(cells[STATE_QUALIFIER]))
            except (KeyError, ValueError):
                broken.append(row_key)
        return broken

    def save(self, states: Iterable[dict[str, Any]], *, timeout: float | None = None) -> int:
        """Write emitters' states (:meth:`GapBook.emitter_json`, one MutateRows); returns rows
        written. Raises :class:`StoreUnavailableError` when the store does not answer, or when
        some rows failed."""
        stamp = int(time.time() * 1000) * 1000  # Bigtable keeps millisecond granularity
        entries = []
        for state in states:
            row_key = keys.gap_state_key(int(state["chain"]), str(state["emitter"]))
            value = orjson.dumps(state)
            entries.append((row_key, [IndexEntry(row_key, STATE_QUALIFIER, value, stamp)]))
        if not entries:
            return 0
        failed = self.tables.bulk_write(self.tables.index, entries, timeout=timeout)
        if failed:
            raise StoreUnavailableError(
                endpoint(self.tables.settings), f"{len(failed)} gap state rows not written"
            )
        return len(entries)


def find_gaps(
    tables: BigtableTables,
    *,
    chain: int | None = None,
    emitter: str | None = None,
    first: int | None = None,
    last: int | None = None,
    max_missing: int = 100_000,
) -> tuple[str, GapBook | None, list[OpenGap]]:
    """The open gaps (of one chain or emitter when given) and where they came from.

    ``("state", book, gaps)`` when a streaming filler saved ``gaps:`` rows for them (its
    attempts and last errors included); else ``("store", None, gaps)`` computed by
    :func:`scan_emitter` over the emitters in the table (between each one's lowest and highest
    stored sequence, or ``first..last``).
    """
    book = GapBook()
    GapStateRows(tables).load(book, chain, emitter)
    if book.tracks:
        return "state", book, book.open_gaps(chain, emitter)
    reader = EventReader(tables)
    if chain is not None and emitter is not None:
        emitters = [(chain, emitter)]
    else:
        emitters = [(c, e) for c, e in reader.emitters(chain) if emitter in (None, e)]
    gaps = []
    for c, e in emitters:
        scan = scan_emitter(reader, c, e, first=first, last=last, max_missing=max_missing)
        gaps += [OpenGap(c, e, hole, 0.0) for hole in scan.missing]
    return "store", None, gaps


@dataclass(slots=True)
class FillReport:
    """What :func:`fill_gaps` did."""

    asked: int = 0
    """Sequences asked of the public API."""
    found: int = 0
    """Returned by an endpoint."""
    refused: int = 0
    """Returned but refused by the writer (not a valid signed VAA)."""
    not_found: int = 0
    """Every endpoint answered NotFound."""
    errors: int = 0
    """Some endpoint never answered."""
    still_missing: list[FetchResult] = field(default_factory=list)
    """The results that were not written, with their reasons."""


def fill_gaps(
    writer: EventWriter,
    client: PublicRpcClient,
    gaps: Iterable[OpenGap],
    book: GapBook | None = None,
    *,
    at: float | None = None,
) -> FillReport:
    """Fetch every sequence of ``gaps`` and write what is found through ``writer`` (flushed).

    With a ``book`` (the saved state) written sequences close their gaps and the others are
    recorded as failed attempts; the caller saves the book's dirty emitters.
    """
    now = time.time() if at is None else at
    report = FillReport()
    for gap in gaps:
        for result in fetch_missing(client, gap.chain, gap.emitter, [gap.range]):
            report.asked += 1
            message = (gap.chain, gap.emitter, result.sequence)
            if result.status is FetchStatus.FOUND and result.vaa is not None:
                report.found += 1
                try:
                    writer.submit(result.vaa)
                except (WormholeError, UnverifiedVAAError) as error:
                    report.refused += 1
                    refused = FetchResult(*message, FetchStatus.ERROR, reason=f"refused: {error}")
                    report.still_missing.append(refused)
                    if book is not None:
                        book.failed(message, "refused", refused.reason, now)
                    continue
                if book is not None:
                    book.see(gap.chain, gap.emitter, result.sequence, now)
                continue
            if result.status is FetchStatus.NOT_FOUND:
                report.not_found += 1
            else:
                report.errors += 1
            report.still_missing.append(result)
            if book is not None:
                book.failed(message, result.status.value, result.reason, now)
    writer.flush()
    return report
