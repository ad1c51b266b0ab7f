"""Errors of the Spark jobs, and the exit code each one ends a job with.

A job is run by ``chainloom spark run`` and by ``spark-submit`` alike, so it cannot rely on the
CLI's error boundary: :func:`chainloom_spark.runner.run_job` maps these (and the library's own
markers) to the codes of docs/exit-codes.md itself::

    SparkJobError                      (a ChainloomError)
    ├── JobArgumentError               a bad flag or setting                      exit 2
    ├── JobInputError                  the input is missing or unreadable         exit 2
    ├── JobOutputError                 the output path cannot be written          exit 2
    ├── SinkUnavailableError           the store cannot be reached (UnavailableError) exit 4
    └── SparkStartError                the local Spark driver (its JVM) did not start   exit 4

An error raised inside a task reaches the driver as text only (Spark carries the worker's
traceback, not the object), so a task wraps an outage in :class:`SinkUnavailableError` whose
message starts with :data:`SINK_UNAVAILABLE_MARK`, and the driver looks for that mark.
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError

SINK_UNAVAILABLE_MARK = "[sink unavailable]"
"""Start of the message of a :class:`SinkUnavailableError` raised in a task."""


class SparkJobError(ChainloomError):
    """Base class of the Spark jobs' errors."""


class JobArgumentError(SparkJobError):
    """A flag or setting of the job is invalid (exit 2)."""


class JobInputError(SparkJobError):
    """The job's input cannot be read: missing, not a supported format (exit 2)."""


class JobOutputError(SparkJobError):
    """The job's output (a dataset path) cannot be written: permissions, a file in the way
    (exit 2)."""


class SinkUnavailableError(SparkJobError, UnavailableError):
    """The store the job writes to cannot be reached (exit 4)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{SINK_UNAVAILABLE_MARK} {reason}")
        self.reason = reason
        """What failed, without the mark."""


class SparkStartError(SparkJobError, UnavailableError):
    """The JVM of a local Spark driver exited before it was up, twice (exit 4): a resource
    of the machine (memory, processes) ran short; the JVM's own output above says which."""
