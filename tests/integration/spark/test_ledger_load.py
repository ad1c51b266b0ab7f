"""The Spark ledger-load job against the sequential ETL, on SQLite and the real Cassandra: the
same dump gives the same rows in every table (successor list included), a job killed with
SIGKILL never exposes a partial ledger and a rerun completes it, a dump with a gap exits 2."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom_spark.jobs.ledger_load import JOB, main
from tests.integration.spark.job_process import log_tail, progress_lines, spark_job
from tests.ledger_support import FIRST, Tables, differences, generate_dump

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LEDGERS = 30
TXS = 20


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 generated ledgers of 20 transactions after ledger ``FIRST``'s real state."""
    path = tmp_path_factory.mktemp("dump") / "ledgers.jsonl"
    generate_dump(vectors_dir, path, seed=7, ledgers=LEDGERS, txs=TXS)
    return path


@pytest.fixture(scope="module")
def etl_sqlite(dump: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sequential ETL's SQLite load of ``dump`` (the reference)."""
    path = tmp_path_factory.mktemp("etl") / "etl.db"
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(path)}})
    try:
        summary = LedgerEtl(backend, FileLedgerSource(dump)).run()
    finally:
        backend.close()
    assert summary.last_committed == FIRST + LEDGERS
    return path


def _sqlite_tables(path: Path) -> Tables:
    with contextlib.closing(sqlite3.connect(path)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: sorted(db.execute(f'SELECT * FROM "{name}"')) for name in names}


def test_sqlite_the_job_stores_what_the_sequential_etl_stores(
    spark: SparkSession, dump: Path, etl_sqlite: Path, tmp_path: Path
) -> None:
    target = tmp_path / "job.db"
    argv = ["--input", str(dump), "--backend", "sqlite", "--sqlite", str(target)]
    assert main([*argv, "--partitions", "2", "--batch", "8"]) == 0
    expected = _sqlite_tables(etl_sqlite)
    assert len(expected["successor"]) > LEDGERS  # the comparison below covers real rows
    assert differences(expected, _sqlite_tables(target)) == {}
    # A second run finds the range complete and writes nothing new.
    assert main([*argv, "--partitions", "2"]) == 0
    assert differences(expected, _sqlite_tables(target)) == {}


def _cassandra_tables(session: Any, keyspace: str, prefix: str) -> Tables:
    return {
        name: sorted(
            tuple(row) for row in session.execute(f"SELECT * FROM {keyspace}.{prefix}{name}")
        )
        for name in TABLE_NAMES
    }


_CASSANDRA_LEDGER_COLUMNS = {
    "objects": "sequence",
    "transactions": "ledger_sequence",
    "ledger_transactions": "ledger_sequence",
    "successor": "seq",
    "diff": "seq",
    "account_tx": "seq_idx",
    "ledgers": "sequence",
    "nf_tokens": "sequence",
    "nf_token_transactions": "seq_idx",
}
"""Cassandra tables whose rows name the ledger that wrote them (``seq_idx``: its first item)."""


def _cassandra_rows_through(session: Any, keyspace: str, prefix: str, through: int) -> Tables:
    """The rows of every per-ledger table written by ledgers up to ``through``."""
    found: Tables = {}
    for name, column in _CASSANDRA_LEDGER_COLUMNS.items():
        rows = []
        for row in session.execute(f"SELECT * FROM {keyspace}.{prefix}{name}"):
            value = getattr(row, column)
            if (value[0] if isinstance(value, tuple) else value) <= through:
                rows.append(tuple(row))
        found[name] = sorted(rows)
    return found


def _cassandra_committed(session: Any, keyspace: str) -> int | None:
    from cassandra import InvalidRequest
    from cassandra.cluster import NoHostAvailable

    try:
        rows = list(session.execute(f"SELECT sequence FROM {keyspace}.ledger_range"))
    except (InvalidRequest, NoHostAvailable):
        # The job is still creating its tables: the table is unknown, or known to the schema
        # but not yet to the node's storage ("Unknown CF").
        return None
    found = [row.sequence for row in rows if row.sequence is not None]
    return max(found) if found else None


