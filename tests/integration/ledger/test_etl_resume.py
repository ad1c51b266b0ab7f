"""Resuming a load against the real backends: the book bases a restart reads back, and a
Cassandra load killed with SIGKILL at random ledgers that must store exactly what a load that
never stopped stores (the SQLite twin is in ``tests/unit/ledger/test_etl_resume.py``)."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.types import FIRST_KEY, LAST_KEY, LedgerHeader
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


@pytest.fixture(params=["sqlite", "cassandra"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendInterface]:
    config: dict[str, Any]
    if request.param == "sqlite":
        config = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "l.db")}}
    else:
        host, port = request.getfixturevalue("cassandra_address")
        keyspace = request.getfixturevalue("cassandra_keyspace")
        config = {
            "type": "cassandra",
            "cassandra": {"hosts": [host], "port": port, "keyspace": keyspace},
        }
    opened = make_backend(config)
    yield opened
    opened.close()


def _header(sequence: int) -> LedgerHeader:
    header = LedgerHeader(
        sequence=sequence,
        total_drops=10**17,
        parent_hash=hashlib.sha256(b"parent" + sequence.to_bytes(4, "big")).digest(),
        transaction_hash=bytes(32),
        account_hash=bytes(32),
        parent_close_time=0,
        close_time=0,
        close_time_resolution=10,
        close_flags=0,
        hash=b"",
    )
    return dataclasses.replace(header, hash=header.compute_hash())


def _write_ledger(
    backend: BackendInterface, sequence: int, rows: list[tuple[bytes, bytes]]
) -> None:
    header = _header(sequence)
    backend.start_writes()
    backend.write_ledger(header, header.serialize(include_hash=True))
    for key, next_key in rows:
        backend.write_successor(key, sequence, next_key)


def test_book_bases_are_read_back_up_to_the_committed_ledger(backend: BackendInterface) -> None:
    key = bytes([0x40]) * 32
    base_a = bytes([0x20]) * 24 + bytes(8)
    base_b = bytes([0x60]) * 24 + bytes(8)
    _write_ledger(backend, 5, [(FIRST_KEY, key), (key, LAST_KEY), (base_a, key)])
    assert backend.finish_writes(5)
    # Ledger 6 names a second base but is not committed (a crash mid-ledger): not a base yet.
    _write_ledger(backend, 6, [(base_b, LAST_KEY)])
    assert backend.fetch_book_bases(5) == [base_a]
    assert backend.fetch_book_bases(6) == []  # outside the committed range
    assert backend.finish_writes(6)
    assert backend.fetch_book_bases(6) == [base_a, base_b]
    assert backend.fetch_book_bases(5) == [base_a]


def _cassandra_tables(session: Any, keyspace: str, prefix: str) -> Tables:
    return {
        name: sorted(
            tuple(row) for row in session.execute(f"SELECT * FROM {keyspace}.{prefix}{name}")
        )
        for name in TABLE_NAMES
    }


def _cassandra_committed(session: Any, keyspace: str) -> int | None:
    from cassandra import InvalidRequest
    from cassandra.cluster import NoHostAvailable

    try:
        rows = list(session.execute(f"SELECT sequence FROM {keyspace}.ledger_range"))
    except (InvalidRequest, NoHostAvailable):  # the loader is still creating its tables
        return None
    found = [row.sequence for row in rows if row.sequence is not None]
    return max(found) if found else None


def test_a_cassandra_load_killed_at_random_ledgers_stores_what_an_uninterrupted_one_does(
    vectors_dir: Path,
    tmp_path: Path,
    cassandra_address: tuple[str, int],
    cassandra_keyspace: str,
) -> None:
    from cassandra.cluster import Cluster

    seed = 11
    dump = tmp_path / "ledgers.jsonl"
    last = generate_dump(vectors_dir, dump, seed=seed, ledgers=20, txs=30)
    host, port = cassandra_address
    cassandra = {"hosts": [host], "port": port, "keyspace": cassandra_keyspace}
    clean = make_backend(
        {"type": "cassandra", "cassandra": {**cassandra, "table_prefix": "clean_"}}
    )
    try:
        assert LedgerEtl(clean, FileLedgerSource(dump)).run().last_committed == last
    finally:
        clean.close()

    cluster = Cluster([host], port=port, protocol_version=5)
    session = cluster.connect()
    try:
        rng = random.Random(seed)
        targets = kill_points(rng, FIRST + 1, last - 3, 3)
        growing = GrowingDump(dump, tmp_path / "growing.jsonl")
        command = loader_command(
            growing.path,
            "--backend", "cassandra", "--cassandra-hosts", f"{host}:{port}",
            "--keyspace", cassandra_keyspace,
        )  # fmt: skip
        killed = load_with_kills(
            growing,
            command,
            lambda: _cassandra_committed(session, cassandra_keyspace),
            targets,
            rng,
            pause=0.2,
            timeout=300,
        )
        found = differences(
            _cassandra_tables(session, cassandra_keyspace, "clean_"),
            _cassandra_tables(session, cassandra_keyspace, ""),
        )
        assert found == {}, f"killed after ledgers {killed}"
    finally:
        cluster.shutdown()
