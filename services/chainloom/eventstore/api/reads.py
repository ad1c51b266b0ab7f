"""The store calls behind each route: blocking, run on the API's thread pool.

Only row-key reads and scans (:class:`~chainloom.eventstore.queries.EventReader` and the
index rows), never a filter over values, so every request's cost is bounded by what it returns:

* one message: one row read;
* a list page: a scan of at most ``pageSize + 1`` rows (the extra row says whether a next page
  exists), plus one keys-only single-row read per emitter boundary crossed on a chain's list;
* a transaction: one index row, then one read of the rows it names;
* daily stats: a keys-only scan of the ``count:`` index rows of the days asked (one cell per
  message, values stripped), so the cost grows with the messages counted; the day span is
  bounded by ``api.max_stats_days``;
* a filtered list: prefix scans of the filter index rows of one filter value (at most
  ``MAX_EXAMINED`` rows when other filters are tested on them), then one read of the page's rows;
* volume: a scan of one rollup dimension's ``vol:`` rows of the days asked (one cell per token
  transfer, with its notional), bounded by ``api.max_stats_days``;
* gaps: a scan of the ``gaps:`` index rows (one per emitter the indexer tracks).
"""

from __future__ import annotations

import datetime as dt

from chainloom.eventstore import keys
from chainloom.eventstore.api.params import Cursor
from chainloom.eventstore.backfill import GapStateRows
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.filter_index import Filters
from chainloom.eventstore.filter_scan import FilteredPage, filtered_page
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import EventReader, StoredMessage
from chainloom.eventstore.rollups import Volume, rollup_prefix, sum_rows
from chainloom.wormhole.sequences import MAX_SEQUENCE, GapBook, OpenGap


class StoreReads:
    """What the routes read, over one pair of tables (thread-safe: the data client is)."""

    def __init__(self, tables: BigtableTables) -> None:
        self.tables = tables
        self.reader = EventReader(tables)

    def check(self) -> None:
        """One read of each table: raises TableMissingError or StoreUnavailableError."""
        self.reader.get(MessageKey(0, "0" * 64, 0))
        self.tables.read_index_rows([keys.GAP_STATE_PREFIX])

    def message(self, key: MessageKey) -> StoredMessage | None:
        return self.reader.get(key)

    def emitter_page(
        self, chain: int, emitter: str, after: int | None, size: int
    ) -> tuple[list[StoredMessage], bool]:
        """Up to ``size`` messages of one emitter after sequence ``after``, and whether more
        follow."""
        if after == MAX_SEQUENCE:
            return [], False
        start = 0 if after is None else after + 1
        found = self.reader.scan(chain, emitter=emitter, from_seq=start, limit=size + 1)
        return found[:size], len(found) > size

    def chain_page(
        self, chain: int, after: Cursor | None, size: int
    ) -> tuple[list[StoredMessage], bool]:
        """Up to ``size`` messages of one chain after ``after`` (by emitter, then sequence),
        and whether more follow."""
        page: list[StoredMessage] = []
        if after is None:
            emitter = self._emitter_after(chain, None)
            sequence: int | None = None
        else:
            emitter, sequence = after.emitter, after.sequence
        while emitter is not None and len(page) <= size:
            found, _ = self.emitter_page(chain, emitter, sequence, size + 1 - len(page))
            page += found
            emitter, sequence = self._emitter_after(chain, emitter), None
        return page[:size], len(page) > size

    def _emitter_after(self, chain: int, emitter: str | None) -> str | None:
        """The first emitter of ``chain`` after ``emitter`` (None: the first), by row key."""
        start = keys.chain_prefix(chain) if emitter is None else f"{chain}:{emitter};"
        first = next(iter(self.tables.scan_event_keys(start, f"{chain};", limit=1)), None)
        return None if first is None else MessageKey.parse(first).emitter

    def by_tx(self, tx_id: str) -> list[StoredMessage]:
        return self.reader.by_tx(tx_id)

    def filtered(self, filters: Filters, order: str, after: str | None, size: int) -> FilteredPage:
        """A filtered list page, from the filter index rows (``filter_scan``)."""
        return filtered_page(self.tables, filters, order, after, size)

    def volume(
        self, dimension: str, first: dt.date, last: dt.date, by_hour: bool
    ) -> dict[tuple[str, str], Volume]:
        """Sums of one rollup dimension's rows over UTC days ``first..last``."""
        start = rollup_prefix(dimension, f"{first:%Y%m%d}")
        end = rollup_prefix(dimension, f"{last + dt.timedelta(days=1):%Y%m%d}")
        return sum_rows(self.tables.scan_index(start, end), by_hour=by_hour)

    def daily_counts(
        self, first: dt.date, last: dt.date, chain: int | None
    ) -> dict[tuple[int, str], int]:
        return self.reader.count_per_day(first, last, chain=chain)

    def open_gaps(
        self, chain: int | None, emitter: str | None
    ) -> tuple[list[OpenGap], int, list[str]]:
        """The saved gap state's open gaps, the emitters it tracks, and unreadable rows."""
        book = GapBook()
        unreadable = GapStateRows(self.tables).load(book, chain, emitter)
        tracked = sum(
            1
            for c, e in book.tracks
            if (chain is None or c == chain) and (emitter is None or e == emitter)
        )
        return book.open_gaps(chain, emitter), tracked, unreadable
