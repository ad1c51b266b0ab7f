"""enrich: backfill TokenTransferDetails (amount in whole tokens, USD notional) from daily prices.

The live writer enriches a transfer when it stores it, if its token's attestation is already
stored and a price source answers. Transfers stored before their attestation, or without a
price source, stay without ``TokenTransferDetails`` (or without ``NotionalUSD``). This job
fills them in over the whole table from a historical daily price dataset:

* **Scan.** The events table is read in key ranges (:mod:`chainloom_spark.table_scan`); each
  token transfer becomes a record (token, UTC day of its VAA timestamp, whether it already has
  details and a notional), each attestation (``AssetMetaPayload``) a record of the token's
  symbol, name and decimals. The newest attestation of a token wins, as in the live writer.
* **Join.** In Spark: transfers lacking ``NotionalUSD`` with the attestations by token, then
  with the prices by (token, day). A price row names its token by ``token_chain`` +
  ``token_address`` or by ``coingecko_id`` (mapped to tokens with ``--coin-ids``); an exact
  token row wins over a CoinGecko id for the same day.
* **Write.** Each partition re-reads its rows and computes the cells with the event store's
  own :func:`chainloom.eventstore.cells.transfer_details_cells` (the 8-decimal normalisation and
  the rounding of :mod:`chainloom.eventstore.enrichment`), then writes only the
  ``TokenTransferDetails`` cells that differ from the stored ones. Cells carry the VAA's
  timestamp, so a rerun computes the same cells and writes nothing.

A transfer whose token has an attestation but no price for its day gets the details without
``NotionalUSD`` (as the live writer does) and is reported ``unpriced`` on every run; one
without an attestation is reported ``no_asset_meta`` and left alone.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import BigtableTables, endpoint
from chainloom.eventstore.cells import Cell, transfer_details_cells
from chainloom.eventstore.encoding import decode_int, decode_timestamp
from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.settings import BigtableSettings
from chainloom.wormhole.errors import PayloadParseError
from chainloom.wormhole.payloads import (
    AssetMeta,
    TokenTransfer,
    TokenTransferWithPayload,
    decode_token_bridge_payload,
)
from chainloom_spark.arguments import JobArgumentParser, add_table_flags, load_job_settings
from chainloom_spark.counts import ChainCounters
from chainloom_spark.errors import JobInputError, SinkUnavailableError
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session
from chainloom_spark.settings import SparkJobSettings
from chainloom_spark.table_scan import (
    plan_ranges,
    require_tables,
    scan_context,
    table_rdd,
    use_emulator,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

JOB = "enrich"
"""The job's name."""

COUNTERS = ("enriched", "already_enriched", "unpriced", "no_asset_meta", "written")
"""Per chain: transfers given a notional by this run; transfers that had one; transfers with
an attestation but no price for their day; transfers without an attestation; transfers whose
row got cells from this run (0 on a rerun)."""

FORMATS = ("auto", "csv", "parquet")
"""Values of ``--prices-format`` (and ``--coin-ids-format``); ``auto`` picks Parquet for paths
ending in .parquet or local directories holding .parquet files, CSV otherwise."""

SCAN_FAMILIES = (
    schema.MESSAGE_PUBLICATION,
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.ASSET_META_PAYLOAD,
    schema.TOKEN_TRANSFER_DETAILS,
)
"""The families the scan reads (the payload bytes, the timestamp, what is already enriched)."""

RECORD_DDL = (
    "kind STRING, row_key STRING, chain INT, timestamp LONG, day STRING, token_chain INT, "
    "token_address STRING, state STRING, decimals INT, symbol STRING, name STRING"
)
"""One scanned row: ``kind`` ``transfer`` (``state``: ``missing``, ``no_notional`` or
``enriched``) or ``asset`` (``decimals``, ``symbol``, ``name``)."""

_log = logging.getLogger("chainloom_spark")


# ----------------------------------------------------------------------------- arguments


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = JobArgumentParser(prog=JOB, description="Backfill TokenTransferDetails from prices.")
    add_table_flags(p)
    p.add_argument(
        "--prices",
        required=True,
        help="Daily USD prices, CSV or Parquet: date, price_usd, and coingecko_id or "
        "token_chain + token_address.",
    )
    p.add_argument("--prices-format", choices=FORMATS, default="auto", help="Format of --prices.")
    p.add_argument(
        "--coin-ids",
        help="CSV or Parquet mapping CoinGecko ids to tokens: coingecko_id, token_chain, "
        "token_address (needed for price rows that name a coingecko_id).",
    )
    p.add_argument("--coin-ids-format", choices=FORMATS, default="auto", help="Its format.")
    p.add_argument("--summary", help="Write the summary as JSON to this file.")
    return p


