"""The Spark jobs against the code they wrap, in one run: ratios, not absolute speed.

Runs against the Bigtable emulator and the Cassandra node of the local stack
(``eval "$(chainloom-dev stack env)"``). Two comparisons:

1. **vaa-ingest against the bare event-store writer.** ``chainloom-dev vaa generate`` makes the
   inputs (hex lines, the default mix with duplicates and conflicts, dev guardian set 0); every
   timed run gets VAAs generated with its own seed, so no signature cache (the executors' are
   kept for the session's whole life) has seen them. For each width W (``--widths``, default
   1 and 2), in turn for ``--rounds`` rounds, into fresh tables:

   - *writer*: W processes (started once, outside the timer), each handed its share of the
     lines split by message id, decode each line, ``EventWriter.prepare`` (parse, verify),
     ``submit_prepared`` and ``flush``: the writer with the job's flush size and write
     concurrency, as ``bench/eventstore.py`` drives it, verification included. Timed from
     the first process starting to the last one finishing.
   - *job*: ``vaa-ingest`` in this process (``vaa_ingest.run``) on a ``local[W]`` session
     built by the jobs' own builder (``job_session``) and already warm: timed from the call
     to the summary, so reading the file, splitting it, both passes (attestations first) and
     collecting the reports all count.

   Start-up is measured apart and left out of both rates: for Spark, the session's start
   (driver: JVM and SparkContext; the second width's session reuses the JVM) and the
   executors' (Python workers started, chainloom imported, tables opened): the first job on
   the new session over a tiny input (seconds to its first records) minus the same job run
   again. For the writer, starting its processes. Both sides' tables must hold the same event
   and index rows afterwards (checked and printed; the cells may differ where the order of a
   message's copies differs, as the first quorum of a conflicting pair is the one kept).

2. **ledger-load against the sequential ETL.** The workload generator makes ``--ledgers``
   ledgers after ledger 38129's real state (not timed). With the widest session, the ETL
   (``open_backend`` + ``LedgerEtl``, the path of ``chainloom ledger load``) and the job
   (``LedgerLoad``) load the dump into fresh keyspaces, alternating for ``--rounds`` rounds;
   each is timed from start to the commit of the last ledger.

3. **CPU per record, split.** Around each timed job run the bench reads ``/proc`` for this
   process and its descendants (the writer processes left out): the driver (this process),
   the JVM (``java``: in local mode the driver JVM is also the executor) and the Python workers
   (every other descendant, with what reaped workers left in their parent's ``cutime``), each
   as CPU microseconds per record; for the ETL, this process's CPU. The store's CPU (emulator,
   Cassandra) is in neither side's figure.

4. **Projection.** From the widest session's per-executor rate (job rate / width, sharing this
   machine's cores) and the driver's CPU per record (its ceiling: 1 / that CPU), the hours
   mainnet's history (``MAINNET_VAAS``, ``MAINNET_LEDGERS``) would take on ``EXECUTORS``
   executors, and the same with each executor on a core of its own (1 / its JVM and Python CPU
   per record), whichever of executors and driver binds first.

The best of the rounds counts on each side, so a busy shared machine penalises neither more.
Printed: a table of rates and ratios, the CPU split, the start-up times, the projection and the
machine's load average; ``--json PATH`` writes the same figures.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIRST_LEDGER = 38129
TINY = 4
"""Lines of the start-up probe's input."""


# --------------------------------------------------------------------------- inputs


def _generate_vaas(count: int, seed: int) -> list[str]:
    chainloom_dev = str(Path(sys.executable).with_name("chainloom-dev"))
    output = subprocess.run(
        [chainloom_dev, "vaa", "generate", "--count", str(count), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return output.split()


def _generate_ledgers(path: Path, ledgers: int, txs: int, seed: int, vectors: Path) -> None:
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger

    initial = vectors_ledger(vectors, FIRST_LEDGER)
    generator = WorkloadGenerator(initial, seed=seed, txs_per_ledger=txs)
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST_LEDGER)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)


