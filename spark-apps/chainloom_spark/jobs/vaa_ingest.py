"""vaa-ingest: files of signed VAAs -> the event store, verified, idempotent, in parallel.

The same writer as ``chainloom events put`` does the work (:class:`EventWriter`: parse with
the core codec, verify against the guardian sets, plan against the stored row, write only the
difference, index rows included), once per partition, so a bulk load and the live path cannot
disagree about a row. What Spark adds is reading any path it can read, splitting it across
executors, and collecting what every partition did:

* **Inputs.** Text files whose lines are hex or base64 VAAs or JSON objects
  (``{"vaa": ..., "tx_id": ..., "observed_at": ...}``), told apart line by line; or Parquet
  with a binary (or hex/base64 string) ``vaa`` column and optional ``tx_id``.
  ``observed_at`` is accepted and not stored: every cell's time comes from the VAA itself,
  which is what makes a rerun write nothing.
* **Verification.** The guardian sets are broadcast once; each Python worker keeps one
  :class:`SignatureCache` for every partition it runs (:func:`executor_signature_cache`).
* **Writes.** Each partition opens the tables and writes in flushes of ``writer.flush_rows``
  with at most ``writer.conditional_workers`` check-and-mutate calls in flight; the
  conditional first-quorum write keeps concurrent partitions (and a rerun after a kill)
  correct whatever the order.
* **Refusals** never stop the job: each becomes a dead-letter row (:mod:`dead_letter`).
* **Exit codes.** A missing input or a bad flag exits 2, an unreachable store 4, before any
  task starts when it can be seen from the driver.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import time
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import (
    StoreConfigError,
    StoreUnavailableError,
    TableMissingError,
    UnverifiedVAAError,
)
from chainloom.eventstore.planner import RowPlan
from chainloom.eventstore.service import EMULATOR_ENV, locate
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.settings import BigtableSettings, load_settings
from chainloom.wormhole import (
    GuardianSets,
    KnownEmitters,
    SignatureCache,
    all_known_emitters,
    decode_vaa_text,
    parse_vaa,
)
from chainloom.wormhole.errors import (
    MessageKeyError,
    PayloadParseError,
    UnknownGuardianSetError,
    VAAEncodingError,
    WormholeError,
)
from chainloom.wormhole.payloads import AssetMeta, decode_payload
from chainloom_spark.dead_letter import SCHEMA_DDL, write_dead_letter
from chainloom_spark.errors import JobArgumentError, JobInputError, SinkUnavailableError
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job, stage
from chainloom_spark.session import job_session
from chainloom_spark.settings import SparkJobSettings
from chainloom_spark.summary import MAX_PRINTED, UNKNOWN_CHAIN, ChainCounts, JobSummary

if TYPE_CHECKING:
    from pyspark import Broadcast
    from pyspark.sql import DataFrame, SparkSession

JOB = "vaa-ingest"
"""The job's name."""

FORMATS = ("auto", "lines", "parquet")
"""Values of ``--format``: ``auto`` picks Parquet for paths ending in .parquet (or local
directories holding .parquet files), lines otherwise."""

_log = logging.getLogger("chainloom_spark")


# ----------------------------------------------------------------------------- arguments


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so a bad flag is exit 2 through run_job."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(f"{self.prog}: {message}")


def parser() -> argparse.ArgumentParser:
    """The job's flags (the stable contract of docs/spark.md)."""
    p = _Parser(prog=JOB, description="Verify files of signed VAAs into the event store.")
    p.add_argument("--input", required=True, help="File, directory or glob Spark can read.")
    p.add_argument("--table", required=True, help="Events table (bigtable.table).")
    p.add_argument("--index-table", help="Index table (bigtable.index_table).")
    p.add_argument("--project", help="Bigtable project (bigtable.project).")
    p.add_argument("--instance", help="Bigtable instance (bigtable.instance).")
    p.add_argument(
        "--guardian-set",
        metavar="mainnet|devnet|dev[:N]|FILE",
        help="Guardian sets to verify against (guardian_sets.source; dev: the test kit's).",
    )
    p.add_argument("--dead-letter", help="Parquet dataset the refused inputs are appended to.")
    p.add_argument("--summary", help="Write the summary as JSON to this file.")
    p.add_argument("--format", choices=FORMATS, default="auto", help="Input format.")
    p.add_argument("--master", help="Spark master (spark.master), e.g. local[2].")
    p.add_argument("--partitions", type=int, help="Partitions to split the input into.")
    p.add_argument("--config", help="YAML settings file (default: $CHAINLOOM_SPARK_CONFIG).")
    return p


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """Everything the driver resolved before Spark starts."""

    input: str
    """The input path as given."""
    format: str
    """``lines`` or ``parquet``."""
    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    guardian_set_source: str
    """What ``--guardian-set`` (or the settings) named."""
    dead_letter: str | None
    """Where refusals go (None: counted and sampled only)."""
    summary_path: str | None
    """Where the JSON summary goes."""
    partitions: int | None
    """Requested partition count."""


