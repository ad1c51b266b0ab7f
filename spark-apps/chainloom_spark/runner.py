"""Running a job's body and turning how it ended into an exit code and one line.

``chainloom spark run`` and ``spark-submit`` both call a job's ``main(argv)``; neither has the
CLI's error boundary around it, so :func:`run_job` is the jobs' own: the codes are those of
docs/exit-codes.md (0 ok, 2 bad input, 3 conflict, 4 unavailable, 1 a bug, 130 interrupted),
and the line never carries a traceback unless ``CHAINLOOM_DEBUG=1``.

The driver's stages are spans (:func:`traced_job`, :func:`stage`): a ``spark.job`` root per run,
``spark.read``, ``spark.verify_write``, ``spark.summary`` and the like under it, the root
carrying the summary's counts (:func:`record_counts`), exported when the standard ``OTEL_*``
variables ask for it (``chainloom.telemetry.setup``); with nothing configured they cost one
function call each. Executors' tasks are not traced: their Python workers never call
``telemetry.setup``, and a span per partition would say little the summary does not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from enum import IntEnum
from typing import Any, Protocol, TypeVar

from opentelemetry import trace

from chainloom import telemetry
from chainloom.errors import ChainloomError, ConflictError, UnavailableError
from chainloom.settings import SettingsError
from chainloom_spark.errors import SINK_UNAVAILABLE_MARK, JobArgumentError
from chainloom_spark.termination import write_termination_message

DEBUG_ENV = "CHAINLOOM_DEBUG"
"""Set to ``1`` to print the traceback of a failed job (the exit code is unchanged)."""

LOGGER_NAME = "chainloom_spark"
"""The logger every job writes its progress to."""
_tracer = trace.get_tracer("chainloom.spark")


class JobExit(IntEnum):
    """A job's exit codes (the table of docs/exit-codes.md)."""

    OK = 0
    """Finished; refused inputs (if any) are in the summary and the dead letter."""
    FAILED = 1
    """An unexpected error: a bug."""
    BAD_INPUT = 2
    """A bad flag or setting, a missing or unreadable input."""
    CONFLICT = 3
    """Input contradicts stored data in a way the job cannot keep."""
    UNAVAILABLE = 4
    """The store (or another server) cannot be reached."""
    INTERRUPTED = 130
    """Stopped by SIGINT or SIGTERM."""


def setup_logging() -> logging.Logger:
    """The jobs' logger, writing ``time job: message`` lines to stderr (set up once)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def classify(error: BaseException) -> tuple[JobExit, str]:
    """The exit code and the one line for an error that ended a job."""
    if isinstance(error, KeyboardInterrupt):
        return JobExit.INTERRUPTED, "interrupted"
    if isinstance(error, ConflictError):
        return JobExit.CONFLICT, f"error: {error}"
    if isinstance(error, UnavailableError):
        return JobExit.UNAVAILABLE, f"error: {_one_line(error)}"
    if isinstance(error, ChainloomError):
        return JobExit.BAD_INPUT, f"error: {_one_line(error)}"
    text = str(error)
    if SINK_UNAVAILABLE_MARK in text:
        # Raised in a task: Spark hands the driver the worker's traceback as text.
        line = text[text.index(SINK_UNAVAILABLE_MARK) :].splitlines()[0]
        return JobExit.UNAVAILABLE, f"error: {line}"
    return JobExit.FAILED, (
        f"internal error: {type(error).__name__}: {_one_line(error)} "
        f"(set {DEBUG_ENV}=1 for the traceback)"
    )


def run_job(body: Callable[[], int]) -> int:
    """Run ``body`` and return its exit code, or the code of the error that ended it."""
    try:
        return body()
    except (Exception, KeyboardInterrupt) as error:
        code, line = classify(error)
        if os.environ.get(DEBUG_ENV) == "1":
            traceback.print_exception(error, file=sys.stderr)
        print(line, file=sys.stderr)
        return int(code)


def service_name(job: str) -> str:
    """The default ``service.name`` of a job's driver (``chainloom-spark-<job>``; the operator
    sets the same in the SparkApplications it renders)."""
    return f"chainloom-spark-{job}"


@contextlib.contextmanager
def traced_job(job: str) -> Iterator[trace.Span]:
    """Run a job's body under a ``spark.job`` span (``chainloom.job``), exporting its spans
    when ``OTEL_*`` asks (default ``service.name``: ``chainloom-spark-<job>``); the spans still
    buffered are sent before it returns. Yields the span (a non-recording one while tracing is
    off), for :func:`record_counts`."""
    observed = telemetry.setup(service_name(job))
    try:
        with telemetry.start_span(_tracer, "spark.job", attributes={"chainloom.job": job}) as span:
            yield span
    finally:
        observed.shutdown()


def count_attributes(document: Mapping[str, Any]) -> dict[str, int]:
    """The counts of a summary's JSON document as span attributes: every top-level integer
    (``read``, ``new``, ``written``, ``refused``, ``ledgers``, ...) as ``chainloom.<name>``."""
    return {
        f"chainloom.{name}": value
        for name, value in document.items()
        if isinstance(value, int) and not isinstance(value, bool)
    }


def record_counts(span: trace.Span, document: Mapping[str, Any]) -> None:
    """Put a summary's counts (:func:`count_attributes`) on the job's span."""
    if span.is_recording():
        span.set_attributes(count_attributes(document))


def stage(name: str, **attributes: str | int) -> AbstractContextManager[trace.Span]:
    """A span ``spark.<name>`` for one driver-side stage (a no-op while tracing is off)."""
    return telemetry.start_span(_tracer, f"spark.{name}", attributes=attributes or None)


class Summary(Protocol):
    """What a Bigtable job's ``run`` returns: lines to print, and its JSON form."""

    def lines(self) -> list[str]: ...

    def as_dict(self) -> dict[str, Any]: ...

    def write_json(self, path: str) -> None: ...


class Plan(Protocol):
    """What a Bigtable job's ``resolve`` returns, as far as :func:`run_table_job` reads it."""

    @property
    def summary_path(self) -> str | None: ...


P = TypeVar("P", bound=Plan)


def run_table_job(
    argv: list[str] | None,
    resolve: Callable[[list[str] | None], P],
    run: Callable[[P], Summary],
    job: str = "job",
) -> int:
    """The ``main`` of a job over the events table: resolve its flags and settings, run it,
    print its summary (and write it where the plan's ``summary_path`` says, and as the
    container's termination message: :mod:`chainloom_spark.termination`), within
    :func:`run_job`'s error boundary; ``job`` names its spans' service (:func:`traced_job`)."""
    setup_logging()
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)

    def body() -> int:
        try:
            plan = resolve(argv)
        except SettingsError as error:
            raise JobArgumentError(str(error)) from None
        with traced_job(job) as span:
            summary = run(plan)
            with stage("summary"):
                document = summary.as_dict()
                record_counts(span, document)
                for line in summary.lines():
                    print(line)
                if plan.summary_path:
                    summary.write_json(plan.summary_path)
                write_termination_message(document)
        return 0

    return run_job(body)


def _one_line(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
