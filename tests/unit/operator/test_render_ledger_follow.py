"""A streaming IngestPipeline with a rippled source -> the ledger ETL's ConfigMap and
Deployment, as data; the rendered arguments parse with the real ``chainloom ledger follow``."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from chainloom.cli.ledger import ledger
from chainloom.ledger.config import LedgerSettings
from chainloom_operator._render.common import Owner
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec
from tests.conftest import REPO_ROOT

OWNER = Owner("IngestPipeline", "xrpl-live", "xrpl", "uid-9", 3)


def _spec(name: str) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docs/samples" / name).read_text())["spec"]
    return found


CASSANDRA = BackendTableSpec.model_validate(_spec("backendtable-cassandra.yaml"))
BIGTABLE = BackendTableSpec.model_validate(_spec("backendtable-bigtable.yaml"))
FOLLOW = _spec("ingestpipeline-ledger-follow.yaml")


def _render(spec: dict[str, Any], sink: BackendTableSpec = CASSANDRA) -> list[dict[str, Any]]:
    return render_pipeline(OWNER, IngestPipelineSpec.model_validate(spec), sink)


def test_the_sample_renders_a_config_map_and_a_deployment_of_ledger_follow() -> None:
    config, deployment = _render(FOLLOW)
    assert config["kind"] == "ConfigMap"
    assert deployment["kind"] == "Deployment"
    assert config["metadata"]["name"] == deployment["metadata"]["name"] == "xrpl-live-ledger-etl"
    settings = LedgerSettings.model_validate(yaml.safe_load(config["data"]["ledger.yaml"]))
    assert settings.database.type == "cassandra"
    assert not settings.database.read_only
    assert settings.database.cassandra.hosts == ("cassandra.databases.svc",)
    assert settings.database.cassandra.keyspace == "chainloom_ledger"
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["chainloom"]
    assert container["args"][:2] == ["ledger", "follow"]
    # The arguments are the real command's: its parser takes them.
    context = ledger.commands["follow"].make_context("follow", list(container["args"][2:]))
    assert context.params["grpc_address"] == "rippled.xrpl.svc:50051"
    assert context.params["fallback_seconds"] == 10.0
    assert context.params["probes"] == "0.0.0.0:4302"
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert {"name": "CHAINLOOM_LEDGER_CONFIG", "value": "/etc/chainloom/ledger.yaml"} in (
        container["env"]
    )
    assert pod["automountServiceAccountToken"] is False
    # The Secret holding the keyspace's login files, mounted read-only.
    assert {"name": "secret-0", "mountPath": "/var/run/secrets/cassandra", "readOnly": True} in (
        container["volumeMounts"]
    )
    assert {
        "name": "secret-0",
        "secret": {"secretName": "cassandra-etl", "defaultMode": 0o440},
    } in (pod["volumes"])


def test_start_and_suspend() -> None:
    spec = {**FOLLOW, "suspend": True, "ledger": {**FOLLOW["ledger"], "start": 90_000_000}}
    _, deployment = _render(spec)
    assert deployment["spec"]["replicas"] == 0
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--start") + 1] == "90000000"


def test_a_bigtable_sink_is_refused() -> None:
    with pytest.raises(SpecError, match="cassandra BackendTable, not bigtable"):
        _render(FOLLOW, BIGTABLE)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "batch"}, "ledger is for mode streaming"),
        ({"streaming": {"spy": {"address": "spy:7073"}}}, "ledger is for mode streaming"),
        ({"ledger": {"grpc": "no-port"}}, "grpc"),
        ({"ledger": {"grpc": "r:50051", "replicas": 0}}, "replicas"),
    ],
)
def test_bad_specs_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        IngestPipelineSpec.model_validate({**FOLLOW, **change})