def resolve(argv: list[str] | None) -> IngestPlan:
    """Parse flags and settings (JobArgumentError / SettingsError on bad ones)."""
    args = parser().parse_args(argv)
    if args.partitions is not None and args.partitions < 1:
        raise JobArgumentError("--partitions must be at least 1")
    check_input(args.input)
    source = args.guardian_set
    dev_kit = source is not None and (source == "dev" or source.startswith("dev:"))
    flags = {
        "spark.master": args.master,
        "bigtable.table": args.table,
        "bigtable.index_table": args.index_table,
        "bigtable.project": args.project,
        "bigtable.instance": args.instance,
        "guardian_sets.source": None if dev_kit else source,
    }
    settings = load_settings(SparkJobSettings, config_file=args.config, flags=flags)
    try:
        location = locate(EventStoreSettings(bigtable=settings.bigtable))
    except StoreConfigError as error:
        raise JobArgumentError(str(error)) from None
    return IngestPlan(
        input=args.input,
        format=_input_format(args.input, args.format),
        settings=settings,
        location=location,
        guardian_set_source=source if dev_kit else settings.guardian_sets.source,
        dead_letter=args.dead_letter,
        summary_path=args.summary,
        partitions=args.partitions,
    )


def load_guardian_sets(source: str) -> GuardianSets:
    """The sets ``source`` names; ``dev``/``dev:N`` are the dev kit's (tests and demos only,
    found through :mod:`chainloom.extensions`)."""
    if source == "dev" or source.startswith("dev:"):
        from chainloom import extensions

        try:
            count = int(source[4:]) if source.startswith("dev:") else 19
            sets: GuardianSets = extensions.load(
                extensions.GUARDIAN_SETS, "dev", what="--guardian-set"
            )(count)
        except (ValueError, extensions.ExtensionMissingError) as error:
            raise JobArgumentError(f"--guardian-set {source}: {error}") from None
        return sets
    if source == "mainnet":
        return GuardianSets.mainnet()
    if source == "devnet":
        return GuardianSets.devnet()
    try:
        return GuardianSets.from_file(source)
    except WormholeError as error:
        raise JobArgumentError(f"--guardian-set {source}: {error}") from None


# ----------------------------------------------------------------------------- the driver's checks


def _local_path(path: str) -> str | None:
    """The local file system path of ``path``, or None for other schemes (s3a://, gs://)."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if "://" in path:
        return None
    return path


def _input_format(path: str, chosen: str) -> str:
    if chosen != "auto":
        return chosen
    stripped = path.rstrip("/")
    if stripped.endswith(".parquet"):
        return "parquet"
    local = _local_path(stripped)
    if local is not None and Path(local).is_dir() and any(Path(local).rglob("*.parquet")):
        return "parquet"
    return "lines"


def check_input(path: str, option: str = "--input") -> None:
    """A local input that does not exist is refused before Spark starts (exit 2)."""
    import glob

    local = _local_path(path)
    if local is None:
        return
    if glob.has_magic(local):
        if not glob.glob(local):
            raise JobInputError(f"{option} {path}: no file matches")
    elif not os.path.exists(local):
        raise JobInputError(f"{option} {path}: does not exist")


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


# ----------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class PartitionContext:
    """What every task needs, shipped with the task (small) or broadcast (guardian sets)."""

    location: BigtableSettings
    """The tables to write."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver (executors may have started without it)."""
    guardian_sets: Broadcast[GuardianSets]
    """The guardian sets, broadcast once."""
    writer: WriterConfig
    """Flush size, write concurrency and retries of each partition's writer."""
    progress: ProgressCounters
    """Read, written and refused, for the driver's progress lines."""


_SIGNATURE_CACHE: SignatureCache | None = None


def executor_signature_cache() -> SignatureCache:
    """The signature cache of this Python worker, shared by every partition it runs."""
    global _SIGNATURE_CACHE  # noqa: PLW0603 - one cache per worker process, on purpose
    if _SIGNATURE_CACHE is None:
        _SIGNATURE_CACHE = SignatureCache()
    return _SIGNATURE_CACHE


