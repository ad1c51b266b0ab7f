"""gap-backfill's driver: the checks before Spark starts, the find, fetch and write stages, and
the summary with what is still missing."""

from __future__ import annotations

import logging
import os
import time
from functools import partial
from typing import Any

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import (
    StoreUnavailableError,
    TableMissingError,
)
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.service import EMULATOR_ENV
from chainloom.eventstore.writer import WriterConfig
from chainloom.publicrpc import EndpointConfigError, FetchStatus, PublicRpcClient
from chainloom.wormhole.sequences import SequenceRange
from chainloom_spark.arguments import load_guardian_sets
from chainloom_spark.backfill_summary import BackfillSummary
from chainloom_spark.errors import JobArgumentError, JobInputError, SinkUnavailableError
from chainloom_spark.jobs.gap_backfill.arguments import CHUNK, JOB, BackfillPlan, resolve
from chainloom_spark.jobs.gap_backfill.tasks import (
    FETCHED_DDL,
    Gap,
    TaskContext,
    Written,
    as_fetched,
    fetch_partition,
    files_batches,
    find_partition,
    write_partition,
)
from chainloom_spark.jobs.vaa_ingest.driver import check_store
from chainloom_spark.jobs.vaa_ingest.tasks import (
    ASSETS,
    REST,
)
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session

_log = logging.getLogger("chainloom_spark")


# ----------------------------------------------------------------------------- the driver


def list_emitters(plan: BackfillPlan) -> list[tuple[int, str]]:
    """The emitters to check: those named, chains expanded; else every one in the table."""
    found: list[tuple[int, str]] = []
    try:
        with BigtableTables(plan.location) as tables:
            reader = EventReader(tables)
            if not plan.emitters:
                return list(reader.emitters())
            for chain, emitter in plan.emitters:
                found += [(chain, emitter)] if emitter else list(reader.emitters(chain))
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    return list(dict.fromkeys(found))


def check_source(plan: BackfillPlan) -> None:
    """Every public-API endpoint unreachable is exit 4 (a bad endpoint text exit 2)."""
    if plan.files is not None:
        return
    try:
        with PublicRpcClient(plan.public_rpc) as client:
            up = client.check_reachable()
    except EndpointConfigError as error:
        raise JobArgumentError(str(error)) from None
    _log.info("%s: public API endpoints reachable: %s", JOB, ", ".join(up))


def run(plan: BackfillPlan) -> BackfillSummary:
    """Run the job as resolved by :func:`resolve`; the summary."""
    sets = load_guardian_sets(plan.guardian_set_source)
    check_store(plan.location)
    check_source(plan)
    settings = plan.settings
    started = time.monotonic()
    summary = BackfillSummary(JOB)
    emitters = list_emitters(plan)
    _log.info("%s: %d emitters to check in %s", JOB, len(emitters), plan.location.table)
    with job_session(settings.spark, JOB) as spark:
        sc = spark.sparkContext
        counters = ProgressCounters.create(sc)
        context = TaskContext(
            location=plan.location,
            emulator_host=os.environ.get(EMULATOR_ENV),
            guardian_sets=sc.broadcast(sets),
            writer=WriterConfig(
                flush_rows=settings.writer.flush_rows,
                conditional_workers=settings.writer.conditional_workers,
                max_attempts=settings.writer.max_attempts,
            ),
            public_rpc=plan.public_rpc,
            first=plan.first,
            last=plan.last,
            max_missing=plan.max_missing,
            counters=counters,
        )
        with Progress(JOB, counters, settings.progress_interval):
            _find_fetch_write(spark, plan, context, emitters, summary)
    elapsed = time.monotonic() - started
    totals = summary.as_dict()
    _log.info("%s: found %d, written %d, refused %d, still missing %d; %.1f s, %.1f fetched/s",
              JOB, totals["found"], totals["written"], totals["refused"], totals["still_missing"],
              elapsed, totals["missing"] / elapsed if elapsed else 0.0)  # fmt: skip
    summary.details = {
        "source": "files" if plan.files else "public-api",
        "files": plan.files,
        "endpoints": None if plan.files else list(plan.public_rpc.endpoints),
        "table": plan.location.table,
        "index_table": plan.location.index_table,
        "guardian_sets": plan.guardian_set_source,
        "from_seq": plan.first,
        "to_seq": plan.last,
        "seconds": round(elapsed, 3),
    }
    return summary


