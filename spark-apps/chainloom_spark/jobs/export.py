"""export: the events table as a Parquet data lake, plus daily volume aggregates.

A data team queries months of messages with Spark, DuckDB or pandas rather than Bigtable
scans, so the job writes a flat copy with one column per stored value, decoded by the event
store's own codecs (:func:`chainloom.eventstore.encoding.decode_value`):

* ``OUTPUT/events``: one row per events-table row, partitioned by ``emitter_chain`` and the UTC
  ``day`` of the VAA timestamp (:data:`EVENT_COLUMNS`, documented in docs/spark.md);
* ``OUTPUT/daily``: per (day, source chain, target chain, token): messages, token transfers,
  priced transfers and the USD volume (:data:`DAILY_COLUMNS`), partitioned by ``day``.

The table is read in key ranges cut at the data client's row-key samples, one Spark partition
per range (:mod:`chainloom_spark.table_scan`). A rerun replaces the output **per partition**
(Spark's dynamic partition overwrite): every (chain, day) directory the run produces is
swapped in when the job commits, and directories the run does not produce are left as they
were. A run that fails before its commit leaves the previous output untouched.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainloom.eventstore import schema
from chainloom.eventstore.encoding import decode_value
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.settings import BigtableSettings
from chainloom.wormhole.errors import MessageKeyError
from chainloom_spark.arguments import JobArgumentParser, add_table_flags, load_job_settings
from chainloom_spark.counts import ChainCounters
from chainloom_spark.errors import JobOutputError
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session
from chainloom_spark.settings import SparkJobSettings
from chainloom_spark.table_scan import plan_ranges, require_tables, scan_context, table_rdd

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

JOB = "export"
"""The job's name."""

EVENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("message_id", "STRING", "`chain/emitter/sequence`, Wormhole's message id"),
    ("row_key", "STRING", "the events table's row key `chain:emitter:%016d`"),
    ("emitter_address", "STRING", "the emitter, 64 lower-case hex characters"),
    ("sequence", "DECIMAL(20,0)", "the emitter's sequence (uint64)"),
    ("timestamp", "TIMESTAMP", "the VAA's timestamp (UTC)"),
    ("version", "INT", "VAA version"),
    ("guardian_set_index", "BIGINT", "guardian set the VAA is signed by"),
    ("nonce", "BIGINT", "the message's nonce"),
    ("consistency_level", "INT", "the emitter's requested finality"),
    ("digest", "STRING", "the body's digest (hex); tells conflicting VAAs apart"),
    ("payload", "BINARY", "the message payload, as emitted"),
    ("initiating_tx_id", "STRING", "source transaction, when observed on the source chain"),
    ("signed_vaa", "BINARY", "the first VAA stored with quorum (null: no quorum yet)"),
    ("signatures", "INT", "guardian signatures stored for the message"),
    ("conflicts", "INT", "other VAAs seen for the same message id (kept in the table)"),
    (
        "payload_kind",
        "STRING",
        "`token_transfer`, `token_transfer_with_payload`, `asset_meta`, `nft_transfer`, "
        "or null (any other payload)",
    ),
    ("amount", "STRING", "transfer amount in the bridge's units (at most 8 decimals), uint256"),
    ("fee", "STRING", "relayer fee of a payload-1 transfer, same units"),
    ("token_chain", "INT", "the token's home chain (transfers, attestations, NFTs)"),
    ("token_address", "STRING", "the token's address on its home chain, 64 hex characters"),
    ("target_chain", "INT", "destination chain of a transfer"),
    ("target_address", "STRING", "recipient on the destination chain, 64 hex characters"),
    ("from_address", "STRING", "sender of a payload-3 transfer, 64 hex characters"),
    (
        "decimals",
        "INT",
        "the token's native decimals (an attestation's, or the transfer's details)",
    ),
    ("symbol", "STRING", "token symbol (attestation, NFT, or the transfer's origin token)"),
    ("name", "STRING", "token name (attestation, NFT, or the transfer's origin token)"),
    ("nft_token_id", "STRING", "the NFT's token id (uint256, decimal)"),
    ("nft_uri", "STRING", "the NFT's URI"),
    ("amount_tokens", "STRING", "TokenTransferDetails: the amount in whole tokens (exact)"),
    ("notional_usd", "DECIMAL(38,6)", "TokenTransferDetails: USD value at the VAA's time"),
    ("token_price_usd", "STRING", "TokenTransferDetails: USD per whole token used (exact)"),
    ("origin_token_address", "STRING", "TokenTransferDetails: the origin token, native form"),
    ("sender_address", "STRING", "ChainDetails: sender, native form of the source chain"),
    ("receiver_address", "STRING", "ChainDetails: receiver, native form of the target chain"),
    ("resulting_token_address", "STRING", "ChainDetails: the token received, native form"),
    ("emitter_chain", "INT", "partition column: the emitter's chain id"),
    ("day", "DATE", "partition column: the UTC day of `timestamp`"),
)
"""The events dataset: (column, Spark SQL type, meaning), in order."""

