"""ledger-load: an XRPL ledger dump into Cassandra (or SQLite) with Spark executors writing.

Why it is split the way it is: the ledger ETL's checks are of two kinds. Some need the whole
history before a ledger -- the sequence, the parent hash, the state diff against the key set,
and the successor rows, which depend on every key that exists before the ledger. Those are
cheap and run on the driver, in order, with the ETL's own functions
(:mod:`chainloom.ledger.etl`). The rest need only the ledger itself -- the transaction tree
root, every transaction and metadata blob, the ``account_tx`` and NFT rows -- and, with the
writes, are where the time goes. The driver cuts the dump into batches of consecutive ledgers,
each batch into ``--partitions`` ranges, and ships every ledger with its precomputed successor
rows to the executors, which check and write their range through
:class:`~chainloom.ledger.backend.BackendInterface` and flush it without touching the range.

The ``ledger_range`` fence moves only on the driver, ledger by ledger in order, once every
partition of a batch has reported: a failed or killed job leaves written-but-invisible rows
(exactly what a crashed ETL leaves), and a rerun resumes after the stored range, rebuilding the
key set from the store as the ETL does, and rewrites those ledgers (every write is an
idempotent upsert). So the tables come out identical to the sequential ETL's.

The first ledger of an empty store (the full state) is written and committed by the driver
before any executor starts: a backend writes ``diff`` rows only once a range exists.

Settings come from two models: the database from the ledger settings, read as ``chainloom
ledger load`` reads them (``--config`` / ``$CHAINLOOM_LEDGER_CONFIG``), and the SparkSession
from the jobs' shared ``spark`` settings through :func:`chainloom_spark.session.job_session`,
as every job builds it (``$CHAINLOOM_SPARK_CONFIG``, ``CHAINLOOM_SPARK__...``, ``--master``).

SQLite: executors' writers to one file take turns on its write lock (each ledger is one
transaction), so a SQLite load gains nothing from more partitions; it is for local runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from chainloom.errors import ConflictError
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import LedgerSettings
from chainloom.ledger.errors import (
    BackendError,
    LedgerConfigError,
    LedgerError,
    LedgerInputError,
    LedgerIntegrityError,
)
from chainloom.ledger.etl import (
    apply_diff,
    check_next_header,
    check_transactions,
    classify_diff,
    diff_rows,
    parse_header,
    prepare_initial,
    resume_point,
    state_after_diff,
    write_rows,
)
from chainloom.ledger.service import open_backend
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.types import LedgerHeader
from chainloom.settings import load_settings
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import record_counts, run_job, setup_logging, stage, traced_job
from chainloom_spark.session import job_session
from chainloom_spark.settings import SparkJobSettings
from chainloom_spark.termination import write_termination_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from chainloom.ledger.successor import SuccessorTracker

LOG = logging.getLogger("chainloom_spark.ledger_load")

JOB = "ledger-load"
"""The job's name."""

DEFAULT_BATCH = 64
"""Ledgers per Spark job: the fence moves after each; two batches bound the driver's memory."""


@dataclass(frozen=True, slots=True)
class LedgerTask:
    """One ledger as shipped to an executor."""

    ledger: SourceLedger
    """The dump's record (header, transactions, state diff)."""
    successors: list[tuple[bytes, bytes]]
    """Its successor rows, computed by the driver from the state before it."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What an executor did with one range of ledgers."""

    first: int
    """The range's first ledger."""
    last: int
    """The range's last ledger."""
    written_through: int
    """Every ledger from ``first`` up to this one is written and flushed (``first - 1``:
    none)."""
    transactions: int
    """Transactions written."""
    objects: int
    """Object versions written."""
    refused: str | None = None
    """Why the ledger after ``written_through`` was refused (bad input)."""
    unavailable: str | None = None
    """Why the database failed (an outage)."""


