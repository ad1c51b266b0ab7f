"""A SQLite load killed with SIGKILL at random ledgers and resumed stores exactly what a load
that never stopped stores: every table, row for row (the Cassandra twin is in
``tests/integration/ledger/test_etl_resume.py``)."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from pathlib import Path

import pytest

from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.file import FileLedgerSource
from tests.ledger_support import (
    FIRST,
    GrowingDump,
    Tables,
    differences,
    generate_dump,
    kill_points,
    load_with_kills,
    loader_command,
)

LEDGERS = 30
TXS = 30
KILLS = 3


def _load(path: Path, dump: Path, stop: int | None = None) -> int | None:
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(path)}})
    try:
        return LedgerEtl(backend, FileLedgerSource(dump)).run(stop=stop).last_committed
    finally:
        backend.close()


def _committed(path: Path) -> int | None:
    if not path.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as db:
            row = db.execute("SELECT max(sequence) FROM ledger_range").fetchone()
    except sqlite3.OperationalError:  # the loader has not created its tables yet
        return None
    return None if row is None else row[0]


def _tables(path: Path) -> Tables:
    with contextlib.closing(sqlite3.connect(path)) as db:
        names = [
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {name: sorted(db.execute(f'SELECT * FROM "{name}"')) for name in names}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_load_killed_at_random_ledgers_stores_what_an_uninterrupted_one_does(
    vectors_dir: Path, tmp_path: Path, seed: int
) -> None:
    dump = tmp_path / "ledgers.jsonl"
    last = generate_dump(vectors_dir, dump, seed=seed, ledgers=LEDGERS, txs=TXS)
    clean = tmp_path / "clean.db"
    assert _load(clean, dump) == last

    rng = random.Random(seed)
    targets = kill_points(rng, FIRST + 1, last - 3, KILLS)
    resumed = tmp_path / "resumed.db"
    growing = GrowingDump(dump, tmp_path / "growing.jsonl")
    command = loader_command(growing.path, "--sqlite-path", str(resumed))
    killed = load_with_kills(
        growing, command, lambda: _committed(resumed), targets, rng, pause=0.03
    )

    assert differences(_tables(clean), _tables(resumed)) == {}, f"killed after ledgers {killed}"


def test_a_load_restarted_after_every_ledger_stores_what_an_uninterrupted_one_does(
    vectors_dir: Path, tmp_path: Path
) -> None:
    """Every clean stop between two ledgers, in process: the restart sees only the store."""
    dump = tmp_path / "ledgers.jsonl"
    last = generate_dump(vectors_dir, dump, seed=7, ledgers=LEDGERS, txs=TXS)
    clean, resumed = tmp_path / "clean.db", tmp_path / "resumed.db"
    assert _load(clean, dump) == last
    for stop in range(FIRST, last + 1):
        assert _load(resumed, dump, stop) == stop
    assert differences(_tables(clean), _tables(resumed)) == {}