DAILY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("source_chain", "INT", "emitter chain"),
    ("target_chain", "INT", "destination chain of the transfers (null: messages of other kinds)"),
    ("token_chain", "INT", "home chain of the token transferred (null: other kinds)"),
    ("token_address", "STRING", "the token's address on its home chain (null: other kinds)"),
    ("symbol", "STRING", "the token's symbol, where the transfers' details carry one"),
    ("messages", "BIGINT", "messages (rows) in the group"),
    ("transfers", "BIGINT", "token transfers (payload 1 and 3) in the group"),
    ("priced_transfers", "BIGINT", "transfers with a NotionalUSD"),
    ("volume_usd", "DECIMAL(38,6)", "sum of NotionalUSD of the priced transfers (0 if none)"),
    ("day", "DATE", "partition column: the UTC day"),
)
"""The daily aggregate dataset: (column, Spark SQL type, meaning), in order."""

COUNTERS = ("messages", "transfers", "days", "skipped")
"""Per chain: rows exported; token transfers among them; UTC days (partitions) written; rows
left out because they have no publication (no timestamp to place them by)."""

SCAN_FAMILIES = tuple(f for f in schema.EVENT_FAMILY_NAMES if f != schema.VAA_STATE)
"""Every family but VAAState (the signature lists' history; the signatures are counted from
the Signatures family)."""

_KINDS = {
    (schema.TOKEN_TRANSFER_PAYLOAD, 1): "token_transfer",
    (schema.TOKEN_TRANSFER_PAYLOAD, 3): "token_transfer_with_payload",
    (schema.ASSET_META_PAYLOAD, 2): "asset_meta",
    (schema.NFT_TRANSFER_PAYLOAD, 1): "nft_transfer",
}

_PAYLOAD_FAMILIES = (
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.ASSET_META_PAYLOAD,
    schema.NFT_TRANSFER_PAYLOAD,
)

_log = logging.getLogger("chainloom_spark")


def ddl(columns: tuple[tuple[str, str, str], ...]) -> str:
    """A column list as Spark DDL."""
    return ", ".join(f"{name} {kind}" for name, kind, _ in columns)


# ----------------------------------------------------------------------------- arguments


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = JobArgumentParser(prog=JOB, description="Export the events table to Parquet.")
    add_table_flags(p)
    p.add_argument("--output", required=True, help="Dataset root: events/ and daily/ below it.")
    p.add_argument("--summary", help="Write the summary as JSON to this file.")
    return p


@dataclass(frozen=True, slots=True)
class ExportPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    output: str
    """The dataset root."""
    summary_path: str | None
    """Where the JSON summary goes."""

    @property
    def events_path(self) -> str:
        """Where the events dataset goes."""
        return self.output.rstrip("/") + "/events"

    @property
    def daily_path(self) -> str:
        """Where the daily aggregate goes."""
        return self.output.rstrip("/") + "/daily"


def check_output(path: str) -> None:
    """A local output must be a directory this process can create and write (exit 2)."""
    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" in local:
        return  # an object store: the first write says
    try:
        os.makedirs(local, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=local, prefix=".chainloom-probe-"):
            pass
    except OSError as error:
        raise JobOutputError(f"--output {path}: cannot write: {error.strerror or error}") from None


def resolve(argv: list[str] | None) -> ExportPlan:
    """Parse flags and settings; check the output (JobArgumentError / JobOutputError)."""
    args = parser().parse_args(argv)
    settings, location = load_job_settings(args)
    check_output(args.output)
    return ExportPlan(settings, location, args.output, args.summary)


# ----------------------------------------------------------------------------- the rows


def _value(row: RowSnapshot, family: str, qualifier: str) -> Any:
    raw = row.get(family, {}).get(qualifier)
    return None if raw is None else decode_value(family, qualifier, raw)


