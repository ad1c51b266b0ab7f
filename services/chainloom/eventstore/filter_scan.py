"""Filtered lists served from the filter index rows (:mod:`chainloom.eventstore.filter_index`).

A page is read by prefix scans of the index rows of the most selective filter (two for an
address: its sender and its recipient rows; one per payload type when several are asked),
merged by their common suffix (time, then row key), each entry's facts tested against the
other filters, and then one read of the events rows of the page. The time range bounds the
scans' keys, so no row outside it is read. A filter served by its own rows alone costs
``pageSize + 1`` index rows; otherwise at most ``budget`` index rows are examined per page,
and a page that ran out of them ends early with a cursor at the last row examined.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from chainloom.eventstore import keys
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.filter_index import (
    FACTS_QUALIFIER,
    Filters,
    MessageFacts,
    exact,
    matches,
    scan_dimensions,
)
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import StoredMessage

MAX_EXAMINED = 5000
"""Index rows a page may examine when facts must be tested (then it may end early)."""

MIN_CHUNK = 256
"""Index rows per scan call when the facts must be tested (more than a page)."""


@dataclass(frozen=True, slots=True)
class FilteredPage:
    """One page of a filtered list."""

    messages: list[StoredMessage]
    """The page, in the list's order."""
    after: str | None
    """Where the next page starts (a filter row suffix); None on the last page."""
    examined: int
    """Index rows read for the page (for the bench and the docs)."""


def _bounds(order: str, filters: Filters) -> tuple[str, str | None]:
    """The time part of the first key and of the end key (exclusive; None: the prefix's
    end) of a scan in ``order``."""
    if order == "asc":
        low = keys.filter_time(order, filters.start or 0)
        high = None if filters.end is None else keys.filter_time(order, filters.end)
    else:
        newest = keys.MAX_TIMESTAMP if filters.end is None else filters.end - 1
        low = keys.filter_time(order, newest)
        high = None if not filters.start else keys.filter_time(order, filters.start - 1)
    return low, high


def _stream(  # noqa: PLR0917
    tables: BigtableTables,
    prefix: str,
    start_suffix: str,
    end_suffix: str | None,
    after: str | None,
    chunk: int,
) -> Iterator[tuple[str, bytes]]:
    """(suffix, facts JSON) of the rows under ``prefix`` from ``start_suffix`` (or strictly
    after ``after``) to ``end_suffix``, read ``chunk`` rows per call."""
    start = prefix + start_suffix
    if after is not None:
        start = max(start, prefix + after + "\x00")
    end = prefix[:-1] + ";" if end_suffix is None else prefix + end_suffix
    while start < end:
        rows = tables.scan_index(start, end, limit=chunk)
        for row_key, cells in rows:
            if FACTS_QUALIFIER in cells:
                yield row_key[len(prefix) :], cells[FACTS_QUALIFIER]
        if len(rows) < chunk:
            return
        start = rows[-1][0] + "\x00"


def filtered_page(
    tables: BigtableTables,
    filters: Filters,
    order: str,
    after: str | None,
    size: int,
    *,
    budget: int = MAX_EXAMINED,
) -> FilteredPage:
    """Up to ``size`` matches of ``filters`` in ``order`` after the suffix ``after``."""
    dimensions = scan_dimensions(filters)
    precise = exact(filters, dimensions)
    chunk = size + 1 if precise else max(size + 1, MIN_CHUNK)
    low, high = _bounds(order, filters)
    streams = [
        _stream(tables, keys.filter_prefix(order, name, value), low, high, after, chunk)
        for name, value in dimensions
    ]
    merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda e: e[0])
    found: list[tuple[str, MessageFacts]] = []
    examined = 0
    previous: str | None = None
    following: str | None = None
    for suffix, raw in merged:
        if suffix == previous:  # the same message under two of the scanned values
            continue
        previous = suffix
        examined += 1
        facts = MessageFacts.from_json(raw)
        if matches(facts, filters):
            if len(found) == size:
                following = found[-1][0]
                break
            found.append((suffix, facts))
        if examined >= budget:
            following = suffix
            break
    rows = tables.read_event_rows(facts.row_key for _, facts in found)
    messages = [
        StoredMessage(MessageKey.parse(facts.row_key), rows[facts.row_key])
        for _, facts in found
        if facts.row_key in rows
    ]
    return FilteredPage(messages, following, examined)
