"""Every index cell derived from a stored events row: the filter index and the volume rollups.

One pure function over the row as stored, shared by everything that writes events (the
planner, so ``events put``, the streaming indexer and the Spark jobs that store through the
event writer) and by ``chainloom events reindex``: the same row always gives the same cells.
"""

from __future__ import annotations

from chainloom.eventstore.cells import IndexEntry
from chainloom.eventstore.filter_index import RowSnapshot, filter_index_entries
from chainloom.eventstore.rollups import rollup_entries


def derived_index_entries(row_key: str, row: RowSnapshot) -> list[IndexEntry]:
    """The filter index and rollup cells of one stored message."""
    return filter_index_entries(row_key, row) + rollup_entries(row_key, row)