def _hex(value: Any) -> str | None:
    return value.hex() if isinstance(value, bytes) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def event_row(row_key: str, row: RowSnapshot) -> tuple[Any, ...] | None:
    """One events-table row as a tuple in :data:`EVENT_COLUMNS` order; None for a row with no
    publication (nothing to place it by)."""
    stamp = _value(row, schema.MESSAGE_PUBLICATION, Q.TIMESTAMP)
    if stamp is None:
        return None
    try:
        key = MessageKey.parse(row_key)
    except MessageKeyError:
        return None
    moment = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    payload_family = next((f for f in _PAYLOAD_FAMILIES if f in row), None)
    kind = None
    if payload_family is not None:
        kind = _KINDS.get((payload_family, _value(row, payload_family, Q.PAYLOAD_ID)))
    quorum = row.get(schema.QUORUM_STATE, {})
    is_asset = payload_family == schema.ASSET_META_PAYLOAD
    family = payload_family or schema.TOKEN_TRANSFER_PAYLOAD
    details = schema.TOKEN_TRANSFER_DETAILS
    notional = _value(row, details, Q.NOTIONAL_USD)
    values = {
        "message_id": key.message_id,
        "row_key": row_key,
        "emitter_address": key.emitter,
        "sequence": Decimal(key.sequence),
        "timestamp": moment,
        "version": _value(row, schema.MESSAGE_PUBLICATION, Q.VERSION),
        "guardian_set_index": _value(row, schema.MESSAGE_PUBLICATION, Q.GUARDIAN_SET_INDEX),
        "nonce": _value(row, schema.MESSAGE_PUBLICATION, Q.NONCE),
        "consistency_level": _value(row, schema.MESSAGE_PUBLICATION, Q.CONSISTENCY_LEVEL),
        "digest": _hex(_value(row, schema.MESSAGE_PUBLICATION, Q.DIGEST)),
        "payload": row.get(schema.MESSAGE_PUBLICATION, {}).get(Q.PAYLOAD),
        "initiating_tx_id": _value(row, schema.MESSAGE_PUBLICATION, Q.INITIATING_TX_ID),
        "signed_vaa": quorum.get(Q.SIGNED_VAA),
        "signatures": len(row.get(schema.SIGNATURES, {})),
        "conflicts": sum(1 for q in quorum if q.startswith(Q.CONFLICT_PREFIX)),
        "payload_kind": kind,
        "amount": _text(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.AMOUNT)),
        "fee": _text(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.FEE)),
        "token_chain": _value(row, family, Q.TOKEN_CHAIN if is_asset else Q.ORIGIN_CHAIN),
        "token_address": _hex(
            _value(row, family, Q.TOKEN_ADDRESS if is_asset else Q.ORIGIN_ADDRESS)
        ),
        "target_chain": _value(row, family, Q.TARGET_CHAIN),
        "target_address": _hex(_value(row, family, Q.TARGET_ADDRESS)),
        "from_address": _hex(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.FROM_ADDRESS)),
        "decimals": _value(row, family if is_asset else details, Q.DECIMALS),
        "symbol": _value(row, family, Q.SYMBOL) or _value(row, details, Q.ORIGIN_SYMBOL),
        "name": _value(row, family, Q.NAME) or _value(row, details, Q.ORIGIN_NAME),
        "nft_token_id": _text(_value(row, schema.NFT_TRANSFER_PAYLOAD, Q.TOKEN_ID)),
        "nft_uri": _value(row, schema.NFT_TRANSFER_PAYLOAD, Q.URI),
        "amount_tokens": _text(_value(row, details, Q.AMOUNT)),
        "notional_usd": notional,
        "token_price_usd": _text(_value(row, details, Q.TOKEN_PRICE_USD)),
        "origin_token_address": _value(row, details, Q.ORIGIN_TOKEN_ADDRESS),
        "sender_address": _value(row, schema.CHAIN_DETAILS, Q.SENDER_ADDRESS),
        "receiver_address": _value(row, schema.CHAIN_DETAILS, Q.RECEIVER_ADDRESS),
        "resulting_token_address": _value(row, schema.CHAIN_DETAILS, Q.RESULTING_TOKEN_ADDRESS),
        "emitter_chain": key.chain,
        "day": moment.date(),
    }
    return tuple(values[name] for name, _, _ in EVENT_COLUMNS)


# ----------------------------------------------------------------------------- the driver


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
            scanned = table_rdd(spark, scan, ranges, _row_or_skip, counters)
            events = spark.createDataFrame(scanned, f"skipped STRING, {ddl(EVENT_COLUMNS)}")
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
                F.sum("messages").alias("messages"), F.sum("transfers").alias("transfers")
            )
            for row in per_day.collect():
                summary.add(row["source_chain"], "messages", row["messages"])
                summary.add(row["source_chain"], "transfers", row["transfers"])
                summary.add(row["source_chain"], "days")
            aggregate.unpersist()
            events.unpersist()
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
    }
    return summary


def _row_or_skip(row_key: str, row: RowSnapshot) -> tuple[Any, ...]:
    """:func:`event_row` with a leading ``skipped`` column: the row's chain (as text) when it
    cannot be exported, else null."""
    exported = event_row(row_key, row)
    if exported is not None:
        return (None, *exported)
    chain = row_key.split(":", 1)[0]
    return (chain if chain.isdecimal() else "-1", *(None for _ in EVENT_COLUMNS))


def main(argv: list[str] | None = None) -> int:
    """Run export with ``argv`` (flags of :func:`parser`); the exit code."""
    return run_table_job(argv, resolve, run, JOB)


if __name__ == "__main__":
    import sys

    from chainloom_spark.jobs.export import main as imported_main

    sys.exit(imported_main(sys.argv[1:]))