def _shards(lines: list[str], processes: int) -> list[list[str]]:
    """Split by message id, so the copies and conflicts of a message meet one writer."""
    from chainloom.wormhole import decode_vaa_text, parse_vaa

    shards: list[list[str]] = [[] for _ in range(processes)]
    for line in lines:
        key = parse_vaa(decode_vaa_text(line)).row_key.encode()
        shards[zlib.crc32(key) % processes].append(line)
    return shards


# --------------------------------------------------------------------------- CPU


def _spark_cpu() -> dict[str, float]:
    """CPU seconds used so far by this process and its descendants that are not writer
    processes, split by who spent them (``/proc``; Linux):

    - ``driver``: this Python process (the job's driver code, py4j calls);
    - ``jvm``: the ``java`` descendants (the driver JVM, which in local mode is also the
      executor: reading, shuffling, caching, converting rows for Python);
    - ``python``: every other descendant, the Python workers and their daemon. A worker that
      has exited and been reaped is in its parent's ``cutime``/``cstime``, so those count too:
      a worker is either alive (its own fields) or reaped (its parent's), never both.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, tuple[str, float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            head, tail = (entry / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue  # gone meanwhile
        fields = tail.split()
        name = head.split("(", 1)[1]
        parents[int(entry.name)] = int(fields[1])
        own = (int(fields[11]) + int(fields[12])) / ticks
        reaped = (int(fields[13]) + int(fields[14])) / ticks
        used[int(entry.name)] = (name, own, reaped)
    skipped = {child.pid for child in mp.active_children()}
    split = {"driver": time.process_time(), "jvm": 0.0, "python": 0.0}
    stack = [os.getpid()]
    while stack:
        parent = stack.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in skipped:
                name, own, reaped = used[pid]
                if name == "java":
                    split["jvm"] += own
                else:
                    split["python"] += own + reaped
                stack.append(pid)
    return split


def _cpu_since(before: dict[str, float]) -> dict[str, float]:
    now = _spark_cpu()
    return {side: now[side] - before[side] for side in now}


# --------------------------------------------------------------------------- event store


def _location(table: str) -> Any:
    from chainloom.settings import BigtableSettings

    return BigtableSettings(
        project="bench", instance="bench", table=table, index_table=f"{table}-index"
    )


def _fresh_table(tables: list[str]) -> str:
    from chainloom.eventstore.bigtable import ensure_schema

    name = f"bench-spark-{uuid.uuid4().hex[:10]}"
    ensure_schema(_location(name))
    tables.append(name)
    return name


def _contents(table: str) -> tuple[int, int, int, int]:
    """(event rows, event cells, index rows, index cells) stored in ``table``."""
    from google.cloud.bigtable.data import ReadRowsQuery
    from google.cloud.bigtable.data.row_filters import StripValueTransformerFilter

    from chainloom.eventstore.bigtable import BigtableTables

    counts: list[int] = []
    with BigtableTables(_location(table)) as tables:
        for target in (tables.events, tables.index):
            rows = target.read_rows(ReadRowsQuery(row_filter=StripValueTransformerFilter(True)))
            counts += [len(rows), sum(len(row.cells) for row in rows)]
    return counts[0], counts[1], counts[2], counts[3]


def _writer_config() -> Any:
    """The writer settings a vaa-ingest partition gets by default."""
    from chainloom.eventstore.writer import WriterConfig
    from chainloom_spark.settings import WriterSettings

    defaults = WriterSettings()
    return WriterConfig(
        flush_rows=defaults.flush_rows,
        conditional_workers=defaults.conditional_workers,
        max_attempts=defaults.max_attempts,
    )


def _writer_process(work: tuple[str, list[str]]) -> tuple[float, float, float, dict[str, int]]:
    """One writer process: decode, verify and write its lines; (start, end, CPU, outcome)."""
    warnings.simplefilter("ignore")
    from chainloom.eventstore.bigtable import BigtableTables
    from chainloom.eventstore.writer import EventWriter
    from chainloom.wormhole import SignatureCache, all_known_emitters, decode_vaa_text
    from chainloom_spark.arguments import load_guardian_sets

    table, lines = work
    sets, emitters, config = load_guardian_sets("dev"), all_known_emitters(), _writer_config()
    started, cpu = time.time(), time.process_time()
    with BigtableTables(_location(table)) as tables:
        writer = EventWriter(
            tables, sets, emitters=emitters, config=config, signature_cache=SignatureCache()
        )
        for line in lines:
            writer.submit_prepared(writer.prepare(decode_vaa_text(line)))
        writer.flush()
        summary = writer.summary
        writer.close()
    outcome = {
        "new": summary.new,
        "updated": summary.updated,
        "unchanged": summary.unchanged,
        "conflicting": summary.conflicting,
    }
    return started, time.time(), time.process_time() - cpu, outcome


def _writer_run(
    pool: Any, table: str, shards: list[list[str]]
) -> tuple[float, float, dict[str, int]]:
    """(seconds, CPU seconds, outcome) of the writer processes over their shards."""
    results = pool.map(_writer_process, [(table, shard) for shard in shards])
    seconds = max(r[1] for r in results) - min(r[0] for r in results)
    outcome: dict[str, int] = {}
    for _, _, _, counts in results:
        for key, value in counts.items():
            outcome[key] = outcome.get(key, 0) + value
    return seconds, sum(r[2] for r in results), outcome


def _job_run(path: Path, table: str) -> tuple[float, dict[str, float], dict[str, int]]:
    """(seconds, CPU seconds of the driver, the JVM and the Python workers, outcome) of one
    vaa-ingest run."""
    from chainloom_spark.jobs import vaa_ingest

    plan = vaa_ingest.resolve(
        [
            *("--input", str(path), "--table", table, "--index-table", f"{table}-index"),
            *("--project", "bench", "--instance", "bench", "--guardian-set", "dev"),
        ]
    )
    started, cpu = time.perf_counter(), _spark_cpu()
    summary = vaa_ingest.run(plan)
    seconds, split = time.perf_counter() - started, _cpu_since(cpu)
    total = summary.total.as_dict()
    return seconds, split, {k: total[k] for k in ("new", "updated", "unchanged", "conflicting")}


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _writer_imports() -> None:
    """Each writer process imports what it runs before the timer starts."""
    warnings.simplefilter("ignore")
    import chainloom.eventstore.writer  # noqa: F401
    import chainloom_spark.jobs.vaa_ingest  # noqa: F401


def _run_writer_rounds(
    pool: Any,
    width: int,
    inputs: list[list[str]],
    files: list[Path],
    tables: list[str],
    writer_runs: list[dict[str, Any]],
    job_runs: list[dict[str, Any]],
) -> None:
    """Writer and job in turn over each round's input, each into fresh tables."""
    for lines, path in zip(inputs, files, strict=True):
        table = _fresh_table(tables)
        seconds, cpu, outcome = _writer_run(pool, table, _shards(lines, width))
        writer_runs.append({"seconds": seconds, "cpu": cpu, "outcome": outcome, "table": table})
        table = _fresh_table(tables)
        seconds, split, outcome = _job_run(path, table)
        job_runs.append({"seconds": seconds, "cpu": split, "outcome": outcome, "table": table})


