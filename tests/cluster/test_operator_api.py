"""A BackendTable's read API against the real API server (KWOK runs the pods) and the Bigtable
emulator: its Deployment, Service, PodDisruptionBudget and ConfigMap rendered and owned,
readiness in the status and the printer column, scaled through the spec and through the scale
subresource (``kubectl scale``), a child deleted by hand recreated, and every child gone once
``spec.api`` is; a paused table's API left alone until it is resumed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore import bigtable as store
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.service import locate
from chainloom.settings import BigtableSettings
from tests.conftest import StackForTests
from tests.operator_support import (
    OperatorProcess,
    chainloom_crds,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)

__all__ = ["chainloom_crds"]

KWOK_PLACEMENT = {
    "node_selector": {"type": "kwok"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
}
API_CHILDREN = {("ConfigMap", "events-api"), ("Deployment", "events-api"),
                ("Service", "events-api"), ("PodDisruptionBudget", "events-api")}  # fmt: skip
CHILD_KINDS = "configmaps,deployments,services,poddisruptionbudgets"


@pytest.fixture
def operator(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, bigtable_emulator: str,
    local_stack: StackForTests,
) -> Iterator[OperatorProcess]:  # fmt: skip
    local_stack.require("kwok")
    running = start_operator(chainloom_crds, kube_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    yield running
    running.stop()


def _children(kubeconfig: str, namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    listed = kubectl_json(kubeconfig, "-n", namespace, "get", CHILD_KINDS,
                          "-l", "chainloom.io/owner-kind=BackendTable")  # fmt: skip
    return {(i["kind"], i["metadata"]["name"]): i for i in listed["items"]}


def _table(kubeconfig: str, namespace: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", "events")
    return found


def _replicas(kubeconfig: str, namespace: str) -> int | None:
    found = _children(kubeconfig, namespace).get(("Deployment", "events-api"))
    return None if found is None else int(found["spec"]["replicas"])


def _api_ready(kubeconfig: str, namespace: str, wanted: str) -> dict[str, Any] | None:
    """The table's status once it reports ``apiReady == wanted`` and is Ready."""
    status = _table(kubeconfig, namespace).get("status") or {}
    ready: dict[str, Any] = next(
        (c for c in status.get("conditions", []) if c["type"] == "Ready"), {}
    )
    return status if status.get("apiReady") == wanted and ready.get("status") == "True" else None


def test_the_read_api_rendered_scaled_and_removed(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str, bigtable_emulator: str
) -> None:
    namespace, table = kube_namespace, f"events-{uuid.uuid4().hex[:8]}"
    document = {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "BackendTable",
        "metadata": {"name": "events"},
        "spec": {
            "backend": "bigtable",
            "bigtable": {"table": table},
            "api": {"replicas": 2, "placement": KWOK_PLACEMENT,
                    "env": {"BIGTABLE_EMULATOR_HOST": bigtable_emulator}},
        },
    }  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip
    located = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    try:
        _read_api(kubeconfig, namespace, table)
    finally:
        store.drop_tables(located)


