"""A Spark job as its own process (``chainloom spark run``), killed with SIGKILL mid-write.

The kill-and-rerun tests of every job start the driver in its own process group (the driver,
its JVM and its Python workers), wait until it is visibly writing (a progress line in its log
and a condition on the store or the output, never a fixed sleep: the machine may be slow),
kill the whole group at once, and rerun the job in-process on the shared session.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

PROGRESS_INTERVAL = "0.5"
"""Seconds between the killed job's progress lines (the kill waits for one)."""


def job_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment, this checkout on the path, quick progress lines."""
    path = os.pathsep.join(str(REPO / part) for part in ("services", "operator", "spark-apps"))
    return {
        **os.environ,
        "PYTHONPATH": path,
        "CHAINLOOM_PROGRESS_INTERVAL": PROGRESS_INTERVAL,
        **(extra or {}),
    }


@contextlib.contextmanager
def spark_job(
    job: str, argv: list[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``chainloom spark run JOB ARGV`` in its own process group, its stderr in ``log``;
    the group is killed (SIGKILL) when the block ends, if still there."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "chainloom", "spark", "run", job, *argv],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=job_env(env),
            start_new_session=True,
        )
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def progress_lines(log: Path, job: str) -> list[str]:
    """The job's progress lines (``JOB: read N, written N, refused N, R records/s``)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line for line in text.splitlines() if f" {job}: read " in line]


def log_tail(log: Path, lines: int = 20) -> str:
    """The end of the job's log, for a failure message."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def kill_when(
    process: subprocess.Popen[bytes],
    job: str,
    log: Path,
    writing: Callable[[], bool],
    *,
    timeout: float = 300.0,
) -> None:
    """Wait until the job has logged a progress line and ``writing()`` holds, then SIGKILL
    its process group. Fails the test if the job ends first or the time runs out."""
    deadline = time.monotonic() + timeout
    while not (progress_lines(log, job) and writing()):
        if process.poll() is not None:
            pytest.fail(f"{job} ended ({process.returncode}) before the kill:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            pytest.fail(f"{job} was not writing after {timeout:.0f} s:\n{log_tail(log)}")
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
