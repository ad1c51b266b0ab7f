"""The SparkApplication renderer: settings and arguments in, the manifest as data out."""

from __future__ import annotations

from chainloom.settings import BigtableSettings
from chainloom_spark.manifest import API_VERSION, render_application, render_driver_access
from chainloom_spark.settings import KubernetesSettings, SparkJobSettings, SparkSettings

ARGS = ["--input", "s3a://bucket/vaas/", "--table", "wormhole-events"]


def test_defaults_render_a_runnable_application():
    doc = render_application("vaa-ingest", ARGS, SparkJobSettings())
    assert doc["apiVersion"] == API_VERSION == "sparkoperator.k8s.io/v1beta2"
    assert doc["kind"] == "SparkApplication"
    assert doc["metadata"]["name"] == "chainloom-vaa-ingest"
    spec = doc["spec"]
    assert spec["type"] == "Python"
    assert spec["mainApplicationFile"].endswith("chainloom_spark/submit.py")
    assert spec["arguments"] == ["vaa-ingest", *ARGS]
    assert spec["image"] == "chainloom-spark:latest"
    assert spec["sparkConf"]["spark.pyspark.python"] == "python3"
    assert "spark.ui.enabled" not in spec["sparkConf"]
    assert spec["driver"]["serviceAccount"] == "chainloom-spark"
    assert "env" not in spec["driver"]
    assert "envVars" not in spec["driver"]


def test_settings_choose_image_resources_conf_and_env():
    settings = SparkJobSettings(
        spark=SparkSettings(app_name="backfill", conf={"spark.executor.extraJavaOptions": "-X"}),
        bigtable=BigtableSettings(project="prod", instance="events"),
        kubernetes=KubernetesSettings(
            namespace="data",
            image="registry/chainloom:1.2",
            driver_memory="2g",
            executor_instances=5,
            executor_cores=2,
            executor_memory="4g",
            env={"CHAINLOOM_SPARK__LOG_LEVEL": "INFO"},
        ),
    )
    doc = render_application("vaa-ingest", ARGS, settings, name="ingest-2024")
    spec = doc["spec"]
    assert doc["metadata"] == {
        "name": "ingest-2024",
        "namespace": "data",
        "labels": {
            "app.kubernetes.io/name": "chainloom",
            "app.kubernetes.io/component": "spark-job",
            "chainloom.io/job": "vaa-ingest",
        },
    }
    assert spec["image"] == "registry/chainloom:1.2"
    assert spec["driver"]["memory"] == "2g"
    assert (spec["executor"]["instances"], spec["executor"]["cores"]) == (5, 2)
    assert spec["executor"]["memory"] == "4g"
    assert spec["sparkConf"]["spark.executor.extraJavaOptions"] == "-X"
    env = spec["executor"]["envVars"]
    assert env == {
        "CHAINLOOM_BIGTABLE__PROJECT": "prod",
        "CHAINLOOM_BIGTABLE__INSTANCE": "events",
        "CHAINLOOM_SPARK__LOG_LEVEL": "INFO",
    }
    assert spec["driver"]["envVars"] == spec["executor"]["envVars"]
    assert spec["driver"]["envVars"] is not spec["executor"]["envVars"]  # no YAML aliases
    assert "env" not in spec["driver"]  # applied only by the spark-operator's webhook


def test_the_driver_gets_a_service_account_allowed_to_run_its_executors():
    settings = SparkJobSettings(kubernetes=KubernetesSettings(namespace="data"))
    account, role, binding = render_driver_access(settings)
    assert (account["kind"], account["metadata"]["name"]) == ("ServiceAccount", "chainloom-spark")
    application = render_application("vaa-ingest", ARGS, settings)
    assert application["spec"]["driver"]["serviceAccount"] == account["metadata"]["name"]
    assert {doc["metadata"]["namespace"] for doc in (account, role, binding)} == {"data"}
    (rule,) = role["rules"]
    assert {"pods", "services", "configmaps"} <= set(rule["resources"])
    assert {"create", "watch", "delete"} <= set(rule["verbs"])
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "chainloom-spark", "namespace": "data"}
    ]


def test_a_secured_cassandra_travels_as_names_and_paths(monkeypatch):
    from chainloom.ledger.config import LedgerSettings
    from chainloom.settings import CassandraSettings, load_settings
    from chainloom.settings.parts import CassandraTlsSettings

    cassandra = CassandraSettings(
        keyspace="ledger",
        replication_strategy="NetworkTopologyStrategy",
        datacenter_replication={"dc1": 3},
        local_datacenter="dc1",
        username="etl",
        password_file="/var/run/secrets/cassandra/password",
        tls=CassandraTlsSettings(enabled=True, ca_file="/var/run/secrets/cassandra/ca.crt"),
    )
    settings = SparkJobSettings.model_validate(
        {"database": {"type": "cassandra", "cassandra": cassandra}}
    )
    env = render_application("ledger-load", ["--input", "x"], settings)["spec"]["driver"]["envVars"]
    assert env["CHAINLOOM_DATABASE__CASSANDRA__USERNAME"] == "etl"
    assert env["CHAINLOOM_DATABASE__CASSANDRA__PASSWORD_FILE"].endswith("/password")
    assert "CHAINLOOM_DATABASE__CASSANDRA__KEYSPACE" not in env  # a flag of the job
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    loaded = load_settings(LedgerSettings).database.cassandra
    for field in ("replication_strategy", "datacenter_replication", "local_datacenter",
                  "username", "password_file", "tls"):  # fmt: skip
        assert getattr(loaded, field) == getattr(cassandra, field)
