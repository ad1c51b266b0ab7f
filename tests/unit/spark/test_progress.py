"""The progress lines every job logs: the counters' values, the rate, one line per interval."""

from __future__ import annotations

import logging
import re
import time

import pytest

from chainloom_spark.progress import Progress, ProgressCounters
from chainloom_spark.runner import LOGGER_NAME


class _Counter:
    """An accumulator's two methods, in memory."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, term: int) -> None:
        self.value += term


def _counters() -> ProgressCounters:
    return ProgressCounters(_Counter(), _Counter(), _Counter())


LINE = re.compile(
    r"^job-x: read (\d+), written (\d+), refused (\d+), [\d,]+ records/s \([\d.]+ s\)$"
)


def test_the_line_shows_the_three_counters_and_a_rate():
    counters = _counters()
    counters.add(read=7, written=5)
    counters.add(read=3, refused=2)
    found = LINE.match(Progress("job-x", counters, 10).line())
    assert found is not None
    assert found.groups() == ("10", "5", "2")


def test_lines_are_logged_every_interval_and_once_at_the_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, LOGGER_NAME):
            counters = _counters()
            with Progress("job-x", counters, 0.05):
                counters.add(read=4)
                deadline = time.monotonic() + 30
                while len(caplog.records) < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)
            lines = [record.getMessage() for record in caplog.records]
    finally:
        logger.removeHandler(caplog.handler)
    assert len(lines) >= 3  # two periodic lines, then the final one
    assert all(LINE.match(line) for line in lines), lines
    assert lines[-1].startswith("job-x: read 4, written 0, refused 0")


def test_no_final_line_when_the_job_fails(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(caplog.handler)
    try:
        with (
            caplog.at_level(logging.INFO, LOGGER_NAME),
            pytest.raises(RuntimeError),
            Progress("job-x", _counters(), 60),
        ):
            raise RuntimeError("boom")
    finally:
        logger.removeHandler(caplog.handler)
    assert caplog.records == []
