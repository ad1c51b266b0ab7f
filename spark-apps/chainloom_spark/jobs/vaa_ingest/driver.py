"""vaa-ingest's driver: the checks before Spark starts, the input read, the two passes, the
summary.

Every copy of a message goes to one partition (two tasks merging signatures into one row at
once could each write a summary computed from what it alone had read), and token attestations
are written in a pass before everything else, so the result does not depend on which partition
ran first and a rerun writes nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from functools import partial
from typing import TYPE_CHECKING

import orjson

from chainloom.eventstore.bigtable import ensure_schema
from chainloom.eventstore.service import EMULATOR_ENV
from chainloom.eventstore.writer import WriterConfig
from chainloom.settings import BigtableSettings
from chainloom_spark.arguments import load_guardian_sets
from chainloom_spark.dead_letter import write_dead_letter
from chainloom_spark.errors import JobInputError, SinkUnavailableError
from chainloom_spark.jobs.vaa_ingest.arguments import JOB, IngestPlan, resolve
from chainloom_spark.jobs.vaa_ingest.tasks import (
    ASSETS,
    INPUT_COLUMNS,
    KEYED_DDL,
    REST,
    RESULT_DDL,
    PartitionContext,
    ingest_batches,
    key_batches,
)
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job, stage
from chainloom_spark.session import job_session
from chainloom_spark.summary import MAX_PRINTED, JobSummary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

_log = logging.getLogger("chainloom_spark")


def check_store(location: BigtableSettings, timeout: float = 5.0) -> None:
    """Create the tables if missing (idempotent); an unreachable store is exit 4.

    On the emulator a TCP connect is tried first: the client would otherwise retry for its
    whole deadline before saying the server is not there.
    """
    host = os.environ.get(EMULATOR_ENV)
    if host:
        name, _, port = host.rpartition(":")
        try:
            with socket.create_connection((name or "localhost", int(port)), timeout=timeout):
                pass
        except (OSError, ValueError) as error:
            raise SinkUnavailableError(
                f"Bigtable emulator {EMULATOR_ENV}={host} unreachable: {error}"
            ) from None
    from google.api_core.exceptions import GoogleAPIError

    try:
        report = ensure_schema(location)
    except GoogleAPIError as error:
        raise SinkUnavailableError(
            f"Bigtable unreachable: {type(error).__name__}: {error}"
        ) from None
    for table in report.created_tables:
        _log.info("%s: created table %s", JOB, table)
    for drift in report.drift:
        _log.warning("%s: schema drift in %s family %s: %s", JOB, drift.table, drift.family,
                     drift.problem)  # fmt: skip


# ----------------------------------------------------------------------------- the driver


def read_input(spark: SparkSession, plan: IngestPlan) -> DataFrame:
    """The input as rows of (location, text, data, tx_id)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    try:
        if plan.format == "parquet":
            frame = spark.read.parquet(plan.input)
            fields = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
            if "vaa" not in fields:
                raise JobInputError(f"--input {plan.input}: Parquet without a 'vaa' column")
            binary = fields["vaa"] == "binary"
            return frame.select(
                F.col("_metadata.file_path").alias("location"),
                (F.lit(None).cast("string") if binary else F.col("vaa").cast("string")).alias(
                    "text"
                ),
                (F.col("vaa") if binary else F.lit(None).cast("binary")).alias("data"),
            )
        frame = spark.read.text(plan.input)
        return frame.select(
            F.col("_metadata.file_path").alias("location"),
            F.col("value").alias("text"),
            F.lit(None).cast("binary").alias("data"),
        ).where(F.length(F.trim(F.col("text"))) > 0)
    except AnalysisException as error:
        raise JobInputError(f"--input {plan.input}: {str(error).splitlines()[0]}") from None


def key_input(frame: DataFrame, partitions: int) -> DataFrame:
    """The input with each record's row key and attestation flag (:func:`key_batches`, in
    Arrow batches), in ``partitions`` partitions by the key, hashed in the JVM.

    Every copy of a message goes to one partition, so its copies are merged in one task: two
    tasks merging signatures into the same row at once could each write a summary computed
    from what it alone had read.
    """
    return frame.mapInArrow(key_batches, KEYED_DDL).repartition(partitions, "key")