def _find_fetch_write(spark: Any, plan: BackfillPlan, context: TaskContext,
                      emitters: list[tuple[int, str]],
                      summary: BackfillSummary) -> None:  # fmt: skip
    """The three stages (find, fetch, write) into ``summary``."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    width = plan.partitions or sc.defaultParallelism
    gaps: list[Gap] = []
    if emitters:
        slices = min(width, len(emitters))
        gaps = (
            sc.parallelize(emitters, slices)
            .mapPartitions(partial(find_partition, context))
            .collect()
        )
    missing: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for chain, emitter, stored, lowest, highest, ranges, skipped in gaps:
        report = summary.emitter(chain, emitter)
        report.stored, report.lowest, report.highest = stored, lowest, highest
        report.missing = sum(last - first + 1 for first, last in ranges)
        report.skipped = skipped
        if ranges:
            missing[(chain, emitter)] = ranges
    total = sum(report.missing for report in summary.emitters.values())
    _log.info("%s: %d sequences missing over %d emitters", JOB, total, len(missing))
    if missing:
        fetched = _fetch(spark, plan, context, missing, width)
        fetched.persist(StorageLevel.MEMORY_AND_DISK)
        written: list[Written] = []
        for phase in (ASSETS, REST):
            written += fetched.mapPartitions(partial(write_partition, context, phase)).collect()
        _merge(summary, written)
        if plan.files is None:
            absent = (
                fetched.filter(lambda row: row[3] != FetchStatus.FOUND.value)
                .map(lambda row: (row[0], row[1], row[2], row[3], row[5]))
                .collect()
            )
        else:
            held = set(fetched.map(lambda row: (row[0], row[1], row[2])).collect())
            absent = [
                (chain, emitter, sequence, FetchStatus.NOT_FOUND.value, "not in the files")
                for (chain, emitter), ranges in missing.items()
                for first, last in ranges
                for sequence in range(first, last + 1)
                if (chain, emitter, sequence) not in held
            ]
        fetched.unpersist()
        _report_missing(summary, absent)


def _fetch(spark: Any, plan: BackfillPlan, context: TaskContext,
           missing: dict[tuple[int, str], list[tuple[int, int]]], width: int) -> Any:  # fmt: skip
    """The fetched messages as an RDD of :data:`Fetched` rows."""
    if plan.files is not None:
        from pyspark.errors import AnalysisException

        try:
            lines = spark.read.text(plan.files)
        except AnalysisException as error:
            raise JobInputError(f"--files {plan.files}: {str(error).splitlines()[0]}") from None
        wanted = spark.sparkContext.broadcast(missing)
        found = lines.mapInArrow(partial(files_batches, wanted, context.counters), FETCHED_DDL)
        return found.distinct().rdd.map(as_fetched)  # the found VAAs only: few
    chunks = [
        (chain, emitter, piece.first, piece.last)
        for (chain, emitter), ranges in missing.items()
        for first, last in ranges
        for piece in SequenceRange(first, last).chunks(CHUNK)
    ]
    return spark.sparkContext.parallelize(chunks, min(width, len(chunks))).mapPartitions(
        partial(fetch_partition, context)
    )


def _merge(summary: BackfillSummary, rows: list[Written]) -> None:
    """Add the write tasks' counts, refusals and conflicts to ``summary``."""
    refused: dict[tuple[int, str], list[tuple[int, str, str]]] = {}
    for kind, chain, emitter, a, b, c in rows:
        if kind == "counts":
            report = summary.emitter(chain, emitter)
            for name, value in a.items():
                report.counts[name] += value
        elif kind == "refused":
            refused.setdefault((chain, emitter), []).append((a, "refused", f"{b}: {c}"))
        elif kind == "conflict":
            summary.conflicts.append((a, b))
    for (chain, emitter), items in refused.items():
        summary.add_missing(chain, emitter, items)


def _report_missing(summary: BackfillSummary, absent: list[tuple[int, str, int, str, str]]) -> None:
    """Record the (chain, emitter, sequence, status, reason) rows no source had."""
    by_emitter: dict[tuple[int, str], list[tuple[int, str, str]]] = {}
    for chain, emitter, sequence, status, reason in absent:
        by_emitter.setdefault((chain, emitter), []).append((sequence, status, reason))
    for (chain, emitter), items in by_emitter.items():
        summary.add_missing(chain, emitter, items)


def main(argv: list[str] | None = None) -> int:
    """Run gap-backfill with ``argv`` (flags of :func:`parser`); the exit code."""
    return run_table_job(argv, resolve, run, JOB)