@dataclass(slots=True)
class LoadSummary:
    """What a run did."""

    resumed_from: int | None = None
    """The stored range's max the run resumed after (``None``: an empty store)."""
    first_committed: int | None = None
    """The first ledger this run committed."""
    last_committed: int | None = None
    """The last ledger this run committed."""
    ledgers: int = 0
    """Ledgers committed."""
    transactions: int = 0
    """Transactions written."""
    objects: int = 0
    """Object versions written."""
    seconds: float = 0.0
    """Wall time."""
    batches: list[float] = field(default_factory=list)
    """Seconds each Spark job took."""

    @property
    def ledgers_per_second(self) -> float:
        """Committed ledgers per second."""
        return self.ledgers / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The counts (and the committed range, where there is one) as a JSON document."""
        committed = {
            name: value
            for name, value in (("first_committed", self.first_committed),
                                ("last_committed", self.last_committed))
            if value is not None
        }  # fmt: skip
        return {
            "job": JOB,
            "ledgers": self.ledgers,
            "transactions": self.transactions,
            "objects": self.objects,
            **committed,
            "seconds": round(self.seconds, 3),
        }

    def line(self) -> str:
        """One line for the log."""
        if self.last_committed is None:
            return f"nothing to load (the store ends at ledger {self.resumed_from})"
        return (
            f"committed ledgers {self.first_committed}..{self.last_committed}: "
            f"{self.ledgers} ledgers, {self.transactions} transactions, {self.objects} "
            f"objects in {self.seconds:.1f} s ({self.ledgers_per_second:.1f} ledgers/s)"
        )


# ---------------------------------------------------------------------- executors


_BACKENDS: dict[str, BackendInterface] = {}
"""One open backend per executor process and database (Python workers are reused)."""


def _executor_backend(settings: LedgerSettings) -> BackendInterface:
    key = settings.database.model_dump_json()
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = open_backend(settings)
        _BACKENDS[key] = backend
    # A range exists (the driver committed the first ledger); reading it makes the backend
    # write the ``diff`` rows a later ledger has.
    backend.hard_fetch_ledger_range()
    return backend


def write_partition(
    settings: LedgerSettings,
) -> Callable[[Iterable[LedgerTask]], Iterator[PartitionReport]]:
    """The executor side: check and write a range of ledgers, flush, report."""

    def run(tasks: Iterable[LedgerTask]) -> Iterator[PartitionReport]:
        batch = list(tasks)
        if not batch:
            return
        first = parse_header(batch[0].ledger.header).sequence
        last = first + len(batch) - 1
        written = current = first - 1
        transactions = objects = 0
        per_ledger_commit = settings.database.type == "sqlite"
        backend: BackendInterface | None = None
        try:
            backend = _executor_backend(settings)
            for task in batch:
                current += 1
                header = parse_header(task.ledger.header)
                checked = check_transactions(header, task.ledger)
                prepared = diff_rows(header, task.ledger, task.successors, checked=checked)
                try:
                    write_rows(backend, prepared)
                    if per_ledger_commit:
                        backend.flush_writes()
                except BaseException:
                    backend.abandon_writes()
                    raise
                if per_ledger_commit:
                    written = header.sequence
                transactions += len(prepared.transactions)
                objects += len(prepared.objects)
            backend.flush_writes()
            written = last
        except BackendError as failed:
            yield PartitionReport(
                first, last, written, transactions, objects, unavailable=str(failed)
            )
            return
        except LedgerError as refused:
            try:
                if backend is not None:
                    backend.flush_writes()
                    written = current - 1
            except BackendError as failed:
                yield PartitionReport(
                    first, last, written, transactions, objects, unavailable=str(failed)
                )
                return
            yield PartitionReport(first, last, written, transactions, objects, refused=str(refused))
            return
        yield PartitionReport(first, last, written, transactions, objects)

    return run


# ---------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """What a run loads, where, and how wide."""

    dump: Path
    """The ledger dump (JSON lines)."""
    settings: LedgerSettings
    """The backend's settings."""
    partitions: int
    """Ledger ranges per batch (executor tasks)."""
    batch: int = DEFAULT_BATCH
    """Ledgers per Spark job."""
    verify_state: bool = False
    """Also check every ledger's ``account_hash`` (the whole state kept in driver memory)."""


@dataclass(frozen=True, slots=True)
class _BatchResult:
    """One Spark job's outcome."""

    ledgers: int
    """Ledgers handed out."""
    reports: list[PartitionReport]
    """Each partition's report, in ledger order."""
    seconds: float
    """How long the job took."""


