"""Ledger ETL write throughput into Cassandra against a bare concurrent-insert loop.

Runs against the Cassandra node of the local stack (``CHAINLOOM_DATABASE__CASSANDRA__HOSTS`` /
``__PORT`` from ``chainloom-dev stack env``, the ledger settings' own variables).

1. The workload generator makes N mainnet-shaped ledgers after ledger 38129's real state
   (~100 transactions and ~300 object changes each by default); not timed.
2. ETL: ``LedgerEtl`` loads them from a dump file into a fresh keyspace through
   ``CassandraBackend`` (parsing, checks, successor rows, account_tx, NFT rows, the
   ``ledger_range`` LWT per ledger), timed from the commit of the initial state of 38129 to
   the commit of the last ledger.
3. Ceiling: exactly the statements the backend sent for those ledgers (recorded by running the
   same ETL against a recording backend), replayed into another fresh keyspace ledger by
   ledger three ways: ``execute_concurrent``, a window of ``execute_async`` at the backend's
   concurrency, and that window sending UNLOGGED batches of the backend's batch size (as the
   backend does); the fastest counts. Each ledger ends with the same LWT.
   ETL and ceiling alternate for ``--rounds`` rounds and the best of each counts, so a busy
   shared machine penalises neither side more.
4. The same ledgers through the ETL into SQLite (the embedded backend), for the README.

Printed: ledgers/s (and rows/s) for each, and ETL / ceiling.
"""

from __future__ import annotations

import argparse
import json
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
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger

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
    from chainloom.ledger.config import DatabaseSettings
    from chainloom.settings import CassandraSettings

    return DatabaseSettings(
        type="cassandra",
        cassandra=CassandraSettings(
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
    """Seconds from the initial ledger's commit to the last ledger's, and ledgers after it."""
    from chainloom.ledger.etl import LedgerEtl, Progress
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.sources.file import FileLedgerSource

    committed: list[tuple[int, float]] = []

    def mark(progress: Progress) -> None:
        committed.append((progress.sequence, time.perf_counter()))

    backend = make_backend(config)
    try:
        LedgerEtl(backend, FileLedgerSource(dump), on_progress=mark).run()
    finally:
        backend.close()
    assert committed[0][0] == FIRST, "the run did not start with the initial ledger"
    return committed[-1][1] - committed[0][1], len(committed) - 1


def main() -> None:
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=50, help="ledgers after 38129")
    parser.add_argument("--txs-per-ledger", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="alternating runs; best counts")
    stack_hosts = json.loads(os.environ.get("CHAINLOOM_DATABASE__CASSANDRA__HOSTS", "[]"))
    parser.add_argument("--hosts", default=",".join(stack_hosts) or "127.0.0.1")
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("CHAINLOOM_DATABASE__CASSANDRA__PORT", "9042")),
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(os.environ.get("CHAINLOOM_VECTORS", REPO.parent / "shared" / "vectors")),
    )
    options = parser.parse_args()
    sys.path.insert(0, str(REPO / "services"))
    from cassandra.cluster import Cluster

    from chainloom.ledger.config import DatabaseSettings, SqliteSettings

    vectors = options.vectors
    vectors_file = vectors / "xrpl_vectors.json" if vectors.is_dir() else vectors
    hosts = options.hosts.split(",")
    n = options.ledgers
    etl_best = float("inf")
    ceilings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        dump = Path(scratch) / "bench.jsonl"
        transactions, changes = _generate(
            dump, options.ledgers, options.txs_per_ledger, options.seed, vectors_file
        )
        print(
            f"workload: {n} ledgers after {FIRST}, {transactions / n:.0f} transactions and "
            f"{changes / n:.0f} object changes per ledger"
        )
        keyspaces: list[str] = []

        def fresh() -> Any:
            keyspaces.append(f"bench_ledger_{uuid.uuid4().hex[:10]}")
            return _cassandra_config(hosts, options.port, keyspaces[-1])

        try:
            recorded = _recorded_statements(fresh(), dump)
            rows = sum(len(ledger) for ledger in recorded)
            concurrency = fresh().cassandra.max_concurrent_writes
            for _ in range(options.rounds):
                for how in ("execute_concurrent", "execute_async", "unlogged batches"):
                    seconds = _ceiling_with(recorded, fresh(), dump, concurrency, how)
                    ceilings[how] = min(ceilings.get(how, float("inf")), seconds)
                seconds, loaded = _etl(fresh(), dump)
                assert loaded == n, f"the ETL loaded {loaded} of {n} ledgers"
                etl_best = min(etl_best, seconds)
        finally:
            cluster = Cluster(hosts, port=options.port, protocol_version=5)
            session = cluster.connect()
            for keyspace in keyspaces:
                session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
            cluster.shutdown()
        sqlite_config = DatabaseSettings(
            type="sqlite", sqlite=SqliteSettings(path=str(Path(scratch) / "bench.sqlite3"))
        )
        sqlite_seconds, _ = _etl(sqlite_config, dump)
    etl_rate = n / etl_best
    print(
        f"cassandra ETL:     {etl_rate:8.1f} ledgers/s  ({rows / etl_best:9.0f} rows/s, "
        f"{etl_best:.2f} s)"
    )
    per_statement = min(("execute_concurrent", "execute_async"), key=ceilings.__getitem__)
    for label, how in (("per-statement", per_statement), ("batched", "unlogged batches")):
        seconds = ceilings[how]
        print(
            f"ceiling, {label + ':':15s}{n / seconds:8.1f} ledgers/s  ({rows / seconds:9.0f} "
            f"rows/s, {seconds:.2f} s; bare {how}, {concurrency} in flight, same statements "
            "+ the per-ledger LWT)"
        )
        print(f"ratio ETL/ceiling ({label}): {etl_rate / (n / seconds):.0%} (goal >= 70%)")
    print(f"sqlite ETL:        {n / sqlite_seconds:8.1f} ledgers/s  ({sqlite_seconds:.2f} s)")


