"""Ledger ETL write throughput into Cassandra against a bare concurrent-insert loop.

Runs against the Cassandra node of the local stack (``CHAINLOOM_CASSANDRA_HOSTS`` /
``CHAINLOOM_CASSANDRA_PORT`` from ``chainloom stack env``).

1. The workload generator makes N mainnet-shaped ledgers after ledger 38129's real state
   (~100 transactions and ~300 object changes each by default); not timed.
2. ETL: ``LedgerEtl`` loads them from a dump file into a fresh keyspace through
   ``CassandraBackend`` (parsing, checks, successor rows, account_tx, NFT rows, the
   ``ledger_range`` LWT per ledger). The initial state of 38129 is loaded before the timer.
3. Ceiling: exactly the statements the backend sent for those ledgers (recorded by running the
   same ETL against a recording backend), replayed into another fresh keyspace with
   ``execute_concurrent`` at the backend's concurrency, plus the same LWT per ledger.
4. The same ledgers through the ETL into SQLite (the embedded backend), for the README.

Printed: ledgers/s (and rows/s) for each, and ETL / ceiling.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIRST = 38129


def _generate(path: Path, ledgers: int, txs: int, seed: int, vectors: Path) -> tuple[int, int]:
    from chainloom.ledger.generate import WorkloadGenerator, vectors_ledger
    from chainloom.ledger.sources.dump import DumpWriter

    initial = vectors_ledger(vectors, FIRST)
    generator = WorkloadGenerator(initial, seed=seed, txs_per_ledger=txs)
    transactions = changes = 0
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)
            transactions += len(ledger.transactions)
            changes += len(ledger.objects)
    return transactions, changes


def _cassandra_config(hosts: list[str], port: int, keyspace: str) -> Any:
    from chainloom.ledger.config import BackendConfig, CassandraConfig

    return BackendConfig(
        type="cassandra",
        cassandra=CassandraConfig(
            hosts=tuple(hosts), port=port, keyspace=keyspace, replication_factor=1
        ),
    )


def _recorded_statements(config: Any, dump: Path) -> list[list[tuple[str, tuple[Any, ...]]]]:
    """Per ledger after the first, the (statement, values) the Cassandra backend would send."""
    from chainloom.ledger.cassandra import CassandraBackend
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.sources.file import FileLedgerSource

    class Recording(CassandraBackend):
        def __init__(self, settings: Any) -> None:
            super().__init__(settings)
            self.ledgers: list[list[tuple[str, tuple[Any, ...]]]] = [[]]

        def _write(self, name: str, *values: Any) -> None:
            self.ledgers[-1].append((name, values))

        def _do_finish_writes(self, sequence: int) -> bool:
            self.ledgers.append([])
            return True

    recorder = Recording(config.cassandra)
    try:
        LedgerEtl(recorder, FileLedgerSource(dump)).run()
    finally:
        recorder.close()
    return recorder.ledgers[1:-1]  # drop the initial load and the empty tail


def _etl(config: Any, dump: Path) -> tuple[float, int]:
    from chainloom.ledger.backend import make_backend
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.sources.file import FileLedgerSource

    backend = make_backend(config)
    try:
        LedgerEtl(backend, FileLedgerSource(dump)).run(stop=FIRST)
        started = time.perf_counter()
        summary = LedgerEtl(backend, FileLedgerSource(dump)).run()
        return time.perf_counter() - started, summary.ledgers
    finally:
        backend.close()


def main() -> None:
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=50, help="ledgers after 38129")
    parser.add_argument("--txs-per-ledger", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", default=os.environ.get("CHAINLOOM_CASSANDRA_HOSTS", "127.0.0.1"))
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("CHAINLOOM_CASSANDRA_PORT", "9042"))
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(os.environ.get("CHAINLOOM_VECTORS", REPO.parent / "shared" / "vectors")),
    )
    options = parser.parse_args()
    sys.path.insert(0, str(REPO / "services"))
    from cassandra.cluster import Cluster

    from chainloom.ledger.config import BackendConfig, SqliteConfig

    vectors = options.vectors
    vectors_file = vectors / "xrpl_vectors.json" if vectors.is_dir() else vectors
    hosts = options.hosts.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        dump = Path(scratch) / "bench.jsonl"
        transactions, changes = _generate(
            dump, options.ledgers, options.txs_per_ledger, options.seed, vectors_file
        )
        n = options.ledgers
        print(
            f"workload: {n} ledgers after {FIRST}, {transactions / n:.0f} transactions and "
            f"{changes / n:.0f} object changes per ledger"
        )
        keyspaces = [f"bench_ledger_{uuid.uuid4().hex[:10]}" for _ in range(3)]
        try:
            etl_config = _cassandra_config(hosts, options.port, keyspaces[0])
            etl_seconds, loaded = _etl(etl_config, dump)
            assert loaded == n, f"the ETL loaded {loaded} of {n} ledgers"
            recording = _cassandra_config(hosts, options.port, keyspaces[1])
            ceiling_config = _cassandra_config(hosts, options.port, keyspaces[2])
            concurrency = ceiling_config.cassandra.max_concurrent_writes
            # Record the statements in keyspace 1, then replay them into keyspace 2.
            ceiling_seconds, rows = _ceiling_with(recording, ceiling_config, dump, concurrency)
        finally:
            cluster = Cluster(hosts, port=options.port, protocol_version=5)
            session = cluster.connect()
            for keyspace in keyspaces:
                session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
            cluster.shutdown()
        sqlite_config = BackendConfig(
            type="sqlite", sqlite=SqliteConfig(path=str(Path(scratch) / "bench.sqlite3"))
        )
        sqlite_seconds, _ = _etl(sqlite_config, dump)
    etl_rate = n / etl_seconds
    ceiling_rate = n / ceiling_seconds
    print(
        f"cassandra ETL:     {etl_rate:8.1f} ledgers/s  ({rows / etl_seconds:9.0f} rows/s, "
        f"{etl_seconds:.2f} s)"
    )
    print(
        f"cassandra ceiling: {ceiling_rate:8.1f} ledgers/s  ({rows / ceiling_seconds:9.0f} rows/s, "
        f"{ceiling_seconds:.2f} s; execute_concurrent, concurrency {concurrency}, same statements)"
    )
    print(f"ratio ETL/ceiling: {etl_rate / ceiling_rate:.0%} (goal >= 70%)")
    print(f"sqlite ETL:        {n / sqlite_seconds:8.1f} ledgers/s  ({sqlite_seconds:.2f} s)")


def _ceiling_with(recording: Any, target: Any, dump: Path, concurrency: int) -> tuple[float, int]:
    from cassandra.concurrent import execute_concurrent

    from chainloom.ledger.backend import make_backend
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.sources.file import FileLedgerSource

    ledgers = _recorded_statements(recording, dump)
    backend: Any = make_backend(target)
    try:
        LedgerEtl(backend, FileLedgerSource(dump)).run(stop=FIRST)  # the initial state, untimed
        session, statements = backend._session, backend._statements
        rows = 0
        started = time.perf_counter()
        for offset, ledger in enumerate(ledgers, start=1):
            work = [(statements[name], values) for name, values in ledger]
            rows += len(work)
            execute_concurrent(session, work, concurrency=concurrency, raise_on_first_error=True)
            sequence = FIRST + offset
            result = session.execute(statements["update_range"], (sequence, True, sequence - 1))
            assert result.was_applied, f"ceiling: LWT for ledger {sequence} not applied"
        return time.perf_counter() - started, rows
    finally:
        backend.close()


if __name__ == "__main__":
    main()
