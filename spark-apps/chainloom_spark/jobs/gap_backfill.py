"""gap-backfill: find the sequences the event store lacks per emitter, fetch them, write them.

Token bridges emit consecutive sequences, so a hole between two stored sequences is a message
the store missed. The job works in three Spark stages, each reusing the library:

1. **Find.** The emitters (``--emitters``, or every emitter in the table through
   :meth:`EventReader.emitters`, a skip scan costing one small read per emitter) are spread
   over tasks; each task reads its emitters' row keys only (:meth:`EventReader.sequences`)
   into a :class:`~chainloom.wormhole.sequences.SequenceTracker`
   (:func:`chainloom.eventstore.backfill.scan_emitter`, shared with ``chainloom events
   backfill``). The driver collects the missing
   *ranges*, which stay small however many rows are stored.
2. **Fetch.** The missing ids are cut into chunks spread over ``--partitions`` tasks. With
   ``--public-api`` each task asks the guardian endpoints in turn
   (:class:`chainloom.publicrpc.PublicRpcClient`: per-call timeout, bounded rounds with
   backoff; found, not found, or error with the endpoints' reasons). With ``--files`` Spark
   reads the files (lines of hex or base64 VAAs, or JSON lines, as vaa-ingest) and keeps the
   VAAs whose id is missing.
3. **Write.** Found VAAs are verified and written by the event store's writer exactly as
   vaa-ingest does (:func:`chainloom_spark.jobs.vaa_ingest.prepare`; index rows included;
   token attestations in a first pass so transfers are enriched whatever the partitioning).

Idempotent: a rerun finds only what is still missing, asks for it again and writes only what
it now finds. What stays missing is reported per emitter with the reason; it does not fail the
job. A store or every endpoint unreachable before the job starts exits 4, a bad flag or a
missing ``--files`` path 2 (docs/exit-codes.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from chainloom.eventstore.backfill import fetch_missing, scan_emitter
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import StoreConfigError, StoreUnavailableError, TableMissingError
from chainloom.eventstore.keys import normalize_emitter
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.service import EMULATOR_ENV, locate
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.publicrpc import EndpointConfigError, FetchStatus, PublicRpcClient
from chainloom.settings import BigtableSettings, PublicRpcSettings, load_settings
from chainloom.wormhole import GuardianSets, all_known_emitters, parse_vaa
from chainloom.wormhole.errors import MessageKeyError, WormholeError
from chainloom.wormhole.sequences import MAX_SEQUENCE, SequenceRange
from chainloom_spark.backfill_summary import BackfillSummary
from chainloom_spark.errors import JobArgumentError, JobInputError, SinkUnavailableError
from chainloom_spark.jobs.vaa_ingest import (
    ASSETS,
    REST,
    Refusal,
    check_input,
    check_store,
    decode_record,
    executor_signature_cache,
    is_attestation,
    load_guardian_sets,
    prepare,
)
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import run_table_job
from chainloom_spark.session import job_session
from chainloom_spark.settings import SparkJobSettings

if TYPE_CHECKING:
    from pyspark import Broadcast

JOB = "gap-backfill"
"""The job's name."""

CHUNK = 64
"""Missing sequences per unit of fetch work (the units are spread over the partitions)."""

_log = logging.getLogger("chainloom_spark")


