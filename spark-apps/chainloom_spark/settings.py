"""The Spark jobs' settings: one model for every job, composed of the shared parts.

A job reads the same names as the services it feeds (``CHAINLOOM_BIGTABLE__TABLE`` is the event
store's table for ``chainloom events`` and for ``vaa-ingest`` alike), so a data team points a
job at a store with the settings it already has. Loaded by
:func:`chainloom.settings.load_settings` (defaults < YAML file (``--config`` or
``$CHAINLOOM_SPARK_CONFIG``) < ``CHAINLOOM_...`` environment < the job's flags), and registered
as ``spark`` in :mod:`chainloom.settings.registry` (``chainloom config schema spark``). The
``kubernetes`` section is what ``chainloom spark manifest`` renders into a SparkApplication.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator

from chainloom.ledger.config import DatabaseSettings
from chainloom.settings import (
    BigtableSettings,
    GuardianSetSettings,
    PublicRpcSettings,
    ServiceSettings,
)
from chainloom.settings.parts import Part

MASTER_FORMS = (
    re.compile(r"local"),
    re.compile(r"local\[(\*|[1-9][0-9]*)\]"),
    re.compile(r"local\[(\*|[1-9][0-9]*)\s*,\s*[1-9][0-9]*\]"),
    re.compile(r"local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"),
    re.compile(r"spark://[^\s/:,]+:[0-9]+(,[^\s/:,]+:[0-9]+)*"),
    re.compile(r"k8s://\S+"),
    re.compile(r"yarn"),
)
"""The master URLs Spark's ``SparkContext`` accepts (the forms of its task-scheduler factory),
in ASCII digits: checked before a job touches a table, so a typo is a setting error, not a
Java stack trace after the tables were created."""


def check_master(master: str) -> None:
    """Raise ValueError unless ``master`` is empty (spark-submit's choice) or a Spark master."""
    if master and not any(form.fullmatch(master) for form in MASTER_FORMS):
        raise ValueError(
            f"{master!r} is not a Spark master: local, local[N], local[*], local[N,F], "
            "local-cluster[N,C,M], spark://host:port, k8s://URL or yarn"
        )


class SparkSettings(Part):
    """How the SparkSession is built."""

    master: str = Field(
        default="",
        description="Spark master URL (local[N] runs on this machine); empty means the one "
        "spark-submit (or the Spark operator) gave, else local[*].",
    )
    app_name: str = Field(
        default="", description="Spark application name; empty means 'chainloom-<job>'."
    )
    shuffle_partitions: int = Field(
        default=8, ge=1, description="spark.sql.shuffle.partitions (the data is small per row)."
    )
    ui: bool = Field(default=False, description="Start the Spark web UI (port 4040).")
    log_level: str = Field(
        default="WARN", description="Spark's own log level (the jobs log progress separately)."
    )
    conf: dict[str, str] = Field(
        default_factory=dict,
        description="Extra Spark configuration (key -> value), applied last.",
    )

    @field_validator("master")
    @classmethod
    def _a_spark_master(cls, master: str) -> str:
        check_master(master)
        return master


class WriterSettings(Part):
    """How each partition writes through the event store's writer."""

    flush_rows: int = Field(
        default=500, ge=1, description="Inputs per flush (one ReadRows + one MutateRows)."
    )
    conditional_workers: int = Field(
        default=16,
        ge=1,
        description="Check-and-mutate calls in flight per partition (rows reaching quorum): the "
        "bound on each partition's write concurrency.",
    )
    max_attempts: int = Field(
        default=5, ge=1, description="Attempts per flush before the sink counts as unavailable."
    )


class KubernetesSettings(Part):
    """The SparkApplication that runs a job on Kubernetes (``chainloom spark manifest``)."""

    namespace: str = Field(default="default", min_length=1, description="Namespace of the app.")
    image: str = Field(
        default="chainloom-spark:latest",
        min_length=1,
        description="Image holding chainloom[spark] and a Java runtime (driver and executors): "
        "the Dockerfile's spark target, or chainloom-spark:dev on the stack's node.",
    )
    image_pull_policy: str = Field(default="IfNotPresent", description="imagePullPolicy.")
    service_account: str = Field(
        default="chainloom-spark",
        min_length=1,
        description="Service account of the driver (it creates the executor pods).",
    )
    spark_version: str = Field(default="4.3.0", description="sparkVersion of the application.")
    application_file: str = Field(
        default="local:///opt/chainloom/spark-apps/chainloom_spark/submit.py",
        min_length=1,
        description="mainApplicationFile: chainloom_spark/submit.py inside the image.",
    )
    python: str = Field(
        default="python3", min_length=1, description="The image's Python (spark.pyspark.python)."
    )
    driver_cores: int = Field(default=1, ge=1, description="Driver cores.")
    driver_memory: str = Field(default="1g", description="Driver memory (Spark syntax: 512m, 2g).")
    executor_instances: int = Field(default=2, ge=1, description="Executors.")
    executor_cores: int = Field(default=1, ge=1, description="Cores per executor.")
    executor_memory: str = Field(default="1g", description="Memory per executor.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment of driver and executors (CHAINLOOM_... settings, "
        "BIGTABLE_EMULATOR_HOST); never secrets, which belong in a Secret.",
    )


class SparkJobSettings(ServiceSettings):
    """Everything a Spark job of chainloom needs, whichever job it is."""

    config_file_env: ClassVar[str] = "CHAINLOOM_SPARK_CONFIG"

    spark: SparkSettings = Field(default_factory=SparkSettings, description="The SparkSession.")
    bigtable: BigtableSettings = Field(
        default_factory=BigtableSettings, description="The event store's tables (vaa-ingest)."
    )
    guardian_sets: GuardianSetSettings = Field(
        default_factory=GuardianSetSettings,
        description="Guardian sets the VAAs are verified against.",
    )
    writer: WriterSettings = Field(
        default_factory=WriterSettings, description="Per-partition writes to the event store."
    )
    public_rpc: PublicRpcSettings = Field(
        default_factory=PublicRpcSettings,
        description="Guardian public-API endpoints gap-backfill fetches missing VAAs from.",
    )
    database: DatabaseSettings = Field(
        default_factory=DatabaseSettings, description="The ledger backend (ledger-load)."
    )
    kubernetes: KubernetesSettings = Field(
        default_factory=KubernetesSettings, description="The SparkApplication (manifest)."
    )
    progress_interval: float = Field(
        default=10.0, gt=0, description="Seconds between progress lines on the driver."
    )