def test_cassandra_a_killed_job_rerun_stores_what_the_sequential_etl_stores(
    spark: SparkSession,
    dump: Path,
    cassandra_address: tuple[str, int],
    cassandra_keyspace: str,
    tmp_path: Path,
) -> None:
    """The job's driver is killed (SIGKILL) mid-load: every committed ledger is whole at each
    look; a rerun completes the load, and every table equals the sequential ETL's."""
    from cassandra.cluster import Cluster

    host, port = cassandra_address
    reference = make_backend(
        {
            "type": "cassandra",
            "cassandra": {
                "hosts": [host], "port": port, "keyspace": cassandra_keyspace,
                "table_prefix": "etl_",
            },
        }
    )  # fmt: skip
    try:
        assert LedgerEtl(reference, FileLedgerSource(dump)).run().last_committed == FIRST + LEDGERS
    finally:
        reference.close()
    argv = [
        "--input", str(dump), "--backend", "cassandra", "--cassandra-hosts", f"{host}:{port}",
        "--keyspace", cassandra_keyspace, "--partitions", "2",
    ]  # fmt: skip
    kill_after = FIRST + 8
    cluster = Cluster([host], port=port, protocol_version=5)
    try:
        session = cluster.connect()
        checked: list[int] = []
        log = tmp_path / "killed.log"
        with spark_job("ledger-load", [*argv, "--master", "local[2]", "--batch", "4"], log) as job:
            deadline = time.monotonic() + 300
            while not checked or checked[-1] < kill_after or not progress_lines(log, JOB):
                assert job.poll() is None, log_tail(log)
                assert time.monotonic() < deadline, f"the job did not reach ledger {kill_after}"
                committed = _cassandra_committed(session, cassandra_keyspace)
                if committed is not None and (not checked or committed > checked[-1]):
                    # Rows of later ledgers may be there (unseen); those up to it are whole.
                    ours = _cassandra_rows_through(session, cassandra_keyspace, "", committed)
                    theirs = _cassandra_rows_through(session, cassandra_keyspace, "etl_", committed)
                    assert differences(theirs, ours) == {}, f"ledger range {committed}"
                    checked.append(committed)
                time.sleep(0.05)
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        committed = _cassandra_committed(session, cassandra_keyspace)
        assert committed is not None
        assert committed < FIRST + LEDGERS, "the kill landed after the load finished"

        assert main([*argv, "--batch", "16"]) == 0
        expected = _cassandra_tables(session, cassandra_keyspace, "etl_")
        assert len(expected["successor"]) > LEDGERS
        assert differences(expected, _cassandra_tables(session, cassandra_keyspace, "")) == {}
    finally:
        cluster.shutdown()


# ---------------------------------------------------------------------- a killed driver

_PER_LEDGER_TABLES = {
    "ledgers": "sequence",
    "objects": "sequence",
    "successor": "seq",
    "diff": "seq",
    "ledger_transactions": "ledger_sequence",
    "account_tx": "seq",
    "nf_token_transactions": "seq",
}
"""Tables whose rows name the ledger that wrote them."""


def _visible_rows(db: sqlite3.Connection) -> tuple[int | None, dict[str, int]]:
    """The committed max and, in the same snapshot, each table's rows up to it."""
    db.execute("BEGIN")
    try:
        found = db.execute("SELECT MAX(sequence) FROM ledger_range").fetchone()
        committed: int | None = found[0] if found else None
        counts = {}
        if committed is not None:
            for table, column in _PER_LEDGER_TABLES.items():
                counts[table] = db.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE {column} <= ?", (committed,)
                ).fetchone()[0]
    finally:
        db.execute("COMMIT")
    return committed, counts