# ----------------------------------------------------------------------------- arguments


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so a bad flag is exit 2 through run_job."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(f"{self.prog}: {message}")


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = _Parser(prog=JOB, description="Find and fill the sequences missing from the event store.")
    p.add_argument("--table", required=True, help="Events table (bigtable.table).")
    p.add_argument("--index-table", help="Index table (bigtable.index_table).")
    p.add_argument("--project", help="Bigtable project (bigtable.project).")
    p.add_argument("--instance", help="Bigtable instance (bigtable.instance).")
    p.add_argument(
        "--emitters",
        metavar="CHAIN[:EMITTER],...",
        help="Emitters to check (a chain alone: each of its emitters); default: every emitter "
        "in the table.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--public-api",
        nargs="?",
        const="",
        metavar="ENDPOINT,...",
        help="Fetch from guardian public-API endpoints (host:port or https://host), asked in "
        "turn; without a value: public_rpc.endpoints from the settings.",
    )
    source.add_argument("--files", help="Fetch from files of signed VAAs (any path Spark reads).")
    p.add_argument("--from-seq", type=int, help="Lowest sequence to consider (default: lowest "
                   "stored; below the lowest stored counts as missing when given).")  # fmt: skip
    p.add_argument("--to-seq", type=int, help="Highest sequence to consider (default: highest "
                   "stored; above it counts as missing when given).")  # fmt: skip
    p.add_argument(
        "--max-missing",
        type=int,
        default=100_000,
        help="Sequences looked for per emitter and run; the rest are reported as skipped.",
    )
    p.add_argument(
        "--guardian-set",
        metavar="mainnet|devnet|dev[:N]|FILE",
        help="Guardian sets to verify against (guardian_sets.source; dev: the test kit's).",
    )
    p.add_argument("--timeout", type=float, help="Seconds per call (public_rpc.timeout).")
    p.add_argument("--rounds", type=int, help="Rounds of asking (public_rpc.rounds).")
    p.add_argument("--summary", help="Write the summary as JSON to this file.")
    p.add_argument("--master", help="Spark master (spark.master), e.g. local[2].")
    p.add_argument("--partitions", type=int, help="Partitions the fetches are spread over.")
    p.add_argument("--config", help="YAML settings file (default: $CHAINLOOM_SPARK_CONFIG).")
    return p


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    emitters: tuple[tuple[int, str | None], ...]
    """(chain, emitter or None for every emitter of the chain); empty: the whole table."""
    files: str | None
    """The files to fetch from (None: the public API)."""
    public_rpc: PublicRpcSettings
    """The endpoints (used when ``files`` is None)."""
    first: int | None
    """``--from-seq``."""
    last: int | None
    """``--to-seq``."""
    max_missing: int
    """Sequences looked for per emitter."""
    guardian_set_source: str
    """What ``--guardian-set`` (or the settings) named."""
    summary_path: str | None
    """Where the JSON summary goes."""
    partitions: int | None
    """Requested fetch partitions."""


