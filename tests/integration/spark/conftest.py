"""One local SparkSession for the whole Spark test tier (starting a JVM costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[2]``, no UI, two shuffle partitions; skipped when pyspark is not installed."""
    pytest.importorskip(
        "pyspark",
        reason="pyspark is not installed (pip install -e '.[spark]'); Spark tests skipped",
    )
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("chainloom-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()