def _reference_counts(path: Path, through: int) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {
            table: db.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {column} <= ?", (through,)
            ).fetchone()[0]
            for table, column in _PER_LEDGER_TABLES.items()
        }


def test_a_job_killed_mid_write_never_shows_a_partial_ledger_and_a_rerun_completes_it(
    spark: SparkSession, dump: Path, etl_sqlite: Path, tmp_path: Path
) -> None:
    target = tmp_path / "job.db"
    argv = ["--input", str(dump), "--backend", "sqlite", "--sqlite", str(target)]
    kill_after = FIRST + 8
    seen: list[int] = []
    log = tmp_path / "killed.log"
    argv_killed = [*argv, "--master", "local[2]", "--partitions", "2", "--batch", "4"]
    with spark_job("ledger-load", argv_killed, log) as job:
        deadline = time.monotonic() + 300  # the JVM alone may take minutes on a loaded machine
        while not seen or seen[-1] < kill_after or not progress_lines(log, JOB):
            assert job.poll() is None, log_tail(log)
            assert time.monotonic() < deadline, f"the job did not reach ledger {kill_after}"
            if target.exists():
                with (
                    contextlib.closing(sqlite3.connect(target, timeout=60)) as db,
                    contextlib.suppress(sqlite3.OperationalError),  # no tables yet
                ):
                    committed, counts = _visible_rows(db)
                    if committed is not None:
                        # Every ledger up to the committed one is whole.
                        assert counts == _reference_counts(etl_sqlite, committed)
                        seen.append(committed)
            time.sleep(0.05)
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    with contextlib.closing(sqlite3.connect(target)) as db:
        committed, counts = _visible_rows(db)
    assert committed is not None
    assert kill_after <= committed < FIRST + LEDGERS, "the kill landed after the load finished"
    assert counts == _reference_counts(etl_sqlite, committed)

    assert main([*argv, "--partitions", "2", "--batch", "8"]) == 0
    assert differences(_sqlite_tables(etl_sqlite), _sqlite_tables(target)) == {}


def test_a_dump_with_a_gap_exits_2_after_loading_what_comes_before_it(
    spark: SparkSession, dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = dump.read_bytes().splitlines(keepends=True)
    gapped = tmp_path / "gap.jsonl"
    gapped.write_bytes(b"".join(lines[:12] + lines[13:]))  # ledger FIRST + 12 is missing
    target = tmp_path / "job.db"
    code = main(["--input", str(gapped), "--backend", "sqlite", "--sqlite", str(target)])
    assert code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert any(f"ledger {FIRST + 12} is missing" in line for line in error), error
    with contextlib.closing(sqlite3.connect(target)) as db:
        assert db.execute("SELECT MAX(sequence) FROM ledger_range").fetchone()[0] == FIRST + 11


def test_a_ledger_an_executor_refuses_stops_the_range_before_it(
    spark: SparkSession, dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = dump.read_bytes().splitlines(keepends=True)
    refused = FIRST + 6
    record = json.loads(lines[6])
    assert record["sequence"] == refused
    metadata = record["transactions"][3][1]
    flipped = "0" if metadata[-1] != "0" else "1"
    record["transactions"][3][1] = metadata[:-1] + flipped  # no longer the header's tx tree
    lines[6] = (json.dumps(record) + "\n").encode()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    target = tmp_path / "job.db"
    argv = ["--input", str(broken), "--backend", "sqlite", "--sqlite", str(target)]
    # Batch 1 is ledgers FIRST+1..FIRST+8 in two ranges; the second range fails at its second.
    assert main([*argv, "--partitions", "2", "--batch", "8"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert any(f"ledger {refused}: its transactions hash to" in line for line in error), error
    with contextlib.closing(sqlite3.connect(target)) as db:
        assert db.execute("SELECT MAX(sequence) FROM ledger_range").fetchone()[0] == refused - 1


def test_a_missing_dump_exits_2(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nothing.jsonl"
    assert main(["--input", str(missing), "--sqlite", str(tmp_path / "job.db")]) == 2