def _read_api(kubeconfig: str, namespace: str, table: str) -> None:
    uid = _table(kubeconfig, namespace)["metadata"]["uid"]

    def all_children() -> dict[tuple[str, str], dict[str, Any]] | None:
        found = _children(kubeconfig, namespace)
        return found if found.keys() >= API_CHILDREN else None

    children = wait_for(all_children, timeout=120, what="the API's children")
    for key in API_CHILDREN:
        (reference,) = children[key]["metadata"]["ownerReferences"]
        assert (reference["kind"], reference["uid"]) == ("BackendTable", uid)
    config = yaml.safe_load(children[("ConfigMap", "events-api")]["data"]["events.yaml"])
    assert config["bigtable"]["table"] == table
    budget = children[("PodDisruptionBudget", "events-api")]["spec"]
    service = children[("Service", "events-api")]["spec"]
    assert budget["selector"]["matchLabels"] == service["selector"]
    assert service["ports"][0]["port"] == 4401

    # KWOK runs the pods: the table reports its API ready, in status and in kubectl get.
    status = wait_for(lambda: _api_ready(kubeconfig, namespace, "2/2"), timeout=120,
                      what="apiReady 2/2")  # fmt: skip
    assert status["api"]["replicas"] == 2
    assert status["tables"] == [table, f"{table}-index"]
    listing = kubectl(kubeconfig, "-n", namespace, "get", "btable", "events").stdout
    assert "API" in listing.splitlines()[0]
    assert "2/2" in listing.splitlines()[1]

    # Scaled through the spec.
    kubectl(kubeconfig, "-n", namespace, "patch", "btable", "events", "--type=merge",
            "-p", '{"spec": {"api": {"replicas": 3}}}')  # fmt: skip
    wait_for(lambda: _replicas(kubeconfig, namespace) == 3, what="the Deployment at 3")
    wait_for(lambda: _api_ready(kubeconfig, namespace, "3/3"), timeout=120, what="apiReady 3/3")

    # Scaled through the scale subresource, as kubectl scale (and an HPA) do.
    kubectl(kubeconfig, "-n", namespace, "scale", "btable/events", "--replicas=1")
    assert _table(kubeconfig, namespace)["spec"]["api"]["replicas"] == 1
    wait_for(lambda: _replicas(kubeconfig, namespace) == 1, what="the Deployment at 1")
    wait_for(lambda: _api_ready(kubeconfig, namespace, "1/1"), timeout=120, what="apiReady 1/1")
    path = f"/apis/chainloom.io/v1alpha1/namespaces/{namespace}/backendtables/events/scale"
    scale = json.loads(kubectl(kubeconfig, "get", "--raw", path).stdout)
    assert scale["kind"] == "Scale"
    assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (1, 1)
    pods = kubectl_json(kubeconfig, "-n", namespace, "get", "pods", "-l",
                        scale["status"]["selector"])["items"]  # fmt: skip
    assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 1

    # A child deleted by hand comes back.
    kubectl(kubeconfig, "-n", namespace, "delete", "service", "events-api")
    wait_for(lambda: ("Service", "events-api") in _children(kubeconfig, namespace),
             what="the Service recreated")  # fmt: skip

    # Without spec.api the API's children go, and its status with them.
    kubectl(kubeconfig, "-n", namespace, "patch", "btable", "events", "--type=json",
            "-p", '[{"op": "remove", "path": "/spec/api"}]')  # fmt: skip
    wait_for(lambda: not _children(kubeconfig, namespace), what="the API's children deleted")

    def without_api() -> dict[str, Any] | None:
        status: dict[str, Any] = _table(kubeconfig, namespace).get("status") or {}
        return status if status.get("apiReady") == "" else None

    status = wait_for(without_api, what="the API gone from the status")
    assert "api" not in status


def test_a_paused_table_keeps_its_api_until_resumed(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str, bigtable_emulator: str
) -> None:
    namespace, table = kube_namespace, f"paused-{uuid.uuid4().hex[:8]}"
    document = {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "BackendTable",
        "metadata": {"name": "events"},
        "spec": {"backend": "bigtable", "bigtable": {"table": table},
                 "api": {"replicas": 1, "placement": KWOK_PLACEMENT}},
    }  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip
    located = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    try:
        wait_for(lambda: _api_ready(kubeconfig, namespace, "1/1"), timeout=120,
                 what="apiReady 1/1")  # fmt: skip
        kubectl(kubeconfig, "-n", namespace, "annotate", "btable", "events",
                "chainloom.io/pause-reconciliation=true")  # fmt: skip
        kubectl(kubeconfig, "-n", namespace, "scale", "btable/events", "--replicas=2")
        generation = _table(kubeconfig, namespace)["metadata"]["generation"]

        def paused_at_generation() -> bool:
            conditions = (_table(kubeconfig, namespace).get("status") or {}).get("conditions")
            paused = [c for c in conditions or [] if c["type"] == "ReconciliationPaused"]
            return bool(paused) and paused[0]["observedGeneration"] == generation

        wait_for(paused_at_generation, what="the paused scale seen")
        # The recheck runs every 2 s here: it too leaves the paused table alone.
        wait_for(lambda: operator.output().count("BackendTable " + namespace + "/events: paused "
                                                 "(chainloom.io/pause-reconciliation): the schema "
                                                 "check left alone") >= 2,
                 what="two rechecks held")  # fmt: skip
        assert _replicas(kubeconfig, namespace) == 1

        kubectl(kubeconfig, "-n", namespace, "annotate", "btable", "events",
                "chainloom.io/pause-reconciliation-")  # fmt: skip
        wait_for(lambda: _replicas(kubeconfig, namespace) == 2, what="the Deployment at 2")
        status = wait_for(lambda: _api_ready(kubeconfig, namespace, "2/2"), timeout=120,
                          what="apiReady 2/2 after resuming")  # fmt: skip
        assert "ReconciliationPaused" not in {c["type"] for c in status["conditions"]}
    finally:
        store.drop_tables(located)
