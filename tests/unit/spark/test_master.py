"""``spark.master`` takes the master URLs Spark accepts, and nothing else, before a job starts."""

from __future__ import annotations

import pytest

from chainloom_spark.settings import SparkSettings, check_master


@pytest.mark.parametrize(
    "master",
    [
        "",
        "local",
        "local[1]",
        "local[16]",
        "local[*]",
        "local[2,3]",
        "local[*, 4]",
        "local-cluster[2, 1, 1024]",
        "spark://host:7077",
        "spark://a:7077,b:7077",
        "k8s://https://kubernetes.default.svc:443",
        "yarn",
    ],
)
def test_spark_masters_are_accepted(master: str):
    check_master(master)
    assert SparkSettings(master=master).master == master


@pytest.mark.parametrize(
    "master", ["local[x]", "local[0]", "local[]", "local[\u0662]", "spark://host", "mesos", "lokal"]
)
def test_other_masters_are_refused_naming_the_forms(master: str):
    with pytest.raises(ValueError, match="is not a Spark master: local"):
        check_master(master)
    with pytest.raises(ValueError, match="master"):
        SparkSettings(master=master)