@dataclass(frozen=True, slots=True)
class EnrichPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    prices: str
    """The price dataset's path."""
    prices_format: str
    """``csv`` or ``parquet``."""
    coin_ids: str | None
    """The CoinGecko id mapping's path, if any."""
    coin_ids_format: str
    """``csv`` or ``parquet``."""
    summary_path: str | None
    """Where the JSON summary goes."""


def _local_path(path: str) -> str | None:
    if path.startswith("file://"):
        return path[len("file://") :]
    return None if "://" in path else path


def dataset_format(path: str, chosen: str) -> str:
    """``csv`` or ``parquet`` for ``path`` (``auto`` looks at the name and, locally, inside)."""
    if chosen != "auto":
        return chosen
    stripped = path.rstrip("/")
    if stripped.endswith(".parquet"):
        return "parquet"
    local = _local_path(stripped)
    if local is not None and Path(local).is_dir() and any(Path(local).rglob("*.parquet")):
        return "parquet"
    return "csv"


def check_dataset(flag: str, path: str) -> None:
    """A local dataset that does not exist is refused before Spark starts (exit 2)."""
    local = _local_path(path)
    if local is not None and not Path(local).exists():
        raise JobInputError(f"{flag} {path}: does not exist")


def resolve(argv: list[str] | None) -> EnrichPlan:
    """Parse flags and settings (JobArgumentError / JobInputError on bad ones)."""
    args = parser().parse_args(argv)
    check_dataset("--prices", args.prices)
    if args.coin_ids:
        check_dataset("--coin-ids", args.coin_ids)
    settings, location = load_job_settings(args)
    return EnrichPlan(
        settings=settings,
        location=location,
        prices=args.prices,
        prices_format=dataset_format(args.prices, args.prices_format),
        coin_ids=args.coin_ids,
        coin_ids_format=dataset_format(args.coin_ids or "", args.coin_ids_format),
        summary_path=args.summary,
    )


# ----------------------------------------------------------------------------- the scan


def utc_day(timestamp: int) -> str:
    """``YYYY-MM-DD`` of a unix time, in UTC."""
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


def scan_record(row_key: str, row: RowSnapshot) -> tuple[Any, ...] | None:
    """The record (:data:`RECORD_DDL`) of a token transfer or attestation row; None for the
    rest. Payloads are decoded by the token bridge codec, as the writer stored them."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    stamp, payload = publication.get(Q.TIMESTAMP), publication.get(Q.PAYLOAD)
    chain = publication.get(Q.EMITTER_CHAIN)
    wanted = schema.TOKEN_TRANSFER_PAYLOAD in row or schema.ASSET_META_PAYLOAD in row
    if not wanted or stamp is None or payload is None or chain is None:
        return None
    try:
        decoded = decode_token_bridge_payload(payload)
    except PayloadParseError:
        return None
    timestamp = decode_timestamp(stamp)
    head = (row_key, decode_int(chain), timestamp, utc_day(timestamp), decoded.token_chain,
            decoded.token_address.hex())  # fmt: skip
    if isinstance(decoded, AssetMeta):
        return ("asset", *head, None, decoded.decimals, decoded.symbol, decoded.name)
    details = row.get(schema.TOKEN_TRANSFER_DETAILS, {})
    if Q.NOTIONAL_USD in details:
        state = "enriched"
    elif details:
        state = "no_notional"
    else:
        state = "missing"
    return ("transfer", *head, state, None, None, None)


# ----------------------------------------------------------------------------- prices


def _token_address(column: Column) -> Column:
    """A token address as 64 lower-case hex characters (``0x`` and case dropped, left-padded:
    a 20-byte EVM address is accepted as is); null when it is not hex."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    text = F.regexp_replace(F.lower(F.trim(column.cast("string"))), "^0x", "")
    return F.when(text.rlike("^[0-9a-f]{1,64}$"), F.lpad(text, 64, "0"))


def _token_chain(column: Column) -> Column:
    from pyspark.sql import functions as F  # noqa: N812

    chain = F.trim(column.cast("string"))
    number = chain.try_cast("int")
    return F.when(chain.rlike("^[0-9]{1,5}$") & (number <= 65535), number)


def read_dataset(spark: SparkSession, flag: str, path: str, fmt: str) -> DataFrame:
    """A CSV (header line, every column read as text) or Parquet dataset."""
    from pyspark.errors import AnalysisException

    try:
        if fmt == "parquet":
            return spark.read.parquet(path)
        return spark.read.option("header", True).csv(path)
    except AnalysisException as error:
        raise JobInputError(f"{flag} {path}: {str(error).splitlines()[0]}") from None


