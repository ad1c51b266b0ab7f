"""export's driver: the scan in key ranges, both datasets written with dynamic partition
overwrite, and the counts."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from chainloom_spark.counts import ChainCounters
from chainloom_spark.errors import JobOutputError
from chainloom_spark.jobs.export.arguments import JOB, ExportPlan, resolve
from chainloom_spark.jobs.export.reconcile import MAX_REPORTED, differences, read_rollups
from chainloom_spark.jobs.export.tasks import (
    DAILY_COLUMNS,
    EVENT_COLUMNS,
    SCAN_FAMILIES,
    ddl,
    row_or_skip,
)
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session
from chainloom_spark.table_scan import plan_ranges, require_tables, scan_context, table_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


COUNTERS = ("messages", "transfers", "days", "skipped")
"""Per chain: rows exported; token transfers among them; UTC days (partitions) written; rows
left out because they have no publication (no timestamp to place them by)."""


_log = logging.getLogger("chainloom_spark")


def daily(events: DataFrame) -> DataFrame:
    """The daily aggregate (:data:`DAILY_COLUMNS`) of the events dataset."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    kinds = F.col("payload_kind").isin("token_transfer", "token_transfer_with_payload")
    transfer = F.coalesce(kinds, F.lit(False))  # a null kind is not a transfer
    grouped = events.select(
        "day",
        F.col("emitter_chain").alias("source_chain"),
        F.when(transfer, F.col("target_chain")).alias("target_chain"),
        F.when(transfer, F.col("token_chain")).alias("token_chain"),
        F.when(transfer, F.col("token_address")).alias("token_address"),
        F.when(transfer, F.col("symbol")).alias("symbol"),
        transfer.cast("int").alias("is_transfer"),
        (transfer & F.col("notional_usd").isNotNull()).cast("int").alias("is_priced"),
        F.when(transfer, F.col("notional_usd")).alias("notional_usd"),
    ).groupBy("day", "source_chain", "target_chain", "token_chain", "token_address")
    frame = grouped.agg(
        F.max("symbol").alias("symbol"),
        F.count(F.lit(1)).alias("messages"),
        F.sum("is_transfer").cast("bigint").alias("transfers"),
        F.sum("is_priced").cast("bigint").alias("priced_transfers"),
        F.coalesce(F.sum("notional_usd"), F.lit(0)).cast("decimal(38,6)").alias("volume_usd"),
    )
    return frame.select(*(name for name, _, _ in DAILY_COLUMNS))


def _write(frame: DataFrame, path: str, partitions: list[str]) -> None:
    """Write ``frame`` as Parquet under ``path``, replacing the partitions it produces."""
    try:
        (
            frame.write.mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .partitionBy(*partitions)
            .parquet(path)
        )
    except Exception as error:
        text = str(error)
        for mark in ("Permission denied", "AccessDenied", "Not a directory", "ParentNotDirectory",
                     "FileAlreadyExistsException"):  # fmt: skip
            if mark in text:
                raise JobOutputError(f"--output {path}: cannot write: {mark}") from None
        raise


def run(plan: ExportPlan) -> ChainCounters:
    """Run the job as resolved by :func:`resolve`; the per-chain counts."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    require_tables(plan.location)
    started = time.monotonic()
    summary = ChainCounters(JOB, COUNTERS)
    with job_session(plan.settings.spark, JOB) as spark:
        ranges = plan_ranges(plan.location)
        _log.info("%s: reading %s in %d key ranges", JOB, plan.location.table, len(ranges))
        counters = ProgressCounters.create(spark.sparkContext)
        with Progress(JOB, counters, plan.settings.progress_interval):
            scan = scan_context(plan.location, SCAN_FAMILIES)
            columns = f"skipped STRING, {ddl(EVENT_COLUMNS)}"
            events = table_frame(spark, scan, ranges, row_or_skip, columns, counters=counters)
            events = events.persist(StorageLevel.MEMORY_AND_DISK)
            exported = 0
            for row in events.groupBy("skipped").count().collect():
                if row["skipped"] is None:
                    exported = row["count"]
                else:
                    summary.add(int(row["skipped"]), "skipped", row["count"])
            counters.add(refused=summary.totals["skipped"])
            events = events.where("skipped IS NULL").drop("skipped")
            _write(events.repartition("emitter_chain", "day"), plan.events_path,
                   ["emitter_chain", "day"])  # fmt: skip
            counters.add(written=exported)  # Parquet rows count once the write commits
            _log.info("%s: events written to %s (%.1f s)", JOB, plan.events_path,
                      time.monotonic() - started)  # fmt: skip
            aggregate = daily(events).persist(StorageLevel.MEMORY_AND_DISK)
            _write(aggregate.repartition("day"), plan.daily_path, ["day"])
            # The summary from the (small) aggregate rather than another pass over the events.
            per_day = aggregate.groupBy("source_chain", "day").agg(
                F.sum("messages").alias("messages"),
                F.sum("transfers").alias("transfers"),
                F.sum("priced_transfers").alias("priced"),
                F.sum("volume_usd").alias("usd"),
            )
            volumes: dict[Any, Any] = {}
            for row in per_day.collect():
                summary.add(row["source_chain"], "messages", row["messages"])
                summary.add(row["source_chain"], "transfers", row["transfers"])
                summary.add(row["source_chain"], "days")
                if row["transfers"]:
                    volumes[(row["day"], row["source_chain"])] = (
                        row["transfers"], row["priced"], row["usd"]
                    )  # fmt: skip
            aggregate.unpersist()
            events.unpersist()
    found = _reconcile(plan, volumes)
    elapsed = time.monotonic() - started
    messages = summary.totals["messages"]
    _log.info("%s: %d messages exported, %.0f rows/s (%.1f s)", JOB, messages,
              messages / max(elapsed, 1e-9), elapsed)  # fmt: skip
    summary.details = {
        "table": plan.location.table,
        "events": plan.events_path,
        "daily": plan.daily_path,
        "overwrite": "per partition",
        "key_ranges": len(ranges),
        "seconds": round(elapsed, 3),
        "rollup_chain_days_checked": len(volumes),
        "rollup_differences": len(found),
        "rollup_differing": found[:MAX_REPORTED],
    }
    return summary


def _reconcile(plan: ExportPlan, exported: dict[Any, Any]) -> list[dict[str, Any]]:
    """The (day, chain) totals on which the volume rollups and the export differ, logged."""
    if not exported:
        return []
    days = [day for day, _ in exported]
    found = differences(exported, read_rollups(plan.location, min(days), max(days)))
    for item in found:
        _log.warning("%s: volume rollups differ on %s chain %d: export %s, rollups %s", JOB,
                     item["day"], item["chain"], item["export"], item["rollups"])  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    """Run export with ``argv`` (flags of :func:`parser`); the exit code."""
    return run_table_job(argv, resolve, run, JOB)