def run(plan: IngestPlan) -> JobSummary:
    """Run the job as resolved by :func:`resolve`; the summary (also written, if asked)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    sets = load_guardian_sets(plan.guardian_set_source)
    check_store(plan.location)
    settings = plan.settings
    started = time.monotonic()
    with job_session(settings.spark, JOB) as spark:
        context = spark.sparkContext
        with stage("read", **{"chainloom.format": plan.format}):
            frame = read_input(spark, plan)
        keyed = key_input(frame, plan.partitions or context.defaultParallelism)
        keyed.persist(StorageLevel.MEMORY_AND_DISK)  # read (and shuffled) once for both passes
        counters = ProgressCounters.create(context)
        task_context = PartitionContext(
            location=plan.location,
            emulator_host=os.environ.get(EMULATOR_ENV),
            guardian_sets=context.broadcast(sets),
            writer=WriterConfig(
                flush_rows=settings.writer.flush_rows,
                conditional_workers=settings.writer.conditional_workers,
                max_attempts=settings.writer.max_attempts,
            ),
            progress=counters,
        )
        _log.info("%s: reading %s (%s) into %s", JOB, plan.input, plan.format,
                  plan.location.table)  # fmt: skip
        # Attestations are written before the transfers that need their symbol and decimals,
        # so enrichment never depends on which partition ran first, and a rerun writes nothing.
        reports: list[Row] = []
        passes: list[DataFrame] = []
        with Progress(JOB, counters, settings.progress_interval):
            for phase in (ASSETS, REST):
                attestation = F.col("attestation")
                results = (
                    keyed.where(attestation if phase == ASSETS else ~attestation)
                    .select(*INPUT_COLUMNS)
                    .mapInArrow(partial(ingest_batches, task_context, phase), RESULT_DDL)
                )
                results.persist(StorageLevel.MEMORY_AND_DISK)
                try:  # the executors decode, verify and write this phase's rows
                    with stage("verify_write", **{"chainloom.phase": str(phase)}):
                        reports += results.where(F.col("kind") != "refused").collect()
                except Exception as error:
                    _reraise_input_error(error, plan.input)
                    raise
                passes.append(results)
        refused = passes[0].unionByName(passes[1]).where(F.col("kind") == "refused")
        summary = JobSummary(JOB)
        summary.merge_counts(
            (row.chain, orjson.loads(row.counts)) for row in reports if row.kind == "counts"
        )
        summary.conflicts = [(r.message_id, r.digest) for r in reports if r.kind == "conflict"]
        if summary.total.refused:
            summary.refusals = [(r.location, r.rule, r.reason) for r in refused.take(MAX_PRINTED)]
            if plan.dead_letter:
                write_dead_letter(refused.withColumn("job", F.lit(JOB)), plan.dead_letter)
        for results in passes:
            results.unpersist()
        keyed.unpersist()
    elapsed = time.monotonic() - started
    summary.details = {
        "input": plan.input,
        "table": plan.location.table,
        "index_table": plan.location.index_table,
        "guardian_sets": plan.guardian_set_source,
        "dead_letter": plan.dead_letter,
        "seconds": round(elapsed, 3),
        "records_per_second": round(summary.read / elapsed, 1) if elapsed else None,
    }
    if summary.total.refused and not plan.dead_letter:
        _log.warning("%s: %d inputs refused and no --dead-letter given: only the first %d "
                     "are in the summary", JOB, summary.total.refused, MAX_PRINTED)  # fmt: skip
    return summary


def _reraise_input_error(error: Exception, path: str) -> None:
    """A file that vanished or cannot be read while tasks run is bad input (exit 2)."""
    text = str(error)
    for mark in ("FileNotFoundException", "PATH_NOT_FOUND", "AccessDeniedException"):
        if mark in text and "[sink unavailable]" not in text:
            raise JobInputError(f"--input {path}: {mark}") from None


def main(argv: list[str] | None = None) -> int:
    """Run vaa-ingest with ``argv`` (flags of :func:`parser`); the exit code."""
    return run_table_job(argv, resolve, run, JOB)
