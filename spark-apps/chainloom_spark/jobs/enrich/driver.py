"""enrich's driver: the scan, the joins with attestations and prices, the writes, the
counts."""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import TYPE_CHECKING

from chainloom_spark.counts import ChainCounters
from chainloom_spark.jobs.enrich.arguments import JOB, EnrichPlan, resolve
from chainloom_spark.jobs.enrich.prices import load_prices
from chainloom_spark.jobs.enrich.tasks import (
    RECORD_DDL,
    SCAN_FAMILIES,
    TALLY_DDL,
    WriteContext,
    scan_record,
    write_batches,
)
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session
from chainloom_spark.table_scan import (
    plan_ranges,
    require_tables,
    scan_context,
    table_frame,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


COUNTERS = ("enriched", "already_enriched", "unpriced", "no_asset_meta", "written")
"""Per chain: transfers given a notional by this run; transfers that had one; transfers with
an attestation but no price for their day; transfers without an attestation; transfers whose
row got cells from this run (0 on a rerun)."""


_log = logging.getLogger("chainloom_spark")


# ----------------------------------------------------------------------------- the driver


def candidates(records: DataFrame, prices: DataFrame) -> DataFrame:
    """Transfers lacking a notional, with their token's newest attestation and day's price.

    Columns: row_key, chain, status (``enrich``, ``already_enriched``, ``no_asset_meta``),
    token_chain, token_address, decimals, symbol, name, asset_timestamp, price (null: none).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    newest = Window.partitionBy("token_chain", "token_address").orderBy(
        F.col("timestamp").desc(), F.col("row_key").desc()
    )
    assets = (
        records.where(F.col("kind") == "asset")
        .withColumn("rank", F.row_number().over(newest))
        .where(F.col("rank") == 1)
        .select(
            "token_chain",
            "token_address",
            "decimals",
            "symbol",
            "name",
            F.col("timestamp").alias("asset_timestamp"),
        )
    )
    transfers = records.where(F.col("kind") == "transfer").select(
        "row_key", "chain", "day", "token_chain", "token_address", "state"
    )
    joined = transfers.join(assets, ["token_chain", "token_address"], "left").join(
        prices, ["token_chain", "token_address", "day"], "left"
    )
    status = (
        F.when(F.col("state") == "enriched", "already_enriched")
        .when(F.col("decimals").isNull(), "no_asset_meta")
        .otherwise("enrich")
    )
    return joined.withColumn("status", status)


def run(plan: EnrichPlan) -> ChainCounters:
    """Run the job as resolved by :func:`resolve`; the per-chain counts."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812

    require_tables(plan.location)
    started = time.monotonic()
    summary = ChainCounters(JOB, COUNTERS)
    with job_session(plan.settings.spark, JOB) as spark:
        ranges = plan_ranges(plan.location)
        _log.info("%s: reading %s in %d key ranges", JOB, plan.location.table, len(ranges))
        counters = ProgressCounters.create(spark.sparkContext)
        with Progress(JOB, counters, plan.settings.progress_interval):
            prices = load_prices(spark, plan)
            scan = scan_context(plan.location, SCAN_FAMILIES)
            records = table_frame(spark, scan, ranges, scan_record, RECORD_DDL, counters=counters)
            records = records.persist(StorageLevel.MEMORY_AND_DISK)
            plan_frame = candidates(records, prices).persist(StorageLevel.MEMORY_AND_DISK)
            settled = plan_frame.where(F.col("status") != "enrich")
            for row in settled.groupBy("chain", "status").count().collect():
                summary.add(row["chain"], row["status"], row["count"])
            counters.add(refused=summary.totals["no_asset_meta"])
            _log.info("%s: table scanned and joined (%.1f s)", JOB, time.monotonic() - started)
            context = WriteContext(
                location=plan.location,
                emulator_host=scan.emulator_host,
                batch_rows=plan.settings.writer.flush_rows,
                max_attempts=plan.settings.writer.max_attempts,
                counters=counters,
            )
            tallies = (
                plan_frame.where(F.col("status") == "enrich")
                .mapInArrow(partial(write_batches, context), TALLY_DDL)
                .collect()
            )
            for tally in tallies:
                summary.add(tally.chain, tally.name, tally.value)
            plan_frame.unpersist()
            records.unpersist()
    elapsed = time.monotonic() - started
    totals = summary.totals
    transfers = sum(count for name, count in totals.items() if name != "written")
    _log.info("%s: %d transfers enriched, %d rows written, %.0f transfers/s (%.1f s)", JOB,
              totals["enriched"], totals["written"], transfers / max(elapsed, 1e-9),
              elapsed)  # fmt: skip
    summary.details = {
        "transfers": transfers,
        "table": plan.location.table,
        "prices": plan.prices,
        "coin_ids": plan.coin_ids,
        "key_ranges": len(ranges),
        "seconds": round(elapsed, 3),
    }
    return summary


def main(argv: list[str] | None = None) -> int:
    """Run enrich with ``argv`` (flags of :func:`parser`); the exit code."""
    return run_table_job(argv, resolve, run, JOB)
