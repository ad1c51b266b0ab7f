"""Fixtures of the ledger API method tests: one generated history, served over SQLite and over
Cassandra, shared by every module of this package that asks for ``history``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ledger_api_support import Served, make_dump, serve_history


@pytest.fixture(scope="package")
def history_dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated history (``tests.ledger_api_support.make_dump``)."""
    return make_dump(vectors_dir, tmp_path_factory.mktemp("history") / "ledgers.jsonl")


@pytest.fixture(scope="package", params=["sqlite", "cassandra"])
def history(
    request: pytest.FixtureRequest, history_dump: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """The history loaded into one backend and served."""
    cassandra = (
        request.getfixturevalue("cassandra_address") if request.param == "cassandra" else None
    )
    yield from serve_history(request.param, history_dump, tmp_path_factory.mktemp("db"), cassandra)