class Refusal(Exception):  # noqa: N818 - a verdict about an input, not a failure of the job
    """An input the job will not store: goes to the dead letter."""

    def __init__(self, rule: str, reason: str, chain: int = UNKNOWN_CHAIN) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
        self.chain = chain


def decode_record(text: str | None, data: bytes | bytearray | None) -> tuple[bytes, str | None]:
    """(VAA bytes, tx id or None) of one input record; raises :class:`Refusal`."""
    if data is not None:
        return bytes(data), None
    line = (text or "").strip()
    if line.startswith("{"):
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise Refusal("json", f"not JSON: {error}") from None
        vaa = document.get("vaa") if isinstance(document, dict) else None
        if not isinstance(vaa, str):
            raise Refusal("json", "a JSON line needs a 'vaa' string (hex or base64)")
        tx_id = document.get("tx_id")
        if tx_id is not None and not isinstance(tx_id, str):
            raise Refusal("tx-id", "'tx_id' must be a string")
        line = vaa
    else:
        tx_id = None
    try:
        return decode_vaa_text(line), tx_id
    except VAAEncodingError as error:
        raise Refusal("encoding", str(error)) from None


def prepare(writer: EventWriter, raw: bytes, tx_id: str | None) -> Any:
    """The writer's verified input for ``raw``; raises :class:`Refusal` naming the rule."""
    try:
        vaa = parse_vaa(raw)
    except WormholeError as error:
        raise Refusal("vaa-format", str(error)) from None
    chain = vaa.emitter_chain
    if vaa.signatures and vaa.guardian_set_index not in writer.guardian_sets:
        raise Refusal("guardian-set", f"guardian set {vaa.guardian_set_index} is not known", chain)
    try:
        return writer.prepare(raw, initiating_tx_id=tx_id)
    except UnknownGuardianSetError as error:
        raise Refusal("guardian-set", str(error), chain) from None
    except PayloadParseError as error:
        raise Refusal("payload", str(error), chain) from None
    except UnverifiedVAAError as error:
        raise Refusal("signature", error.reason, chain) from None
    except MessageKeyError as error:
        raise Refusal("tx-id", str(error), chain) from None
    except WormholeError as error:
        raise Refusal("vaa-format", str(error), chain) from None


Result = tuple[str, int, Any, Any, Any, Any]
"""A task's output row: (kind, chain, a, b, c, d) with kind ``counts`` (a: the counts),
``conflict`` (a: message id, b: digest) or ``refused`` (a: location, b: raw, c: rule,
d: reason)."""


ASSETS, REST = "attestations", "messages"
"""The two passes: token attestations first, then everything else (see :func:`run`)."""


def is_attestation(raw: bytes, emitters: KnownEmitters) -> bool:
    """Whether ``raw`` is a well-formed token attestation (AssetMeta of a known bridge)."""
    try:
        return isinstance(decode_payload(parse_vaa(raw), emitters=emitters), AssetMeta)
    except WormholeError:
        return False


class PartitionTally:
    """What one partition did, per emitter chain, and the totals for progress lines."""

    def __init__(self) -> None:
        self.counts: dict[int, ChainCounts] = {}
        """Per-chain counts."""
        self.chains: dict[str, int] = {}
        """Row key -> emitter chain of the inputs queued."""
        self.read = 0
        """Inputs of this pass read."""
        self.written = 0
        """Inputs that wrote cells."""
        self.refused = 0
        """Inputs refused."""

    def plans(self, plans: list[RowPlan]) -> None:
        """Count the plans a flush executed."""
        for plan in plans:
            into = self.counts.setdefault(self.chains[plan.row_key], ChainCounts())
            setattr(into, plan.outcome.value, getattr(into, plan.outcome.value) + 1)
            if plan.cells:
                into.written += 1
                self.written += 1

    def refusal(self, chain: int) -> None:
        """Count a refused input."""
        self.read += 1
        self.refused += 1
        self.counts.setdefault(chain, ChainCounts()).refused += 1


def message_key(record: Any) -> str:
    """The row key of the message ``record`` carries ("" when it cannot be read: refused later)."""
    try:
        raw, _ = decode_record(record.text, record.data)
        return str(parse_vaa(raw).row_key)
    except (Refusal, WormholeError):
        return ""


def partition_of(key: str) -> int:
    """A stable hash of a row key (the same in every Python worker, whatever its hash seed)."""
    return zlib.crc32(key.encode())


