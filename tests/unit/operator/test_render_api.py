"""A BackendTable's ``spec.api`` -> the API's ConfigMap, Deployment, Service and
PodDisruptionBudget, and its part of the status, as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore.config import EventStoreSettings
from chainloom.ledger.config import LedgerSettings
from chainloom.settings import load_settings
from chainloom_operator._handlers.shared import spec_of
from chainloom_operator._render.api import api_status, render_api, secret_references
from chainloom_operator._render.common import Owner
from chainloom_operator._render.status import table_status
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec
from tests.conftest import REPO_ROOT

OWNER = Owner("BackendTable", "events", "data", "uid-9", 4)
BIGTABLE_API = {
    "backend": "bigtable",
    "bigtable": {"project": "p", "instance": "i", "table": "ev", "index_table": "ev-idx"},
    "api": {
        "image": "chainloom:dev",
        "image_pull_policy": "Never",
        "replicas": 3,
        "resources": {"cpu": "250m", "memory": "256Mi"},
        "placement": {
            "node_selector": {"pool": "read"},
            "tolerations": [{"key": "read", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"pod_anti_affinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname"}]}},
        },
        "service": {"type": "NodePort", "port": 80},
        "cursor_key": {"name": "cursor", "key": "k"},
        "env": {"BIGTABLE_EMULATOR_HOST": "10.0.0.1:8086", "OTEL_SERVICE_NAME": "mine"},
    },
}  # fmt: skip


def _spec(document: dict[str, Any]) -> BackendTableSpec:
    return BackendTableSpec.model_validate(document)


def _by_kind(children: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {child["kind"]: child for child in children}


def _config(child: dict[str, Any], name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    path.write_text(child["data"][name])
    return path


def test_no_api_renders_nothing() -> None:
    spec = _spec({"backend": "bigtable", "bigtable": {}})
    assert render_api(OWNER, spec) == []
    assert api_status(OWNER, spec, None) == ("", None)
    assert secret_references(spec) == []


def test_the_events_api_over_bigtable(tmp_path: Path) -> None:
    children = render_api(OWNER, _spec(BIGTABLE_API), otlp_endpoint="http://otel:4318")
    assert [c["kind"] for c in children] == [
        "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"
    ]  # fmt: skip
    assert {c["metadata"]["name"] for c in children} == {"events-api"}
    for child in children:
        assert child["metadata"]["namespace"] == "data"
        (reference,) = child["metadata"]["ownerReferences"]
        assert (reference["kind"], reference["uid"], reference["controller"]) == (
            "BackendTable", "uid-9", True)  # fmt: skip
    found = _by_kind(children)
    # The pods load the table's own settings, dumped by the events store's model.
    events_file = _config(found["ConfigMap"], "events.yaml", tmp_path)
    settings = load_settings(EventStoreSettings, config_file=events_file)
    assert (settings.bigtable.table, settings.bigtable.index_table) == ("ev", "ev-idx")
    assert (settings.bigtable.project, settings.bigtable.instance) == ("p", "i")
    assert (settings.api.host, settings.api.port) == ("0.0.0.0", 4401)
    assert str(settings.api.cursor_key_file) == "/var/run/chainloom/cursor/key"

    deployment = found["Deployment"]["spec"]
    pod = deployment["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["replicas"] == 3
    assert container["args"] == ["events", "--config", "/etc/chainloom/events.yaml", "api"]
    assert (container["image"], container["imagePullPolicy"]) == ("chainloom:dev", "Never")
    assert container["ports"] == [{"name": "http", "containerPort": 4401, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"},
                                      "limits": {"memory": "256Mi"}}  # fmt: skip
    env = {v["name"]: v["value"] for v in container["env"]}
    assert env["CHAINLOOM_EVENTSTORE_CONFIG"] == "/etc/chainloom/events.yaml"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel:4318"
    assert env["OTEL_SERVICE_NAME"] == "mine"  # api.env wins
    assert env["BIGTABLE_EMULATOR_HOST"] == "10.0.0.1:8086"
    assert [v["name"] for v in container["env"]].count("OTEL_SERVICE_NAME") == 1
    assert pod["nodeSelector"] == {"pool": "read"}
    assert pod["tolerations"] == [{"key": "read", "operator": "Exists", "effect": "NoSchedule"}]
    required = [{"topologyKey": "kubernetes.io/hostname"}]
    assert pod["affinity"] == {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    cursor = next(v for v in pod["volumes"] if v["name"] == "cursor-key")
    assert cursor["secret"]["secretName"] == "cursor"
    assert cursor["secret"]["items"] == [{"key": "k", "path": "key"}]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False

    # One selector: the Deployment's, the Service's and the budget's select the pods.
    labels = deployment["template"]["metadata"]["labels"]
    selector = deployment["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    assert found["Service"]["spec"]["selector"] == selector
    budget = found["PodDisruptionBudget"]["spec"]
    assert budget == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    assert found["Service"]["spec"]["type"] == "NodePort"
    assert found["Service"]["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    ]
    assert secret_references(_spec(BIGTABLE_API)) == [("cursor", "k", "events API cursor key")]


def test_the_ledger_api_over_cassandra(tmp_path: Path) -> None:
    document = yaml.safe_load((REPO_ROOT / "docs/samples/backendtable-cassandra.yaml").read_text())
    spec = _spec(document["spec"])
    found = _by_kind(render_api(OWNER, spec))
    ledger_file = _config(found["ConfigMap"], "ledger.yaml", tmp_path)
    settings = load_settings(LedgerSettings, config_file=ledger_file)
    database = settings.database
    assert (database.type, database.read_only) == ("cassandra", True)
    assert list(database.cassandra.hosts) == ["cassandra.databases.svc"]
    assert database.cassandra.keyspace == "chainloom_ledger"
    (container,) = found["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["ledger", "api", "--config", "/etc/chainloom/ledger.yaml",
                                 "--host", "0.0.0.0", "--port", "51234"]  # fmt: skip
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in {v["name"] for v in container["env"]}
    assert found["Service"]["spec"]["ports"][0]["port"] == 51234
    assert found["Deployment"]["spec"]["replicas"] == 3
    affinity = found["Deployment"]["spec"]["template"]["spec"]["affinity"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" in affinity["podAntiAffinity"]


def test_a_cursor_key_is_for_the_events_api_only() -> None:
    document = {"backend": "cassandra", "cassandra": {},
                "api": {"cursor_key": {"name": "cursor"}}}  # fmt: skip
    with pytest.raises(SpecError, match=r"api\.cursor_key is for backend bigtable"):
        spec_of(BackendTableSpec, document)


def _deployment(ready: int, replicas: int, wanted: int) -> dict[str, Any]:
    return {"metadata": {"generation": 1}, "spec": {"replicas": wanted},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready, "availableReplicas": ready}}  # fmt: skip


def test_the_api_status_and_the_table_readiness() -> None:
    spec = _spec(BIGTABLE_API)
    api_ready, found = api_status(OWNER, spec, _deployment(ready=1, replicas=3, wanted=3))
    assert api_ready == "1/3"
    assert found is not None
    assert (found.replicas, found.ready_replicas, found.deployment, found.service) == (
        3, 1, "events-api", "events-api")  # fmt: skip
    assert found.selector == ("app.kubernetes.io/component=api,app.kubernetes.io/instance=events,"
                              "chainloom.io/owner-kind=BackendTable")  # fmt: skip
    assert api_status(OWNER, spec, None)[0] == "0/3"  # not created yet

    waiting = table_status(["ev", "ev-idx"], [], (), generation=4, previous=[], now="T",
                           api=(api_ready, found), api_available=False)  # fmt: skip
    ready = {c.type: c for c in waiting.conditions}
    assert (ready["Ready"].status, ready["Ready"].reason) == ("False", "ApiNotReady")
    assert "1/3" in ready["Ready"].message
    assert ready["Progressing"].status == "True"
    dumped = waiting.model_dump(mode="json", by_alias=True)
    assert dumped["apiReady"] == "1/3"
    assert dumped["api"]["readyReplicas"] == 1

    serving = table_status(["ev", "ev-idx"], [], (), generation=4, previous=[], now="T",
                           api=("3/3", found), api_available=True)  # fmt: skip
    assert {c.type: c.reason for c in serving.conditions}["Ready"] == "InSync"
    without = table_status(["ev"], [], (), generation=4, previous=[], now="T")
    assert without.model_dump(mode="json", by_alias=True)["api"] is None  # cleared by a patch


def test_a_secured_keyspaces_files_are_mounted_from_their_secrets(tmp_path: Path) -> None:
    spec = _spec({
        "backend": "cassandra",
        "cassandra": {"hosts": ["cassandra.db"], "username": "reader",
                      "password_file": "/var/run/secrets/cassandra/password",
                      "tls": {"enabled": True, "ca_file": "/var/run/secrets/cassandra-ca/ca.crt"}},
        "api": {"secret_mounts": [
            {"secret": "cassandra-reader", "mount_path": "/var/run/secrets/cassandra"},
            {"secret": "cassandra-ca", "mount_path": "/var/run/secrets/cassandra-ca"}]},
    })  # fmt: skip
    config, deployment, *_ = render_api(OWNER, spec)
    settings = load_settings(LedgerSettings, config_file=_config(config, "ledger.yaml", tmp_path))
    assert settings.database.cassandra.password_file == "/var/run/secrets/cassandra/password"
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "secret-0", "secret": {"secretName": "cassandra-reader",
                                           "defaultMode": 0o440}} in pod["volumes"]  # fmt: skip
    assert {"name": "secret-1", "mountPath": "/var/run/secrets/cassandra-ca", "readOnly": True} in (
        pod["containers"][0]["volumeMounts"]
    )
    assert not any("valueFrom" in variable for variable in pod["containers"][0]["env"])
    assert secret_references(spec) == [
        ("cassandra-reader", "", "files at /var/run/secrets/cassandra"),
        ("cassandra-ca", "", "files at /var/run/secrets/cassandra-ca"),
    ]
