"""The Helm chart rendered by the pinned helm (``helm template``: no cluster needed): the
operator's own ``/metrics`` is off by default, and ``operator.metrics.enabled`` gives it a
container port, a Service and a ServiceMonitor that select each other; the chart lints clean
both ways, and the values schema refuses a bad port.

Applying the chart to a real API server is tests/cluster/test_chart.py's part.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest
import yaml

from chainloom_dev.stack.components.kubernetes import helm_dir
from chainloom_operator.config import OperatorSettings
from tests.conftest import REPO_ROOT

CHART = REPO_ROOT / "charts" / "chainloom"
HELM = helm_dir() / "bin" / "helm"

pytestmark = pytest.mark.last  # scripts/test builds helm beside the tiers


@pytest.fixture(scope="module", autouse=True)
def _pinned_helm() -> None:
    """The pinned helm, from the stack's cache. Where the suite reuses a stack
    (``CHAINLOOM_KEEP_STACK=1``, as ``scripts/test`` sets) it is installed if missing, or waited
    for while ``scripts/test`` builds it; elsewhere the tests skip without it."""
    if HELM.exists():
        return
    if os.environ.get("CHAINLOOM_KEEP_STACK") != "1":
        pytest.skip("helm is not cached: chainloom-dev stack up --only helm")
    from chainloom_dev.stack import manager

    manager.up(["helm"])
    assert HELM.exists(), f"stack up --only helm left no {HELM}"


def _helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HELM), *args], capture_output=True, text=True, timeout=120, check=False
    )


def _render(*sets: str) -> list[dict[str, Any]]:
    flags = [flag for value in sets for flag in ("--set", value)]
    result = _helm("template", "demo", str(CHART), "--namespace", "ops", *flags)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _operator_container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(doc for doc in documents if doc["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = container
    return found


def test_the_operators_metrics_are_off_by_default() -> None:
    documents = _render("serviceMonitor.enabled=true")
    container = _operator_container(documents)
    assert not any(arg.startswith("--metrics") for arg in container["args"])
    assert [port["name"] for port in container["ports"]] == ["health"]
    assert not [doc for doc in documents if doc["kind"] == "Service"]
    (monitor,) = [doc for doc in documents if doc["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["name"] == "demo-chainloom-relayer"


def test_metrics_enabled_serves_them_behind_a_service_the_monitor_scrapes() -> None:
    documents = _render(
        "operator.metrics.enabled=true", "operator.metrics.port=9464",
        "serviceMonitor.enabled=true", "serviceMonitor.labels.release=prom",
    )  # fmt: skip
    container = _operator_container(documents)
    (flag,) = [arg for arg in container["args"] if arg.startswith("--metrics=")]
    address = flag.removeprefix("--metrics=")
    assert address == "0.0.0.0:9464"
    assert OperatorSettings(metrics=address).metrics == address  # the operator accepts it
    assert {"name": "metrics", "containerPort": 9464, "protocol": "TCP"} in container["ports"]

    (service,) = [doc for doc in documents if doc["kind"] == "Service"]
    assert service["metadata"]["name"] == "demo-chainloom-operator-metrics"
    (port,) = service["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", 9464, "metrics")
    deployment = next(doc for doc in documents if doc["kind"] == "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()

    monitors = {
        doc["metadata"]["name"]: doc for doc in documents if doc["kind"] == "ServiceMonitor"
    }
    assert set(monitors) == {"demo-chainloom-relayer", "demo-chainloom-operator"}
    operator = monitors["demo-chainloom-operator"]
    assert operator["metadata"]["labels"]["release"] == "prom"
    selector = operator["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = operator["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("metrics", "/metrics")
    # The relayer's monitor never selects the operator's Service.
    relayer = monitors["demo-chainloom-relayer"]["spec"]["selector"]["matchLabels"]
    assert not relayer.items() <= service["metadata"]["labels"].items()


def test_no_service_without_the_operator() -> None:
    documents = _render("operator.enabled=false", "operator.metrics.enabled=true",
                        "serviceMonitor.enabled=true")  # fmt: skip
    assert not [doc for doc in documents if doc["kind"] == "Service"]
    names = [doc["metadata"]["name"] for doc in documents if doc["kind"] == "ServiceMonitor"]
    assert names == ["demo-chainloom-relayer"]


@pytest.mark.parametrize(
    "sets", [(), ("operator.metrics.enabled=true", "serviceMonitor.enabled=true")]
)
def test_the_chart_lints_strict(sets: tuple[str, ...]) -> None:
    flags = [flag for value in sets for flag in ("--set", value)]
    result = _helm("lint", str(CHART), "--strict", *flags)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("value", ["operator.metrics.port=0", "operator.metrics.path=/x"])
def test_the_schema_refuses_bad_metrics_values(value: str) -> None:
    result = _helm("template", "demo", str(CHART), "--set", value)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stderr


def test_secret_mounts_give_the_operator_files_of_secrets() -> None:
    documents = _render(
        "operator.secretMounts[0].secret=cassandra-etl",
        "operator.secretMounts[0].mountPath=/var/run/secrets/cassandra",
    )
    deployment = next(doc for doc in documents if doc["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    volume = {"name": "secret-0", "secret": {"secretName": "cassandra-etl", "defaultMode": 0o440}}
    assert volume in pod["volumes"]
    assert {"name": "secret-0", "mountPath": "/var/run/secrets/cassandra", "readOnly": True} in (
        pod["containers"][0]["volumeMounts"]
    )
    refused = _helm("template", "demo", str(CHART), "--set", "operator.secretMounts[0].secret=x")
    assert refused.returncode != 0
    assert "mountPath" in refused.stderr


def test_the_operators_service_account_takes_a_workload_identity_annotation() -> None:
    annotation = "iam.gke.io/gcp-service-account"
    email = "chainloom-operator@prod.iam.gserviceaccount.com"
    documents = _render(
        f"operator.serviceAccountAnnotations.{annotation.replace('.', chr(92) + '.')}={email}"
    )
    account = next(
        doc
        for doc in documents
        if doc["kind"] == "ServiceAccount"
        and doc["metadata"]["labels"].get("app.kubernetes.io/component") == "operator"
    )
    assert account["metadata"]["annotations"] == {annotation: email}
    plain = next(
        doc
        for doc in _render()
        if doc["kind"] == "ServiceAccount"
        and doc["metadata"]["labels"].get("app.kubernetes.io/component") == "operator"
    )
    assert "annotations" not in plain["metadata"]