def _batches(work: list[tuple[Any, tuple[Any, ...]]], batch_size: int) -> list[Any]:
    """UNLOGGED batches of up to ``batch_size`` statements and 24 KiB of values, in order."""
    from cassandra.query import BatchStatement, BatchType

    batches: list[Any] = []
    current: Any = None
    count = size = 0
    for statement, values in work:
        payload = sum(len(v) if isinstance(v, bytes) else 16 for v in values)
        if current is None or count >= batch_size or size + payload > 24 * 1024:
            current = BatchStatement(batch_type=BatchType.UNLOGGED)
            batches.append(current)
            count = size = 0
        current.add(statement, values)
        count += 1
        size += payload
    return batches


def _ceiling_with(
    recorded: list[list[tuple[str, tuple[Any, ...]]]],
    target: Any,
    dump: Path,
    concurrency: int,
    how: str,
) -> float:
    """Seconds to replay the recorded statements ledger by ledger, each ending with the LWT."""
    from collections import deque

    from cassandra.concurrent import execute_concurrent

    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.sources.file import FileLedgerSource

    backend: Any = make_backend(target)
    try:
        LedgerEtl(backend, FileLedgerSource(dump)).run(stop=FIRST)  # the initial state, untimed
        session, statements = backend._session, backend._statements
        batch_size = target.cassandra.write_batch_size
        started = time.perf_counter()
        for offset, ledger in enumerate(recorded, start=1):
            work = [(statements[name], values) for name, values in ledger]
            if how == "execute_concurrent":
                execute_concurrent(
                    session, work, concurrency=concurrency, raise_on_first_error=True
                )
            elif how == "unlogged batches":
                window_b: deque[Any] = deque()
                for batch in _batches(work, batch_size):
                    if len(window_b) >= concurrency:
                        window_b.popleft().result()
                    window_b.append(session.execute_async(batch))
                for future in window_b:
                    future.result()
            else:
                window: deque[Any] = deque()
                for statement, values in work:
                    if len(window) >= concurrency:
                        window.popleft().result()
                    window.append(session.execute_async(statement, values))
                for future in window:
                    future.result()
            sequence = FIRST + offset
            result = session.execute(statements["update_range"], (sequence, True, sequence - 1))
            assert result.was_applied, f"ceiling: LWT for ledger {sequence} not applied"
        return time.perf_counter() - started
    finally:
        backend.close()


if __name__ == "__main__":
    main()