def _fail_on_rows(frame: DataFrame, flag: str, path: str, what: str) -> None:
    count = frame.count()
    if count:
        first = frame.first()
        example = {k: v for k, v in (first.asDict() if first else {}).items() if v is not None}
        raise JobInputError(f"{flag} {path}: {count} rows {what} (first: {example})")


def load_prices(spark: SparkSession, plan: EnrichPlan) -> DataFrame:
    """(token_chain, token_address, day, price) with at most one price per token and day.

    Checks every row (a date, a non-negative price, a token) and refuses the dataset (exit 2)
    naming the first bad row; two different prices for one token and day are refused too.
    """
    from pyspark.sql import functions as F  # noqa: N812

    flag, path = "--prices", plan.prices
    raw = read_dataset(spark, flag, path, plan.prices_format)
    columns = set(raw.columns)
    missing = {"date", "price_usd"} - columns
    if missing:
        raise JobInputError(f"{flag} {path}: missing columns {', '.join(sorted(missing))}")
    by_token = {"token_chain", "token_address"} <= columns
    if not by_token and "coingecko_id" not in columns:
        raise JobInputError(
            f"{flag} {path}: needs a coingecko_id column or token_chain and token_address"
        )
    text = F.trim(F.col("price_usd").cast("string"))
    prices = raw.select(
        F.col("date").cast("string").alias("date_text"),
        F.try_to_date(F.col("date").cast("string"), "yyyy-MM-dd").alias("day"),
        text.alias("price"),
        (_token_chain(F.col("token_chain")) if by_token else F.lit(None).cast("int")).alias(
            "token_chain"
        ),
        (_token_address(F.col("token_address")) if by_token else F.lit(None)).alias(
            "token_address"
        ),
        (
            F.nullif(F.trim(F.col("coingecko_id").cast("string")), F.lit(""))
            if "coingecko_id" in columns
            else F.lit(None).cast("string")
        ).alias("coingecko_id"),
        # Whether the row names a token at all (then both parts must be valid).
        (
            F.coalesce(F.trim(F.col("token_chain").cast("string")), F.lit("")) != ""
            if by_token
            else F.lit(False)
        ).alias("names_token"),
    )
    exact = F.col("token_chain").isNotNull() & F.col("token_address").isNotNull()
    valid = (
        F.col("day").isNotNull()
        & (exact | ~F.col("names_token"))
        & F.col("price").try_cast("double").isNotNull()
        & (F.col("price").try_cast("double") >= 0)
        & (exact | F.col("coingecko_id").isNotNull())
    )
    _fail_on_rows(
        prices.where(~valid | valid.isNull()),
        flag,
        path,
        "lack a YYYY-MM-DD date, a non-negative price or a valid token",
    )
    prices = prices.withColumn("day", F.date_format("day", "yyyy-MM-dd"))
    token_prices = prices.where(exact).select("token_chain", "token_address", "day", "price")
    coin_prices = prices.where(~exact).select("coingecko_id", "day", "price")
    if plan.coin_ids is not None:
        mapping = load_coin_ids(spark, plan.coin_ids, plan.coin_ids_format)
        mapped = coin_prices.join(mapping, "coingecko_id").select(
            "token_chain", "token_address", "day", "price"
        )
        # An exact token row wins over a CoinGecko id on the same day.
        mapped = mapped.join(token_prices, ["token_chain", "token_address", "day"], "left_anti")
        token_prices = token_prices.unionByName(mapped)
    elif not coin_prices.isEmpty():
        _log.warning("%s: price rows naming a coingecko_id are ignored without --coin-ids", JOB)
    token_prices = token_prices.withColumn("value", F.col("price").try_cast("decimal(38,18)"))
    ambiguous = (
        token_prices.groupBy("token_chain", "token_address", "day")
        .agg(F.countDistinct("value").alias("prices"))
        .where(F.col("prices") > 1)
    )
    _fail_on_rows(ambiguous, flag, path, "are (token, day) pairs with different prices")
    return token_prices.dropDuplicates(["token_chain", "token_address", "day"]).drop("value")