class LedgerLoad:
    """The driver: sequential checks and successor rows, batches to executors, the fence.

    Its :attr:`counters` count ledgers: read (checked by the driver), written (committed:
    the range moved over them) and refused.
    """

    def __init__(
        self,
        spark: SparkSession,
        options: LoadOptions,
        backend: BackendInterface | None = None,
    ) -> None:
        self._spark = spark
        self._options = options
        self._source = FileLedgerSource(options.dump)
        self._backend = open_backend(options.settings) if backend is None else backend
        self.counters = ProgressCounters.create(spark.sparkContext)
        """Ledgers read, committed and refused (for progress lines)."""
        self._tracker: SuccessorTracker | None = None
        self._leaves: dict[bytes, bytes] | None = None
        self._previous: LedgerHeader | None = None
        self.summary = LoadSummary()

    def close(self) -> None:
        """Release the driver's backend."""
        self._backend.close()

    def run(self) -> LoadSummary:
        """Load the dump after the stored range; raises the first refusal once everything
        before it is committed."""
        started = time.monotonic()
        try:
            self._start()
            self._follow()
        finally:
            self.summary.seconds = time.monotonic() - started
        return self.summary

    def _start(self) -> None:
        stored = self._backend.hard_fetch_ledger_range()
        verify = self._options.verify_state
        if stored is not None:
            self.summary.resumed_from = stored.max_sequence
            point = resume_point(self._backend, stored.max_sequence, verify_state=verify)
            self._tracker, self._previous, self._leaves = point.tracker, point.header, point.leaves
            first = self._source.first_sequence()
            if first > stored.max_sequence + 1:
                raise LedgerIntegrityError(
                    f"ledger {stored.max_sequence + 1}: the store ends at ledger "
                    f"{stored.max_sequence} but the dump starts at {first}; ledgers in between "
                    "are missing",
                    sequence=stored.max_sequence + 1,
                )
            return
        ledger = self._source.fetch_full(self._source.first_sequence())
        prepared, tracker, leaves = prepare_initial(ledger)
        try:
            write_rows(self._backend, prepared)
        except BaseException:
            self._backend.abandon_writes()
            raise
        self._commit(prepared.header.sequence)
        self._tracker, self._previous = tracker, prepared.header
        self._leaves = leaves if verify else None
        self.summary.transactions += len(prepared.transactions)
        self.summary.objects += len(prepared.objects)

    def _follow(self) -> None:
        """Check ledgers in order and hand them out in batches. Pipelined like the ETL: batch
        k is written by the executors while the driver checks batch k + 1; k + 1 is submitted
        only once k is committed, so at most one batch is ever in flight."""
        pending: list[LedgerTask] = []
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-load") as pool:
            in_flight: Future[_BatchResult] | None = None
            while True:
                try:
                    task = self._check_next()
                except LedgerError:
                    self.counters.add(refused=1)
                    # Refused input at ledger n: everything before it is still good.
                    in_flight = self._submit(pool, in_flight, pending)
                    self._settle(in_flight)
                    raise
                if task is None:
                    break
                self.counters.add(read=1)
                pending.append(task)
                if len(pending) >= self._options.batch:
                    in_flight = self._submit(pool, in_flight, pending)
                    pending = []
            in_flight = self._submit(pool, in_flight, pending)
            self._settle(in_flight)

    def _check_next(self) -> LedgerTask | None:
        """The next ledger checked against the history before it, with its successor rows;
        None at the end of the dump."""
        tracker, previous = self._tracker, self._previous
        assert tracker is not None
        assert previous is not None
        expected = previous.sequence + 1
        ledger = self._source.fetch_diff(expected)
        if ledger is None:
            return None
        header = check_next_header(ledger, expected, previous)
        created, deleted, bases = classify_diff(tracker, ledger.objects, expected)
        if self._leaves is not None:
            self._leaves = state_after_diff(self._leaves, header, ledger.objects)
        successors = apply_diff(tracker, expected, created, deleted, bases)
        self._previous = header
        return LedgerTask(ledger, successors)

    def _submit(
        self,
        pool: ThreadPoolExecutor,
        in_flight: Future[_BatchResult] | None,
        tasks: list[LedgerTask],
    ) -> Future[_BatchResult] | None:
        """Commit the batch in flight, then start writing ``tasks``."""
        self._settle(in_flight)
        if not tasks:
            return None
        return pool.submit(self._write_batch, tasks)

    def _write_batch(self, tasks: list[LedgerTask]) -> _BatchResult:
        """One Spark job: ``tasks`` cut into consecutive ranges, one partition each."""
        started = time.monotonic()
        width = max(1, min(self._options.partitions, len(tasks)))
        size = -(-len(tasks) // width)
        ranges = [tasks[i : i + size] for i in range(0, len(tasks), size)]
        rdd = self._spark.sparkContext.parallelize(ranges, len(ranges)).flatMap(lambda r: r)
        reports = sorted(
            rdd.mapPartitions(write_partition(self._options.settings)).collect(),
            key=lambda r: r.first,
        )
        return _BatchResult(len(tasks), reports, time.monotonic() - started)

    def _settle(self, in_flight: Future[_BatchResult] | None) -> None:
        """Wait for a batch and move the fence through what its partitions wrote, in order;
        raise the first refusal or outage a partition reported."""
        if in_flight is None:
            return
        result = in_flight.result()
        problem: LedgerError | None = None
        for report in result.reports:
            for sequence in range(report.first, report.written_through + 1):
                self._commit(sequence)
            self.summary.transactions += report.transactions
            self.summary.objects += report.objects
            if report.unavailable is not None:
                problem = BackendError(report.unavailable)
            elif report.refused is not None:
                self.counters.add(refused=1)
                problem = LedgerIntegrityError(report.refused, sequence=report.written_through + 1)
            if problem is not None or report.written_through < report.last:
                break
        self.summary.batches.append(result.seconds)
        LOG.info(
            "%s: ledgers %d..%d: %d ledgers written in %.2f s (%.1f ledgers/s), committed "
            "through %s",
            JOB,
            result.reports[0].first,
            result.reports[-1].last,
            result.ledgers,
            result.seconds,
            result.ledgers / result.seconds if result.seconds > 0 else 0.0,
            self.summary.last_committed,
        )
        if problem is not None:
            raise problem

    def _commit(self, sequence: int) -> None:
        if not self._backend.finish_writes(sequence):
            found = self._backend.hard_fetch_ledger_range()
            shown = "nothing" if found is None else str(found.max_sequence)
            raise LedgerWriteConflictError(
                f"write conflict: another writer advanced the range to {shown} while this "
                f"job wrote ledger {sequence}"
            )
        if self.summary.first_committed is None:
            self.summary.first_committed = sequence
        self.summary.last_committed = sequence
        self.summary.ledgers += 1
        self.counters.add(written=1)


class LedgerWriteConflictError(LedgerError, ConflictError):
    """Another writer moved the range while this job wrote (exit 3)."""


# ---------------------------------------------------------------------- entry point


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so a bad flag is exit 2 through run_job."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(f"{self.prog}: {message}")


def parser() -> argparse.ArgumentParser:
    """The job's command line."""
    parser = _Parser(prog=JOB, description="Load an XRPL ledger dump with Spark executors.")
    parser.add_argument("--input", required=True, type=Path, help="The ledger dump (JSON lines).")
    parser.add_argument("--config", help="A ledger settings YAML file (CHAINLOOM_LEDGER_CONFIG).")
    parser.add_argument("--backend", choices=["sqlite", "cassandra"], help="database.type")
    parser.add_argument("--sqlite", help="database.sqlite.path")
    parser.add_argument("--cassandra-hosts", help="host[:port],... (database.cassandra.hosts)")
    parser.add_argument("--keyspace", help="database.cassandra.keyspace")
    parser.add_argument(
        "--replication-factor", type=int, help="database.cassandra.replication_factor"
    )
    parser.add_argument(
        "--partitions", type=int, help="Ledger ranges per batch (default: Spark's parallelism)."
    )
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH, help="Ledgers per Spark job (fence step)."
    )
    parser.add_argument("--verify-state", action="store_true", help="Check every account_hash.")
    parser.add_argument(
        "--master", help="Spark master (spark.master; default: spark-submit's, else local[*])."
    )
    return parser