def bench_vaa_ingest(
    scratch: Path, width: int, inputs: list[list[str]], tiny: list[str], tables: list[str]
) -> dict[str, Any]:
    """One width: start-up, then writer and job alternating over the rounds' inputs."""
    from chainloom_spark.session import job_session
    from chainloom_spark.settings import SparkSettings

    settings = SparkSettings(master=f"local[{width}]", log_level="ERROR")
    files = [_write_lines(scratch / f"vaas-{i}.txt", lines) for i, lines in enumerate(inputs)]
    tiny_file = _write_lines(scratch / "tiny.txt", tiny)
    writer_runs: list[dict[str, Any]] = []
    job_runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    with job_session(settings, "bench"):
        driver = time.perf_counter() - started
        first_job, _, _ = _job_run(tiny_file, _fresh_table(tables))
        warm_job, _, _ = _job_run(tiny_file, _fresh_table(tables))
        with mp.get_context("spawn").Pool(width, initializer=_writer_imports) as pool:
            _run_writer_rounds(pool, width, inputs, files, tables, writer_runs, job_runs)
    for run in writer_runs + job_runs:
        run["contents"] = _contents(run.pop("table"))
    count = len(inputs[0])
    writer_best = min(r["seconds"] for r in writer_runs)
    job_best = min(r["seconds"] for r in job_runs)
    rows = job_runs[0]["contents"][0]
    return {
        "width": width,
        "vaas": count,
        "event_rows": rows,
        "driver_startup_seconds": driver,
        "first_job_seconds": first_job,
        "executor_startup_seconds": max(first_job - warm_job, 0.0),
        "writer_vaas_per_second": count / writer_best,
        "writer_rows_per_second": rows / writer_best,
        "job_vaas_per_second": count / job_best,
        "job_rows_per_second": rows / job_best,
        "ratio": writer_best / job_best,
        "writer_cpu_us_per_vaa": min(r["cpu"] for r in writer_runs) / count * 1e6,
        "job_cpu_us_per_vaa": _per_record(_least_cpu(job_runs), count),
        "same_rows": all(
            (r["contents"][0], r["contents"][2]) == (w["contents"][0], w["contents"][2])
            for r, w in zip(job_runs, writer_runs, strict=True)  # a round: the same VAAs
        ),
        "writer_runs": writer_runs,
        "job_runs": job_runs,
    }


