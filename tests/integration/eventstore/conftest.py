"""Fixtures: a fresh pair of tables on the real Bigtable emulator for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.settings import BigtableSettings


@pytest.fixture
def settings(bigtable_table_name: str) -> BigtableSettings:
    store = BigtableSettings(project="chainloom", instance="test", table=bigtable_table_name)
    report = ensure_schema(store)
    assert set(report.created_tables) == {store.table, store.index_table}
    return store


@pytest.fixture
def tables(settings: BigtableSettings) -> Iterator[BigtableTables]:
    with BigtableTables(settings) as opened:
        yield opened
