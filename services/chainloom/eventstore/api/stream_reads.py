"""The store reads of the event stream: ``feed:`` index rows after a position (keys only)
and the events rows they name, in one call each (run on the API's thread pool)."""

from __future__ import annotations

from collections.abc import Sequence

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.feed import FEED_END, FEED_PREFIX
from chainloom.eventstore.planner import RowSnapshot


class FeedReads:
    """What the stream reads, over one pair of tables."""

    def __init__(self, tables: BigtableTables) -> None:
        self.tables = tables

    def feed_after(self, position: str, limit: int) -> list[str]:
        """Up to ``limit`` cursors after ``position`` (a cursor, or a bare stamp), in order."""
        start = FEED_PREFIX + position + "\x00"
        rows = self.tables.scan_index(start, FEED_END, limit=limit, keys_only=True)
        return [row_key.removeprefix(FEED_PREFIX) for row_key, _ in rows]

    def rows(self, row_keys: Sequence[str]) -> dict[str, RowSnapshot]:
        """The events rows (latest cells) of ``row_keys`` that exist."""
        return self.tables.read_event_rows(row_keys)
