"""Session configuration and the master a job picks."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom_spark.errors import SparkStartError
from chainloom_spark.runner import JobExit, classify
from chainloom_spark.session import (
    DEFAULT_MASTER,
    GATEWAY_EXITED,
    SUBMIT_ENV,
    master_url,
    session_conf,
    start_session,
)
from chainloom_spark.settings import SparkSettings


def test_conf_uses_the_running_python_and_settings_override_last():
    conf = session_conf(
        SparkSettings(shuffle_partitions=3, conf={"spark.sql.shuffle.partitions": "7"}),
        python="/venv/bin/python",
    )
    assert conf["spark.pyspark.python"] == "/venv/bin/python"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.shuffle.partitions"] == "7"


def test_master_configured_else_spark_submit_else_local():
    assert master_url(SparkSettings(master="local[2]"), {}) == "local[2]"
    assert master_url(SparkSettings(), {SUBMIT_ENV: "4040"}) is None
    assert master_url(SparkSettings(), {}) == DEFAULT_MASTER


class _Builder:
    """Fails with ``errors`` (PySpark's exceptions) in turn, then returns a session."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def getOrCreate(self) -> Any:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "session"


def _gateway_exited() -> Exception:
    from pyspark.errors import PySparkRuntimeError

    return PySparkRuntimeError(errorClass=GATEWAY_EXITED, messageParameters={})


def test_a_jvm_that_exits_at_start_up_is_tried_once_more():
    pytest.importorskip("pyspark")
    builder = _Builder(_gateway_exited())
    session: Any = start_session(builder, "vaa-ingest", pause=0)
    assert session == "session"
    assert builder.calls == 2


def test_a_jvm_that_exits_twice_is_one_line_and_exit_4():
    pytest.importorskip("pyspark")
    builder = _Builder(_gateway_exited(), _gateway_exited())
    with pytest.raises(SparkStartError) as raised:
        start_session(builder, "export", pause=0)
    code, line = classify(raised.value)
    assert code == JobExit.UNAVAILABLE
    assert line.startswith("error: export: Spark's driver JVM exited before it was up, 2 times")


def test_other_start_up_errors_are_not_retried():
    pytest.importorskip("pyspark")
    from pyspark.errors import PySparkRuntimeError

    other = PySparkRuntimeError(errorClass="MASTER_URL_NOT_SET", messageParameters={})
    builder = _Builder(other)
    with pytest.raises(PySparkRuntimeError):
        start_session(builder, "export", pause=0)
    assert builder.calls == 1
