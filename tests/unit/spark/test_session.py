"""Session configuration and the master a job picks."""

from __future__ import annotations

from chainloom_spark.session import DEFAULT_MASTER, SUBMIT_ENV, master_url, session_conf
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
