"""IngestPipeline -> SparkApplication / ScheduledSparkApplication / indexer, as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.indexer.config import IndexerSettings
from chainloom.settings import load_settings
from chainloom_operator._render.common import Owner
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec
from chainloom_spark.jobs import check_arguments
from tests.conftest import REPO_ROOT

OWNER = Owner("IngestPipeline", "backfill-2024", "data", "uid-7", 2)


def _sample(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docs/samples" / name).read_text())["spec"]
    return spec


BIGTABLE = BackendTableSpec.model_validate(_sample("backendtable-bigtable.yaml"))
CASSANDRA = BackendTableSpec.model_validate(_sample("backendtable-cassandra.yaml"))


def _render(spec: dict[str, Any], sink: BackendTableSpec = BIGTABLE) -> list[dict[str, Any]]:
    return render_pipeline(OWNER, IngestPipelineSpec.model_validate(spec), sink)


def test_batch_renders_a_spark_application_through_the_spark_manifest() -> None:
    (app,) = _render(_sample("ingestpipeline-batch.yaml"))
    assert (app["apiVersion"], app["kind"]) == ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    assert app["metadata"]["name"] == "backfill-2024"
    assert app["metadata"]["namespace"] == "data"
    assert app["metadata"]["ownerReferences"][0]["uid"] == "uid-7"
    spec = app["spec"]
    job, *arguments = spec["arguments"]
    assert job == "vaa-ingest"
    check_arguments(job, arguments)
    assert arguments[:4] == ["--input", "s3a://wormhole-archive/vaas/2024/", "--table",
                             "wormhole-events"]  # fmt: skip
    assert arguments[4:6] == ["--index-table", "wormhole-events-index"]
    assert spec["executor"]["instances"] == 4
    assert spec["executor"]["memory"] == "2g"
    assert spec["executor"]["labels"]["chainloom.io/job"] == "vaa-ingest"


def test_ledger_load_writes_to_the_cassandra_sink() -> None:
    spec = {"mode": "batch", "sink": "ledger",
            "batch": {"job": "ledger-load", "input": "/data/ledgers.jsonl"}}  # fmt: skip
    (app,) = _render(spec, CASSANDRA)
    arguments = app["spec"]["arguments"][1:]
    check_arguments("ledger-load", arguments)
    assert arguments[arguments.index("--cassandra-hosts") + 1] == "cassandra.databases.svc:9042"
    assert arguments[arguments.index("--keyspace") + 1] == "chainloom_ledger"


def test_schedule_renders_a_scheduled_application() -> None:
    (scheduled,) = _render(_sample("ingestpipeline-scheduled.yaml"))
    assert scheduled["kind"] == "ScheduledSparkApplication"
    assert scheduled["spec"]["schedule"] == "0 2 * * *"
    assert scheduled["spec"]["concurrencyPolicy"] == "Forbid"
    assert scheduled["spec"]["template"]["type"] == "Python"


def test_streaming_renders_the_indexer_with_its_settings(tmp_path: Path) -> None:
    config, deployment = _render(_sample("ingestpipeline-streaming.yaml"))
    assert config["kind"] == "ConfigMap"
    path = tmp_path / "indexer.yaml"
    path.write_text(config["data"]["indexer.yaml"])
    settings = load_settings(IndexerSettings, config_file=path)
    assert settings.spy.address == "spy.wormhole.svc:7073"
    assert settings.spy.emitters[0].chain == 2
    assert settings.bigtable.table == "wormhole-events"
    assert settings.probes.host == "0.0.0.0"
    assert deployment["spec"]["replicas"] == 1
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["indexer", "run", "--config", "/etc/chainloom/indexer.yaml"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_gap_backfill_fills_from_files_or_the_public_api() -> None:
    spec = {"mode": "batch", "sink": "events", "batch": {"job": "gap-backfill", "input": "/vaas"}}
    (app,) = _render(spec)
    job, *arguments = app["spec"]["arguments"]
    assert job == "gap-backfill"
    check_arguments(job, arguments)
    assert arguments[arguments.index("--files") + 1] == "/vaas"
    batch = {"job": "gap-backfill", "arguments": ["--public-api", "guardian:443"]}
    public = {"mode": "batch", "sink": "events", "batch": batch}
    (app,) = _render(public)
    assert "--files" not in app["spec"]["arguments"]


@pytest.mark.parametrize(
    ("spec", "sink", "message"),
    [
        (_sample("ingestpipeline-batch.yaml"), CASSANDRA, "writes to a bigtable BackendTable"),
        ({"mode": "batch", "sink": "x",
          "batch": {"job": "vaa-ingest", "input": "i", "arguments": ["--no-such-flag"]}},
         BIGTABLE, "batch.arguments"),
    ],
)  # fmt: skip
def test_refused(spec: dict[str, Any], sink: BackendTableSpec, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _render(spec, sink)


def _env(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {variable["name"]: variable.get("value") for variable in container["env"]}


def test_an_otlp_endpoint_reaches_the_indexer_and_its_own_env_wins() -> None:
    spec = _sample("ingestpipeline-streaming.yaml")
    endpoint = "http://otel-collector:4318"
    model = IngestPipelineSpec.model_validate(spec)
    _, deployment = render_pipeline(OWNER, model, BIGTABLE, otlp_endpoint=endpoint)
    env = _env(deployment)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
    assert env["OTEL_SERVICE_NAME"] == "chainloom-indexer"
    assert env["OTEL_RESOURCE_ATTRIBUTES"].endswith("chainloom.owner=IngestPipeline/backfill-2024")
    _, plain = render_pipeline(OWNER, model, BIGTABLE)
    assert not any(name.startswith("OTEL_") for name in _env(plain))

    spec["streaming"]["env"] = {"OTEL_SERVICE_NAME": "indexer-eu"}
    model = IngestPipelineSpec.model_validate(spec)
    _, deployment = render_pipeline(OWNER, model, BIGTABLE, otlp_endpoint=endpoint)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    names = [variable["name"] for variable in container["env"]]
    assert names.count("OTEL_SERVICE_NAME") == 1
    assert _env(deployment)["OTEL_SERVICE_NAME"] == "indexer-eu"
    assert _env(deployment)["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint


def _pod_env(pod: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = pod.get("envVars", {})
    return found


def test_an_otlp_endpoint_reaches_the_spark_driver_and_executors() -> None:
    endpoint = "http://otel-collector.monitoring:4318"
    model = IngestPipelineSpec.model_validate(_sample("ingestpipeline-batch.yaml"))
    (app,) = render_pipeline(OWNER, model, BIGTABLE, otlp_endpoint=endpoint)
    for pod in ("driver", "executor"):
        env = _pod_env(app["spec"][pod])
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
        assert env["OTEL_SERVICE_NAME"] == "chainloom-spark-vaa-ingest"
        assert env["OTEL_RESOURCE_ATTRIBUTES"] == (
            "k8s.namespace.name=data,chainloom.owner=IngestPipeline/backfill-2024"
        )
    # Nothing else changes, and without an endpoint no OTEL_* variable is rendered.
    (plain,) = render_pipeline(OWNER, model, BIGTABLE)
    for pod in ("driver", "executor"):
        assert not any(name.startswith("OTEL_") for name in _pod_env(plain["spec"][pod]))
        app["spec"][pod]["envVars"] = {
            k: v for k, v in app["spec"][pod]["envVars"].items() if not k.startswith("OTEL_")
        }
        if not app["spec"][pod]["envVars"]:
            del app["spec"][pod]["envVars"]
    assert app == plain


def test_the_scheduled_application_and_each_job_name_their_service() -> None:
    endpoint = "http://c:4318"
    spec = {"mode": "batch", "sink": "ledger",
            "batch": {"job": "ledger-load", "input": "/data/ledgers.jsonl"}}  # fmt: skip
    model = IngestPipelineSpec.model_validate(spec)
    (app,) = render_pipeline(OWNER, model, CASSANDRA, otlp_endpoint=endpoint)
    assert _pod_env(app["spec"]["driver"])["OTEL_SERVICE_NAME"] == "chainloom-spark-ledger-load"
    model = IngestPipelineSpec.model_validate(_sample("ingestpipeline-scheduled.yaml"))
    (scheduled,) = render_pipeline(OWNER, model, BIGTABLE, otlp_endpoint=endpoint)
    template = scheduled["spec"]["template"]
    for pod in ("driver", "executor"):
        env = _pod_env(template[pod])
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
        assert env["OTEL_SERVICE_NAME"] == f"chainloom-spark-{model.batch.job}"  # type: ignore[union-attr]


def test_the_pipelines_own_spark_env_wins_over_the_operators() -> None:
    spec = _sample("ingestpipeline-batch.yaml")
    spec["batch"].setdefault("resources", {})["env"] = {
        "OTEL_SERVICE_NAME": "ingest-eu", "OTEL_TRACES_SAMPLER": "always_off",
    }  # fmt: skip
    model = IngestPipelineSpec.model_validate(spec)
    (app,) = render_pipeline(OWNER, model, BIGTABLE, otlp_endpoint="http://c:4318")
    driver = app["spec"]["driver"]
    assert "env" not in driver  # envVars: a map, one value per name
    env = _pod_env(driver)
    assert env["OTEL_SERVICE_NAME"] == "ingest-eu"
    assert env["OTEL_TRACES_SAMPLER"] == "always_off"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://c:4318"
