"""Building the SparkSession of a job from its settings.

Every job starts Spark here, so the master, the application name, the configuration and the
Python that executors run are chosen one way. ``PYSPARK_PYTHON`` is the interpreter running
the driver: in local mode the executors' Python workers are then the same virtual
environment, chainloom included, so nothing needs shipping. On a cluster the image carries
the same install (docs/spark.md).

A session that already exists in the process (a test suite's, a notebook's) is reused and
left running: :func:`job_session` stops only a session it started.

Starting the driver's JVM can fail on a machine short of memory or processes: PySpark then
reports that the "Java gateway process exited before sending its port number" (it waits for
the JVM to write its port with no time limit, so this is the JVM exiting, not a timeout). A
job tries once more after :data:`START_RETRY_PAUSE` seconds and otherwise ends with one line
(:class:`~chainloom_spark.errors.SparkStartError`, exit 4) instead of a traceback.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from chainloom_spark.errors import SparkStartError
from chainloom_spark.runner import LOGGER_NAME
from chainloom_spark.settings import SparkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

START_ATTEMPTS = 2
"""Tries at starting the driver's JVM before the job gives up (exit 4)."""

START_RETRY_PAUSE = 5.0
"""Seconds between them."""

GATEWAY_EXITED = "JAVA_GATEWAY_EXITED"
"""PySpark's error condition for a JVM that exited before it was up."""

_log = logging.getLogger(LOGGER_NAME)


def app_name(settings: SparkSettings, job: str) -> str:
    """The application name: the configured one, else ``chainloom-<job>``."""
    return settings.app_name or f"chainloom-{job}"


def session_conf(settings: SparkSettings, python: str = sys.executable) -> dict[str, str]:
    """The Spark configuration a job's session gets (pure: settings in, key/values out)."""
    conf = {
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.ui.enabled": "true" if settings.ui else "false",
        # The jobs log their own progress lines; Spark's console bar would garble them.
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
        # toPandas and createDataFrame from pandas, which the jobs do not use; their records
        # cross to Python in Arrow batches through mapInArrow, which this does not govern.
        "spark.sql.execution.arrow.pyspark.enabled": "false",
    }
    conf.update(settings.conf)
    return conf


SUBMIT_ENV = "PYSPARK_GATEWAY_PORT"
"""Set by spark-submit in the Python driver it starts: the master is already chosen."""

DEFAULT_MASTER = "local[*]"
"""The master of a job started outside spark-submit with none configured."""


def master_url(settings: SparkSettings, environ: Mapping[str, str] | None = None) -> str | None:
    """The master to set: the configured one; None under spark-submit; else local[*]."""
    env = os.environ if environ is None else environ
    if settings.master:
        return settings.master
    return None if env.get(SUBMIT_ENV) else DEFAULT_MASTER


@contextmanager
def job_session(settings: SparkSettings, job: str) -> Iterator[SparkSession]:
    """The session for ``job``: the process's active one, or a new one stopped at the end."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(app_name(settings, job))
    master = master_url(settings)
    if master is not None:
        builder = builder.master(master)
    for key, value in session_conf(settings).items():
        builder = builder.config(key, value)
    session = start_session(builder, job)
    session.sparkContext.setLogLevel(settings.log_level)
    try:
        yield session
    finally:
        session.stop()


class SessionBuilder(Protocol):
    """What :func:`start_session` needs of ``SparkSession.builder``."""

    def getOrCreate(self) -> SparkSession: ...  # noqa: N802 - PySpark's name


def start_session(
    builder: SessionBuilder, job: str, pause: float = START_RETRY_PAUSE
) -> SparkSession:
    """``builder.getOrCreate()``, tried again after ``pause`` seconds if the JVM exits before
    it is up; :class:`SparkStartError` if it does so every time."""
    from pyspark.errors import PySparkRuntimeError

    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            return builder.getOrCreate()
        except PySparkRuntimeError as error:
            if error.getCondition() != GATEWAY_EXITED:
                raise
            if attempt == START_ATTEMPTS:
                raise SparkStartError(
                    f"{job}: Spark's driver JVM exited before it was up, {attempt} times "
                    "(not enough memory or processes on this machine? its own output above "
                    "says why)"
                ) from None
            _log.warning("%s: Spark's driver JVM exited before it was up; trying again in "
                         "%.0f s", job, pause)  # fmt: skip
            time.sleep(pause)
    raise AssertionError("unreachable")