def load_coin_ids(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    """(coingecko_id, token_chain, token_address), every row checked; a token may have only
    one id."""
    from pyspark.sql import functions as F  # noqa: N812

    flag = "--coin-ids"
    raw = read_dataset(spark, flag, path, fmt)
    missing = {"coingecko_id", "token_chain", "token_address"} - set(raw.columns)
    if missing:
        raise JobInputError(f"{flag} {path}: missing columns {', '.join(sorted(missing))}")
    mapping = raw.select(
        F.nullif(F.trim(F.col("coingecko_id").cast("string")), F.lit("")).alias("coingecko_id"),
        _token_chain(F.col("token_chain")).alias("token_chain"),
        _token_address(F.col("token_address")).alias("token_address"),
    )
    valid = (
        F.col("coingecko_id").isNotNull()
        & F.col("token_chain").isNotNull()
        & F.col("token_address").isNotNull()
    )
    _fail_on_rows(mapping.where(~valid), flag, path, "lack an id, a chain or a hex address")
    mapping = mapping.dropDuplicates()
    twice = mapping.groupBy("token_chain", "token_address").count().where(F.col("count") > 1)
    _fail_on_rows(twice, flag, path, "are tokens mapped to more than one coingecko_id")
    return mapping


# ----------------------------------------------------------------------------- the writes


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What every writing task needs (small: shipped with the task)."""

    location: BigtableSettings
    """The tables."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver."""
    batch_rows: int
    """Rows read and written per round trip (``writer.flush_rows``)."""
    max_attempts: int
    """Attempts per batch before the store counts as unavailable (``writer.max_attempts``)."""
    counters: ProgressCounters
    """The job's progress counters (rows written)."""


WRITE_FAMILIES = (
    schema.MESSAGE_PUBLICATION,
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.TOKEN_TRANSFER_DETAILS,
)
"""What a writing task re-reads of each row: the payload, the timestamp, the stored details."""


def details_to_write(row: RowSnapshot, candidate: Any) -> list[Cell] | None:
    """The ``TokenTransferDetails`` cells of ``candidate``'s row that differ from the stored
    ones; None when the row is no longer a token transfer (it cannot be enriched)."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    stamp, payload = publication.get(Q.TIMESTAMP), publication.get(Q.PAYLOAD)
    if stamp is None or payload is None:
        return None
    try:
        transfer = decode_token_bridge_payload(payload)
    except PayloadParseError:
        return None
    if not isinstance(transfer, TokenTransfer | TokenTransferWithPayload):
        return None
    asset = AssetInfo(
        token_chain=candidate.token_chain,
        token_address=candidate.token_address,
        decimals=candidate.decimals,
        symbol=candidate.symbol,
        name=candidate.name,
        timestamp=candidate.asset_timestamp,
    )
    price = Decimal(candidate.price) if candidate.price is not None else None
    cells = transfer_details_cells(decode_timestamp(stamp), transfer, asset, price)
    stored = row.get(schema.TOKEN_TRANSFER_DETAILS, {})
    return [cell for cell in cells if stored.get(cell.qualifier) != cell.value]


def _write(tables: BigtableTables, entries: list[tuple[str, list[Cell]]], attempts: int) -> None:
    """Write ``entries`` with one MutateRows call, retrying the rows that failed."""
    pending = entries
    for attempt in range(attempts):
        failed = tables.bulk_write(tables.events, pending)
        if not failed:
            return
        pending = [pending[i] for i in failed]
        time.sleep(min(0.2 * 2**attempt, 5.0))
    raise StoreUnavailableError(
        endpoint(tables.settings), f"{len(pending)} rows still failing after {attempts} attempts"
    )


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def write_partition(context: WriteContext, rows: Iterable[Any]) -> Iterator[tuple[int, str, int]]:
    """Enrich the candidates of one partition; yield (chain, counter, count) tallies."""
    use_emulator(context.emulator_host)
    tally: dict[tuple[int, str], int] = {}

    def count(chain: int, name: str) -> None:
        tally[(chain, name)] = tally.get((chain, name), 0) + 1

    try:
        with BigtableTables(context.location) as tables:
            for batch in _batches(rows, context.batch_rows):
                stored = tables.read_event_rows([r.row_key for r in batch], WRITE_FAMILIES)
                entries: list[tuple[str, list[Cell]]] = []
                for candidate in batch:
                    cells = details_to_write(stored.get(candidate.row_key, {}), candidate)
                    if cells is None:
                        continue
                    priced = candidate.price is not None
                    if cells:
                        entries.append((candidate.row_key, cells))
                        count(candidate.chain, "written")
                    if not priced:
                        count(candidate.chain, "unpriced")
                    elif cells:
                        count(candidate.chain, "enriched")
                    else:  # enriched by someone else since the scan
                        count(candidate.chain, "already_enriched")
                if entries:
                    _write(tables, entries, context.max_attempts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    context.counters.add(written=sum(v for (_, name), v in tally.items() if name == "written"))
    for (chain, name), value in tally.items():
        yield chain, name, value


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
            scanned = table_rdd(spark, scan, ranges, scan_record, counters)
            records = spark.createDataFrame(scanned, RECORD_DDL)
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
                .rdd.mapPartitions(partial(write_partition, context))
                .collect()
            )
            for chain, name, value in tallies:
                summary.add(chain, name, value)
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


if __name__ == "__main__":
    import sys

    from chainloom_spark.jobs.enrich import main as imported_main

    sys.exit(imported_main(sys.argv[1:]))