def _least_cpu(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The CPU split of the run that used the least CPU in all (the least disturbed)."""
    split: dict[str, float] = min((r["cpu"] for r in runs), key=lambda c: sum(c.values()))
    return split


def _per_record(split: dict[str, float], records: int) -> dict[str, float]:
    """CPU microseconds per record, per side, and their total."""
    per = {side: seconds / records * 1e6 for side, seconds in split.items()}
    per["total"] = sum(per.values())
    return per


# --------------------------------------------------------------------------- ledgers


def _ledger_settings(hosts: list[str], port: int, keyspace: str) -> Any:
    from chainloom.ledger.config import LedgerSettings
    from chainloom.settings import load_settings

    return load_settings(
        LedgerSettings,
        flags={
            "database.type": "cassandra",
            "database.cassandra.hosts": hosts,
            "database.cassandra.port": port,
            "database.cassandra.keyspace": keyspace,
            "database.cassandra.replication_factor": 1,
        },
    )


def _etl_run(dump: Path, settings: Any) -> tuple[float, int, float]:
    """(seconds, ledgers, CPU seconds of this process) of one sequential ETL run."""
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.service import open_backend
    from chainloom.ledger.sources.file import FileLedgerSource

    started, cpu = time.perf_counter(), time.process_time()
    backend = open_backend(settings)
    try:
        summary = LedgerEtl(backend, FileLedgerSource(dump)).run()
    finally:
        backend.close()
    return time.perf_counter() - started, summary.ledgers, time.process_time() - cpu


def _ledger_job_run(
    dump: Path, settings: Any, partitions: int, batch: int
) -> tuple[float, int, dict[str, float]]:
    """(seconds, ledgers, CPU split) of one ledger-load run."""
    from pyspark.sql import SparkSession

    from chainloom_spark.jobs.ledger_load import LedgerLoad, LoadOptions

    spark = SparkSession.getActiveSession()
    assert spark is not None
    started, cpu = time.perf_counter(), _spark_cpu()
    load = LedgerLoad(spark, LoadOptions(dump, settings, partitions=partitions, batch=batch))
    try:
        summary = load.run()
    finally:
        load.close()
    return time.perf_counter() - started, summary.ledgers, _cpu_since(cpu)


def bench_ledger_load(dump: Path, options: argparse.Namespace, width: int) -> dict[str, Any]:
    """ETL and job alternating into fresh keyspaces on a ``local[width]`` session."""
    from cassandra.cluster import Cluster

    from chainloom_spark.session import job_session
    from chainloom_spark.settings import SparkSettings

    hosts = options.hosts.split(",")
    partitions = options.ledger_partitions or width
    etl_runs: list[float] = []
    job_runs: list[float] = []
    job_cpu: list[dict[str, Any]] = []
    etl_cpu: list[float] = []
    keyspaces: list[str] = []
    settings = SparkSettings(master=f"local[{width}]", log_level="ERROR")
    try:
        with job_session(settings, "bench") as spark:
            # Start the Python workers and import the job in them before any timer.
            module = "chainloom_spark.jobs.ledger_load"
            spark.sparkContext.parallelize(range(width), width).map(
                lambda _: len(importlib.import_module(module).__name__)
            ).collect()
            for _ in range(options.rounds):
                for side, runs in (("etl", etl_runs), ("job", job_runs)):
                    keyspaces.append(f"bench_spark_{uuid.uuid4().hex[:10]}")
                    target = _ledger_settings(hosts, options.port, keyspaces[-1])
                    if side == "etl":
                        seconds, loaded, cpu_seconds = _etl_run(dump, target)
                        etl_cpu.append(cpu_seconds)
                    else:
                        seconds, loaded, cpu = _ledger_job_run(
                            dump, target, partitions, options.ledger_batch
                        )
                        job_cpu.append({"cpu": cpu})
                    assert loaded == options.ledgers + 1, f"{side} loaded {loaded} ledgers"
                    runs.append(loaded / seconds)
    finally:
        cluster = Cluster(hosts, port=options.port, protocol_version=5)
        session = cluster.connect()
        for keyspace in keyspaces:
            session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        cluster.shutdown()
    return {
        "width": width,
        "ledgers": options.ledgers + 1,
        "txs_per_ledger": options.txs_per_ledger,
        "partitions": partitions,
        "batch": options.ledger_batch,
        "etl_ledgers_per_second": max(etl_runs),
        "job_ledgers_per_second": max(job_runs),
        "ratio": max(job_runs) / max(etl_runs),
        "job_cpu_us_per_ledger": _per_record(_least_cpu(job_cpu), options.ledgers + 1),
        "etl_cpu_us_per_ledger": min(etl_cpu) / (options.ledgers + 1) * 1e6,
        "etl_runs": etl_runs,
        "job_runs": job_runs,
    }


# --------------------------------------------------------------------------- report


def _print_report(result: dict[str, Any]) -> None:
    machine = result["machine"]
    print(
        f"machine: {machine['cores']} cores, load average {machine['load_before']:.1f} before, "
        f"{machine['load_after']:.1f} after; best of {result['rounds']} rounds"
    )
    widths = result["vaa_ingest"]
    if widths:
        first = widths[0]
        print(f"vaa-ingest: {first['vaas']} VAAs per run -> {first['event_rows']} event rows")
        print(
            f"  {'width':>5} {'writer VAA/s':>12} {'job VAA/s':>10} {'writer rows/s':>13} "
            f"{'job rows/s':>10} {'job/writer':>10} {'same rows':>9}"
        )
        for w in widths:
            print(
                f"  {w['width']:>5} {w['writer_vaas_per_second']:>12.0f} "
                f"{w['job_vaas_per_second']:>10.0f} {w['writer_rows_per_second']:>13.0f} "
                f"{w['job_rows_per_second']:>10.0f} {w['ratio']:>10.2f} "
                f"{'yes' if w['same_rows'] else 'NO':>9}"
            )
        if len(widths) > 1:
            low, high = widths[0], widths[-1]
            print(
                f"  scaling local[{low['width']}] -> local[{high['width']}]: job "
                f"{high['job_vaas_per_second'] / low['job_vaas_per_second']:.2f}x, writer "
                f"{high['writer_vaas_per_second'] / low['writer_vaas_per_second']:.2f}x "
                "(goal: job/writer >= 0.95 at each width, the job scaling as well as the writer)"
            )
        for w in widths:
            cpu = w["job_cpu_us_per_vaa"]
            print(
                f"  CPU per VAA, width {w['width']}: writer {w['writer_cpu_us_per_vaa']:.0f} us; "
                f"job {cpu['total']:.0f} us = JVM {cpu['jvm']:.0f} + Python workers "
                f"{cpu['python']:.0f} + driver {cpu['driver']:.0f} (the emulator's in neither)"
            )
        for w in widths:
            print(
                f"  start-up, local[{w['width']}] (not in the rates): driver "
                f"{w['driver_startup_seconds']:.1f} s, executors "
                f"{w['executor_startup_seconds']:.1f} s (first job to its first records: "
                f"{w['first_job_seconds']:.1f} s)"
            )
    ledger = result["ledger_load"]
    if ledger:
        print(
            f"ledger-load: {ledger['ledgers']} ledgers of {ledger['txs_per_ledger']} txs, "
            f"local[{ledger['width']}], {ledger['partitions']} partitions, batches of "
            f"{ledger['batch']}"
        )
        print(
            f"  sequential ETL {ledger['etl_ledgers_per_second']:.1f} ledgers/s, job "
            f"{ledger['job_ledgers_per_second']:.1f} ledgers/s: {ledger['ratio']:.2f}x "
            "(goal >= 1.8x)"
        )
        cpu = ledger["job_cpu_us_per_ledger"]
        print(
            f"  CPU per ledger: ETL {ledger['etl_cpu_us_per_ledger'] / 1000:.1f} ms; job "
            f"{cpu['total'] / 1000:.1f} ms = JVM {cpu['jvm'] / 1000:.1f} + Python workers "
            f"{cpu['python'] / 1000:.1f} + driver {cpu['driver'] / 1000:.1f} (Cassandra's in "
            "neither)"
        )
    for line in _projection_lines(result):
        print(line)


EXECUTORS = 16
"""Executors of the projection."""
MAINNET_VAAS = 10**7
"""Wormhole mainnet's signed VAAs to date, in round figures."""
MAINNET_LEDGERS = 10**8
"""XRPL mainnet's ledgers to date, in round figures."""


def project(
    records: float,
    per_executor: float,
    cpu_us: dict[str, float],
    executors: int = EXECUTORS,
) -> dict[str, float | str]:
    """Hours for ``records`` on ``executors`` executors at ``per_executor`` records/s each
    (as measured, sharing this machine's cores), unless the driver, at ``cpu_us["driver"]`` of
    its own CPU per record, cannot keep up; and the same with each executor on a core of its
    own (its JVM and Python CPU per record as measured)."""
    executors_rate = per_executor * executors
    own_core = 1e6 / (cpu_us["jvm"] + cpu_us["python"]) * executors
    driver_rate = 1e6 / cpu_us["driver"] if cpu_us["driver"] > 0 else float("inf")
    rate = min(executors_rate, driver_rate)
    return {
        "executors_rate": executors_rate,
        "driver_rate": driver_rate,
        "rate": rate,
        "hours": records / rate / 3600,
        "bound": "driver" if driver_rate < executors_rate else "executors",
        "own_core_rate": min(own_core, driver_rate),
        "own_core_hours": records / min(own_core, driver_rate) / 3600,
        "own_core_bound": "driver" if driver_rate < own_core else "executors",
    }


def _projection_lines(result: dict[str, Any]) -> list[str]:
    """The projection of mainnet's history from this run's per-executor rates."""
    lines = [f"projection on {EXECUTORS} executors, from this run's per-executor rates:"]
    if result["vaa_ingest"]:
        widest = result["vaa_ingest"][-1]
        per = widest["job_vaas_per_second"] / widest["width"]
        fit = project(MAINNET_VAAS, per, widest["job_cpu_us_per_vaa"])
        rows = widest["event_rows"] / widest["vaas"]
        result["projection_vaa_ingest"] = fit
        lines.append(
            f"  vaa-ingest, {MAINNET_VAAS:.0e} VAAs at {per:.0f} VAA/s per executor: "
            f"{fit['hours']:.1f} h ({fit['rate']:.0f} VAA/s, bound by the {fit['bound']}; "
            f"driver ceiling {fit['driver_rate']:.0f} VAA/s); with a core per executor "
            f"{fit['own_core_hours']:.2f} h ({fit['own_core_rate']:.0f} VAA/s, bound by the "
            f"{fit['own_core_bound']}), when the store "
            f"takes {fit['own_core_rate'] * rows:.0f} event rows/s plus their index rows, each "
            "a check-and-mutate; the shuffle moves each input line once"
        )
    ledger = result["ledger_load"]
    if ledger:
        per = ledger["job_ledgers_per_second"] / ledger["width"]
        fit = project(MAINNET_LEDGERS, per, ledger["job_cpu_us_per_ledger"])
        result["projection_ledger_load"] = fit
        lines.append(
            f"  ledger-load, {MAINNET_LEDGERS:.0e} ledgers of {ledger['txs_per_ledger']} txs at "
            f"{per:.1f} ledgers/s per executor: {fit['hours']:.0f} h ({fit['rate']:.0f} "
            f"ledgers/s, bound by the {fit['bound']}; driver ceiling {fit['driver_rate']:.0f} "
            "ledgers/s: it reads, checks and ships every ledger in order); with a core per "
            f"executor {fit['own_core_hours']:.0f} h ({fit['own_core_rate']:.0f} ledgers/s, "
            f"bound by the {fit['own_core_bound']})"
        )
    return lines


def main() -> None:
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=6000, help="VAAs per vaa-ingest run")
    parser.add_argument("--widths", default="1,2", help="comma-separated local[N] widths")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs; best counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ledgers", type=int, default=200, help="ledgers after 38129")
    parser.add_argument("--txs-per-ledger", type=int, default=50)
    parser.add_argument(
        "--ledger-partitions", type=int, help="ledger-load partitions (default: the width)"
    )
    parser.add_argument("--ledger-batch", type=int, help="ledgers per Spark job (job default)")
    parser.add_argument("--jobs", default="vaa-ingest,ledger-load", help="which comparisons")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
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
    jobs = set(options.jobs.split(","))
    vectors = options.vectors
    vectors_file = vectors / "xrpl_vectors.json" if vectors.is_dir() else vectors
    if "ledger-load" in jobs and not vectors_file.is_file():
        # Said before the vaa-ingest part, not after it.
        sys.exit(f"no XRPL vectors at {vectors_file}: set CHAINLOOM_VECTORS or --vectors")
    if "vaa-ingest" in jobs and not os.environ.get("BIGTABLE_EMULATOR_HOST"):
        sys.exit('set BIGTABLE_EMULATOR_HOST (eval "$(chainloom-dev stack env)")')
    from chainloom.eventstore.bigtable import drop_tables
    from chainloom_spark.jobs.ledger_load import DEFAULT_BATCH

    if options.ledger_batch is None:
        options.ledger_batch = DEFAULT_BATCH
    widths = [int(w) for w in options.widths.split(",")]
    result: dict[str, Any] = {
        "machine": {"cores": os.cpu_count(), "load_before": os.getloadavg()[0]},
        "rounds": options.rounds,
        "vaa_ingest": [],
        "ledger_load": None,
    }
    tables: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        try:
            if "vaa-ingest" in jobs:
                inputs = [
                    _generate_vaas(options.count, options.seed + 1 + r)
                    for r in range(options.rounds * len(widths))
                ]
                tiny = _generate_vaas(TINY, options.seed)
                for i, width in enumerate(widths):
                    rounds = inputs[i * options.rounds : (i + 1) * options.rounds]
                    directory = Path(scratch) / f"w{width}"
                    directory.mkdir()
                    result["vaa_ingest"].append(
                        bench_vaa_ingest(directory, width, rounds, tiny, tables)
                    )
        finally:
            for table in tables:
                drop_tables(_location(table))
        if "ledger-load" in jobs:
            dump = Path(scratch) / "ledgers.jsonl"
            _generate_ledgers(dump, options.ledgers, options.txs_per_ledger, options.seed,
                              vectors_file)  # fmt: skip
            result["ledger_load"] = bench_ledger_load(dump, options, max(widths))
    result["machine"]["load_after"] = os.getloadavg()[0]
    _print_report(result)
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written: {options.json}")


if __name__ == "__main__":
    sys.path[:0] = [str(REPO / "services"), str(REPO / "spark-apps")]
    main()