def parse_emitters(text: str) -> tuple[tuple[int, str | None], ...]:
    """``CHAIN[:EMITTER],...`` (emitter hex, ``0x`` optional, left-padded to 32 bytes)."""
    found: list[tuple[int, str | None]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        chain_text, _, emitter = item.partition(":")
        if not chain_text.isdigit() or not 0 <= int(chain_text) <= 0xFFFF:
            raise JobArgumentError(f"--emitters {item!r}: the chain is not a chain id")
        try:
            found.append((int(chain_text), normalize_emitter(emitter) if emitter else None))
        except MessageKeyError as error:
            raise JobArgumentError(f"--emitters {item!r}: {error.reason}") from None
    if not found:
        raise JobArgumentError("--emitters names no emitter")
    return tuple(found)


def resolve(argv: list[str] | None) -> BackfillPlan:
    """Parse flags and settings (JobArgumentError / SettingsError on bad ones)."""
    args = parser().parse_args(argv)
    for name in ("from_seq", "to_seq"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= MAX_SEQUENCE:
            raise JobArgumentError(f"--{name.replace('_', '-')} must be a uint64")
    if args.from_seq is not None and args.to_seq is not None and args.from_seq > args.to_seq:
        raise JobArgumentError("--from-seq must not exceed --to-seq")
    if args.max_missing < 1 or (args.partitions is not None and args.partitions < 1):
        raise JobArgumentError("--max-missing and --partitions must be at least 1")
    if args.files:
        check_input(args.files, option="--files")
    source = args.guardian_set
    dev_kit = source is not None and (source == "dev" or source.startswith("dev:"))
    endpoints = [e.strip() for e in (args.public_api or "").split(",") if e.strip()]
    flags = {
        "spark.master": args.master,
        "bigtable.table": args.table,
        "bigtable.index_table": args.index_table,
        "bigtable.project": args.project,
        "bigtable.instance": args.instance,
        "guardian_sets.source": None if dev_kit else source,
        "public_rpc.endpoints": endpoints or None,
        "public_rpc.timeout": args.timeout,
        "public_rpc.rounds": args.rounds,
    }
    settings = load_settings(SparkJobSettings, config_file=args.config, flags=flags)
    if args.files is None and not settings.public_rpc.endpoints:
        raise JobArgumentError("--public-api: no endpoint given and public_rpc.endpoints is empty")
    try:
        location = locate(EventStoreSettings(bigtable=settings.bigtable))
    except StoreConfigError as error:
        raise JobArgumentError(str(error)) from None
    return BackfillPlan(
        settings=settings,
        location=location,
        emitters=parse_emitters(args.emitters) if args.emitters is not None else (),
        files=args.files,
        public_rpc=settings.public_rpc,
        first=args.from_seq,
        last=args.to_seq,
        max_missing=args.max_missing,
        guardian_set_source=source if dev_kit else settings.guardian_sets.source,
        summary_path=args.summary,
        partitions=args.partitions,
    )


# ----------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class TaskContext:
    """What every task needs: small values shipped with it, guardian sets broadcast."""

    location: BigtableSettings
    """The tables."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver (executors may have started without it)."""
    guardian_sets: Broadcast[GuardianSets]
    """The guardian sets, broadcast once."""
    writer: WriterConfig
    """Flush size, write concurrency and retries of each partition's writer."""
    public_rpc: PublicRpcSettings
    """The endpoints and their call policy."""
    first: int | None
    """``--from-seq``."""
    last: int | None
    """``--to-seq``."""
    max_missing: int
    """Sequences looked for per emitter."""
    counters: ProgressCounters
    """The job's progress counters: fetch results read, inputs written and refused."""


def _task_environment(context: TaskContext) -> None:
    if context.emulator_host:
        os.environ[EMULATOR_ENV] = context.emulator_host
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)


Gap = tuple[int, str, int, int | None, int | None, list[tuple[int, int]], int]
"""A find task's row: (chain, emitter, stored, lowest, highest, missing ranges, skipped)."""


def find_partition(context: TaskContext, emitters: Iterable[tuple[int, str]]) -> Iterator[Gap]:
    """The missing ranges of each emitter of the partition, from its row keys
    (:func:`chainloom.eventstore.backfill.scan_emitter`, as ``chainloom events backfill``)."""
    _task_environment(context)
    try:
        with BigtableTables(context.location) as tables:
            reader = EventReader(tables)
            for chain, emitter in emitters:
                scan = scan_emitter(reader, chain, emitter, first=context.first,
                                    last=context.last, max_missing=context.max_missing)  # fmt: skip
                yield (chain, emitter, scan.stored, scan.lowest, scan.highest,
                       [(r.first, r.last) for r in scan.missing], scan.skipped)  # fmt: skip
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error


Fetched = tuple[int, str, int, str, bytes | None, str]
"""A fetched message: (chain, emitter, sequence, status, VAA bytes or None, reason)."""


def fetch_partition(
    context: TaskContext, chunks: Iterable[tuple[int, str, int, int]]
) -> Iterator[Fetched]:
    """Ask the public API for each sequence of the partition's chunks."""
    read = 0
    with PublicRpcClient(context.public_rpc) as client:
        for chain, emitter, first, last in chunks:
            for result in fetch_missing(client, chain, emitter, [SequenceRange(first, last)]):
                read += 1
                yield (chain, emitter, result.sequence, result.status.value, result.vaa,
                       result.reason)  # fmt: skip
    context.counters.add(read=read)


def files_partition(
    missing: Broadcast[dict[tuple[int, str], list[tuple[int, int]]]],
    counters: ProgressCounters,
    lines: Iterable[Any],
) -> Iterator[Fetched]:
    """The VAAs among the partition's input lines whose id is missing (other lines ignored);
    every line counts as read."""
    wanted = missing.value
    read = 0
    for line in lines:
        read += 1
        try:
            raw, _ = decode_record(line.value, None)
            vaa = parse_vaa(raw)
        except (Refusal, WormholeError):
            continue
        ranges = wanted.get((vaa.emitter_chain, vaa.emitter_address.hex()))
        if ranges and any(first <= vaa.sequence <= last for first, last in ranges):
            yield (vaa.emitter_chain, vaa.emitter_address.hex(), vaa.sequence,
                   FetchStatus.FOUND.value, raw, "")  # fmt: skip
    counters.add(read=read)


Written = tuple[str, int, str, Any, Any, Any]
"""A write task's row: (kind, chain, emitter, a, b, c) with kind ``counts`` (a: the counts),
``refused`` (a: sequence, b: rule, c: reason) or ``conflict`` (a: message id, b: digest)."""


def write_partition(context: TaskContext, phase: str, rows: Iterable[Fetched]) -> Iterator[Written]:
    """Verify and write the found VAAs of the partition that belong to ``phase``."""
    _task_environment(context)
    emitters = all_known_emitters()
    counts: dict[tuple[int, str], dict[str, int]] = {}
    owner: dict[str, tuple[int, str]] = {}
    refused: list[Written] = []

    def tally(plans: Iterable[Any]) -> None:
        for plan in plans:
            into = counts.setdefault(owner[plan.row_key], _zero())
            into[plan.outcome.value] += 1
            if plan.cells:
                into["written"] += 1

    try:
        with BigtableTables(context.location) as tables:
            writer = EventWriter(tables, context.guardian_sets.value, emitters=emitters,
                                 config=context.writer,
                                 signature_cache=executor_signature_cache())  # fmt: skip
            for chain, emitter, sequence, status, raw, _ in rows:
                if status != FetchStatus.FOUND.value or raw is None:
                    continue
                if is_attestation(raw, emitters) != (phase == ASSETS):
                    continue
                counts.setdefault((chain, emitter), _zero())["found"] += 1
                try:
                    item = prepare(writer, raw, None)
                except Refusal as refusal:
                    counts[(chain, emitter)]["refused"] += 1
                    refused.append(("refused", chain, emitter, sequence, refusal.rule,
                                    refusal.reason))  # fmt: skip
                    continue
                owner[item.vaa.row_key] = (chain, emitter)
                tally(writer.submit_prepared(item))
            tally(writer.flush())
            conflicts = list(writer.summary.conflicts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    context.counters.add(written=sum(c["written"] for c in counts.values()), refused=len(refused))
    for (chain, emitter), emitter_counts in counts.items():
        yield ("counts", chain, emitter, emitter_counts, None, None)
    yield from refused
    for message_id, digest in conflicts:
        chain_text, emitter, _ = message_id.split("/")
        yield ("conflict", int(chain_text), emitter, message_id, digest, None)


def _zero() -> dict[str, int]:
    return dict.fromkeys(("found", "new", "updated", "unchanged", "conflicting", "refused",
                          "written"), 0)  # fmt: skip


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
            lines = spark.read.text(plan.files).rdd
        except AnalysisException as error:
            raise JobInputError(f"--files {plan.files}: {str(error).splitlines()[0]}") from None
        wanted = spark.sparkContext.broadcast(missing)
        return lines.mapPartitions(partial(files_partition, wanted, context.counters)).distinct()
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


if __name__ == "__main__":
    import sys

    from chainloom_spark.jobs.gap_backfill import main as imported_main

    sys.exit(imported_main(sys.argv[1:]))
