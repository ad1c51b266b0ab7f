"""Spark ledger-load against the sequential ETL: ledgers/s into Cassandra on the same dump.

Runs against the Cassandra node of the local stack (``CHAINLOOM_CASSANDRA_HOSTS`` /
``CHAINLOOM_CASSANDRA_PORT`` from ``chainloom stack env``).

1. The workload generator makes N ledgers after ledger 38129's real state (``chainloom ledger
   generate``); not timed.
2. ETL: ``LedgerEtl`` loads the dump into a fresh keyspace, timed from start to the commit of
   the last ledger.
3. Job: a ``local[N]`` SparkSession is started (timed apart: JVM and session start-up), then
   ``LedgerLoad`` loads the same dump into another fresh keyspace, timed the same way; the
   first batch includes starting the Python workers (reported as seconds to the first
   committed batch).
ETL and job alternate for ``--rounds`` rounds and the best of each counts, so a busy shared
machine penalises neither side more. Printed: ledgers/s of each and job / ETL.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIRST = 38129


def _generate(path: Path, ledgers: int, txs: int, seed: int, vectors: Path) -> None:
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom.testing.ledger_generator import WorkloadGenerator, vectors_ledger

    initial = vectors_ledger(vectors, FIRST)
    generator = WorkloadGenerator(initial, seed=seed, txs_per_ledger=txs)
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)


def _settings(hosts: str, port: int, keyspace: str) -> Any:
    from chainloom.ledger.config import LedgerSettings
    from chainloom.settings import load_settings

    return load_settings(
        LedgerSettings,
        flags={
            "database.type": "cassandra",
            "database.cassandra.hosts": hosts.split(","),
            "database.cassandra.port": port,
            "database.cassandra.keyspace": keyspace,
            "database.cassandra.replication_factor": 1,
        },
    )


def _etl(dump: Path, settings: Any) -> float:
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.service import open_backend
    from chainloom.ledger.sources.file import FileLedgerSource

    backend = open_backend(settings)
    try:
        started = time.monotonic()
        summary = LedgerEtl(backend, FileLedgerSource(dump)).run()
        seconds = time.monotonic() - started
    finally:
        backend.close()
    return summary.ledgers / seconds


def _job(spark: Any, dump: Path, settings: Any, partitions: int, batch: int) -> tuple[float, float]:
    from chainloom_spark.jobs.ledger_load import LedgerLoad, LoadOptions

    load = LedgerLoad(spark, LoadOptions(dump, settings, partitions=partitions, batch=batch))
    try:
        started = time.monotonic()
        summary = load.run()
        seconds = time.monotonic() - started
    finally:
        load.close()
    return summary.ledgers / seconds, summary.batches[0] if summary.batches else 0.0


def main() -> None:
    """Run the comparison and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=200, help="ledgers after 38129")
    parser.add_argument("--txs-per-ledger", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs; best counts")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--hosts", default=os.environ.get("CHAINLOOM_CASSANDRA_HOSTS", "127.0.0.1"))
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("CHAINLOOM_CASSANDRA_PORT", "9042"))
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(os.environ.get("CHAINLOOM_VECTORS", REPO.parent / "shared" / "vectors")),
    )
    args = parser.parse_args()
    from cassandra.cluster import Cluster
    from pyspark.sql import SparkSession

    with tempfile.TemporaryDirectory() as scratch:
        dump = Path(scratch) / "ledgers.jsonl"
        vectors = args.vectors / "xrpl_vectors.json" if args.vectors.is_dir() else args.vectors
        _generate(dump, args.ledgers, args.txs_per_ledger, args.seed, vectors)
        started = time.monotonic()
        spark = (
            SparkSession.builder.master(args.master)
            .appName("bench-ledger-load")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        session_start = time.monotonic() - started
        cluster = Cluster(args.hosts.split(","), port=args.port, protocol_version=5)
        session = cluster.connect()
        etl_rates: list[float] = []
        job_rates: list[float] = []
        first_batches: list[float] = []
        try:
            for _ in range(args.rounds):
                for kind in ("etl", "job"):
                    keyspace = f"bench_{uuid.uuid4().hex[:10]}"
                    settings = _settings(args.hosts, args.port, keyspace)
                    try:
                        if kind == "etl":
                            etl_rates.append(_etl(dump, settings))
                        else:
                            rate, first = _job(spark, dump, settings, args.partitions, args.batch)
                            job_rates.append(rate)
                            first_batches.append(first)
                    finally:
                        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        finally:
            cluster.shutdown()
            spark.stop()
    etl, job = max(etl_rates), max(job_rates)
    print(f"ledgers: {args.ledgers} x {args.txs_per_ledger} txs, rounds: {args.rounds}")
    print(f"spark session start-up ({args.master}): {session_start:.1f} s")
    print(f"first batch (includes Python worker start-up): {min(first_batches):.1f} s")
    print(
        f"sequential ETL : {etl:8.1f} ledgers/s  (runs: {', '.join(f'{r:.1f}' for r in etl_rates)})"
    )
    print(
        f"ledger-load job: {job:8.1f} ledgers/s  (runs: {', '.join(f'{r:.1f}' for r in job_rates)})"
    )
    print(f"job / ETL: {job / etl:.2f}x")


if __name__ == "__main__":
    sys.path[:0] = [str(REPO / "services"), str(REPO / "spark-apps")]
    main()