def ledger_settings(args: argparse.Namespace) -> LedgerSettings:
    """The flags over ``--config`` and the environment, as ``chainloom ledger load`` reads
    them."""
    flags: dict[str, Any] = {
        "database.type": args.backend,
        "database.sqlite.path": args.sqlite,
        "database.cassandra.keyspace": args.keyspace,
        "database.cassandra.replication_factor": args.replication_factor,
    }
    if args.cassandra_hosts:
        hosts: list[str] = []
        for entry in args.cassandra_hosts.split(","):
            host, _, port = entry.strip().partition(":")
            if port:
                if not port.isdigit():
                    raise LedgerConfigError(f"--cassandra-hosts: bad port in {entry!r}")
                flags["database.cassandra.port"] = int(port)
            hosts.append(host)
        flags["database.cassandra.hosts"] = hosts
    return load_settings(LedgerSettings, config_file=args.config, flags=flags)


def main(argv: list[str] | None = None) -> int:
    """Run the job; the exit code of the project's table (0, 1, 2, 3, 4)."""
    setup_logging()
    return run_job(lambda: _load(argv))


def _load(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.partitions is not None and args.partitions < 1:
        raise JobArgumentError("--partitions must be at least 1")
    if args.batch < 1:
        raise JobArgumentError("--batch must be at least 1")
    settings = ledger_settings(args)
    if not args.input.exists():
        raise LedgerInputError(f"--input: ledger dump {args.input} does not exist")
    if not args.input.is_file():
        raise LedgerInputError(f"--input: ledger dump {args.input} is not a file")
    spark_settings = load_settings(SparkJobSettings, flags={"spark.master": args.master})
    # The database first: one that cannot be reached or used fails before Spark starts.
    backend = open_backend(settings)
    load: LedgerLoad | None = None
    try:
        with traced_job(JOB) as span, job_session(spark_settings.spark, JOB) as spark:
            options = LoadOptions(
                dump=args.input,
                settings=settings,
                partitions=args.partitions or spark.sparkContext.defaultParallelism,
                batch=args.batch,
                verify_state=args.verify_state,
            )
            load = LedgerLoad(spark, options, backend)
            # Read, verified and written by the driver and the executors, pipelined.
            with Progress(JOB, load.counters, spark_settings.progress_interval), stage("load"):
                summary = load.run()
            with stage("summary"):
                document = summary.as_dict()
                record_counts(span, document)
                write_termination_message(document)
    finally:
        if load is not None:
            LOG.info("%s: %s", JOB, load.summary.line())
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
