"""Filter index and rollup rows for messages stored before they existed.

``chainloom events reindex`` reads the events table (or one chain of it) in batches and writes
each row's derived index cells with the same pure function the writer uses
(:func:`chainloom.eventstore.derived.derived_index_entries`), so a reindexed message has
exactly the rows a fresh write would have given it. The cells carry the VAA's time: running
it again, or over rows the writer already indexed, rewrites identical cells.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from chainloom.eventstore import keys
from chainloom.eventstore.bigtable import BigtableTables, endpoint
from chainloom.eventstore.cells import IndexEntry
from chainloom.eventstore.derived import derived_index_entries
from chainloom.eventstore.errors import StoreUnavailableError

REINDEX_BATCH_ROWS = 200
"""Events rows whose index cells go out in one MutateRows call (~18 index rows each)."""


@dataclass(slots=True)
class ReindexSummary:
    """What a reindex did."""

    rows: int = 0
    """Events rows read."""
    indexed: int = 0
    """Rows that got index cells (the others had no publication yet)."""
    index_rows: int = 0
    """Index rows written."""


def reindex(
    tables: BigtableTables,
    *,
    chain: int | None = None,
    batch_rows: int = REINDEX_BATCH_ROWS,
    attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
) -> ReindexSummary:
    """Write the filter index and rollup cells of every stored message (of ``chain`` if
    given)."""
    start, end = ("0", ":") if chain is None else (keys.chain_prefix(chain), f"{chain};")
    summary = ReindexSummary()
    while True:
        # One bounded read per batch (each within bigtable.operation_timeout), so a table of
        # any size is walked without one stream having to outlast the deadline.
        batch = list(tables.scan_events([(start, end)], limit=batch_rows, end_inclusive=False))
        pending: dict[str, list[IndexEntry]] = {}
        for row_key, row in batch:
            summary.rows += 1
            entries = derived_index_entries(row_key, row)
            if entries:
                summary.indexed += 1
            for entry in entries:
                pending.setdefault(entry.row_key, []).append(entry)
        if pending:
            summary.index_rows += _write(tables, list(pending.items()), attempts, sleep)
        if len(batch) < batch_rows:
            return summary
        start = batch[-1][0] + "\x00"


def _write(
    tables: BigtableTables,
    entries: list[tuple[str, list[IndexEntry]]],
    attempts: int,
    sleep: Callable[[float], None],
) -> int:
    """One MutateRows of ``entries``, the failed ones retried; how many were written."""
    todo = entries
    for attempt in range(attempts):
        failed = tables.bulk_write(tables.index, todo)
        if not failed:
            return len(entries)
        todo = [todo[i] for i in failed]
        sleep(min(0.2 * 2**attempt, 5.0))
    raise StoreUnavailableError(
        endpoint(tables.settings), f"{len(todo)} index rows still failing after {attempts} attempts"
    )
