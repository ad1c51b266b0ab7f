"""Progress lines every job logs: records read, written and refused, and the rate.

A data team watching a job over months of history needs to see that it moves and how fast,
whichever job it is, so every job counts the same three things and logs them the same way:
tasks add to three Spark accumulators (:class:`ProgressCounters`, shipped with the task), the
driver may add what it learns itself (a commit, a join's verdicts), and a driver thread
(:class:`Progress`) logs ``JOB: read N, written N, refused N, R records/s (T s)`` every
``progress_interval`` seconds and once at the end. Spark merges a task's accumulator updates
when the task finishes, so the counts move in steps of whole partitions.

What "read", "written" and "refused" mean per job is in docs/spark.md.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from chainloom_spark.runner import LOGGER_NAME

if TYPE_CHECKING:
    from pyspark import SparkContext

_log = logging.getLogger(LOGGER_NAME)


class Counter(Protocol):
    """What the progress lines need of a counter (a Spark accumulator of ints)."""

    @property
    def value(self) -> int: ...

    def add(self, term: int) -> None: ...


@dataclass(frozen=True)
class ProgressCounters:
    """The three counters of a job, added to by tasks and by the driver."""

    read: Counter
    """Records read from the job's input."""
    written: Counter
    """Records that changed the job's output."""
    refused: Counter
    """Records the job would not write (bad input, nothing to write them with)."""

    @classmethod
    def create(cls, context: SparkContext) -> ProgressCounters:
        """Three new accumulators of ``context``."""
        return cls(context.accumulator(0), context.accumulator(0), context.accumulator(0))

    def add(self, read: int = 0, written: int = 0, refused: int = 0) -> None:
        """Add to the counters (in a task: sent to the driver when the task finishes)."""
        for counter, term in ((self.read, read), (self.written, written),
                              (self.refused, refused)):  # fmt: skip
            if term:
                counter.add(term)


class Progress:
    """A driver thread logging the counters every ``interval`` seconds, and once at the end
    of a ``with`` block that did not fail."""

    def __init__(self, job: str, counters: ProgressCounters, interval: float) -> None:
        self.job = job
        """The job's name, at the start of each line."""
        self.counters = counters
        """What the lines show."""
        self.interval = interval
        """Seconds between lines."""
        self.started = time.monotonic()
        """When the job started (the rate's origin)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)

    def line(self) -> str:
        """``JOB: read N, written N, refused N, R records/s (T s)``."""
        read = self.counters.read.value
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return (
            f"{self.job}: read {read}, written {self.counters.written.value}, "
            f"refused {self.counters.refused.value}, {read / elapsed:,.0f} records/s "
            f"({elapsed:.1f} s)"
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            _log.info(self.line())

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._stop.set()
        self._thread.join()
        if kind is None:
            _log.info(self.line())