def _as_bytes(record: Any) -> bytes:
    if record.data is not None:
        return bytes(record.data)
    text: str = record.text or ""
    return text.encode()


def ingest_partition(
    context: PartitionContext, phase: str, records: Iterable[Any]
) -> Iterator[Result]:
    """Verify and write the records of one partition that belong to ``phase``; yield the
    partition's counts, conflicts and refusals (inputs that cannot be read at all belong to
    the second phase)."""
    if context.emulator_host:
        os.environ[EMULATOR_ENV] = context.emulator_host
        # The client warns on every connection to the emulator: expected, not news to log.
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    tally = PartitionTally()
    emitters = all_known_emitters()
    try:
        with BigtableTables(context.location) as tables:
            writer = EventWriter(
                tables,
                context.guardian_sets.value,
                emitters=emitters,
                config=context.writer,
                signature_cache=executor_signature_cache(),
            )
            for record in records:
                try:
                    raw, tx_id = decode_record(record.text, record.data)
                    if is_attestation(raw, emitters) != (phase == ASSETS):
                        continue
                    tally.read += 1
                    item = prepare(writer, raw, tx_id)
                except Refusal as refusal:
                    if phase == ASSETS:
                        continue  # unreadable: refused once, by the second pass
                    tally.refusal(refusal.chain)
                    yield ("refused", refusal.chain, record.location, _as_bytes(record),
                           refusal.rule, refusal.reason)  # fmt: skip
                    continue
                tally.chains[item.vaa.row_key] = item.vaa.emitter_chain
                tally.plans(writer.submit_prepared(item))
            tally.plans(writer.flush())
            conflicts = list(writer.summary.conflicts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    finally:
        context.progress.add(read=tally.read, written=tally.written, refused=tally.refused)
    for chain, chain_counts in tally.counts.items():
        yield ("counts", chain, chain_counts.as_dict(), None, None, None)
    for message_id, digest in conflicts:
        yield ("conflict", int(message_id.split("/", 1)[0]), message_id, digest, None, None)


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


def run(plan: IngestPlan) -> JobSummary:
    """Run the job as resolved by :func:`resolve`; the summary (also written, if asked)."""
    from pyspark import StorageLevel

    sets = load_guardian_sets(plan.guardian_set_source)
    check_store(plan.location)
    settings = plan.settings
    started = time.monotonic()
    with job_session(settings.spark, JOB) as spark:
        context = spark.sparkContext
        with stage("read", **{"chainloom.format": plan.format}):
            frame = read_input(spark, plan)
        # Every copy of a message goes to one partition, so its copies are merged in one
        # task: two tasks merging signatures into the same row at once could each write
        # a summary computed from what it alone had read.
        wanted = plan.partitions or context.defaultParallelism
        rows = frame.rdd.keyBy(message_key).partitionBy(wanted, partition_of).values()
        rows.persist(StorageLevel.MEMORY_AND_DISK)  # read (and shuffled) once for both passes
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
        reports: list[Result] = []
        passes = []
        with Progress(JOB, counters, settings.progress_interval):
            for phase in (ASSETS, REST):
                results = rows.mapPartitions(partial(ingest_partition, task_context, phase))
                results.persist(StorageLevel.MEMORY_AND_DISK)
                try:  # the executors decode, verify and write this phase's rows
                    with stage("verify_write", **{"chainloom.phase": str(phase)}):
                        reports += results.filter(lambda row: row[0] != "refused").collect()
                except Exception as error:
                    _reraise_input_error(error, plan.input)
                    raise
                passes.append(results)
        refused = context.union(passes).filter(lambda row: row[0] == "refused")
        summary = JobSummary(JOB)
        summary.merge_counts((row[1], row[2]) for row in reports if row[0] == "counts")
        summary.conflicts = [(row[2], row[3]) for row in reports if row[0] == "conflict"]
        if summary.total.refused:
            summary.refusals = [(r[2], r[4], r[5]) for r in refused.take(MAX_PRINTED)]
            if plan.dead_letter:
                dead = spark.createDataFrame(
                    refused.map(lambda r: (r[2], r[3], r[4], r[5], JOB)), SCHEMA_DDL
                )
                write_dead_letter(dead, plan.dead_letter)
        for results in passes:
            results.unpersist()
        rows.unpersist()
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


if __name__ == "__main__":
    import sys

    # Run the imported module's main, not this __main__ copy: tasks must reference functions
    # by their module name so each worker keeps one signature cache.
    from chainloom_spark.jobs.vaa_ingest import main as imported_main

    sys.exit(imported_main(sys.argv[1:]))
