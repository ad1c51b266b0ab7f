"""Pausing reconciliation against the real API server (KWOK runs the pods): a paused
RelayerPool's spec change leaves its children as they were, and a child deleted by hand stays
deleted; once the annotation goes, the children follow the spec again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT, StackForTests
from tests.operator_support import (
    OperatorProcess,
    chainloom_crds,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)

__all__ = ["chainloom_crds"]

PAUSE = "chainloom.io/pause-reconciliation"
KWOK_PLACEMENT = {
    "node_selector": {"type": "kwok"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
}


@pytest.fixture
def operator(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, local_stack: StackForTests
) -> Iterator[OperatorProcess]:
    local_stack.require("kwok")
    running = start_operator(chainloom_crds, kube_namespace, tmp_path / "operator.log")
    yield running
    running.stop()


def _pool(listener_replicas: int) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(
        (REPO_ROOT / "docs" / "samples" / "relayerpool.yaml").read_text()
    )
    spec = document["spec"]
    spec["placement"] = KWOK_PLACEMENT
    spec["chains"] = spec["chains"][1:]  # solana only: one worker, one Secret
    spec["listener"]["replicas"] = listener_replicas
    return document


def _listener(kubeconfig: str, namespace: str) -> dict[str, Any] | None:
    found = kubectl(kubeconfig, "-n", namespace, "get", "deployment", "mainnet-listener",
                    "-o", "json", check=False)  # fmt: skip
    return json.loads(found.stdout) if found.returncode == 0 else None


def _conditions(kubeconfig: str, namespace: str) -> dict[str, dict[str, Any]]:
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool", "mainnet")
    return {c["type"]: c for c in (found.get("status") or {}).get("conditions") or []}


def test_a_paused_pool_keeps_its_children_until_resumed(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str
) -> None:
    namespace = kube_namespace
    kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", "sol-hot-1",
            "--from-literal=key=" + "22" * 32)  # fmt: skip

    def apply(document: dict[str, Any]) -> None:
        kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                stdin=yaml.safe_dump(document))  # fmt: skip

    apply(_pool(listener_replicas=2))
    wait_for(lambda: _conditions(kubeconfig, namespace).get("Ready", {}).get("status") == "True",
             timeout=120, what="the pool Ready")  # fmt: skip
    listener = _listener(kubeconfig, namespace)
    assert listener is not None
    assert listener["spec"]["replicas"] == 2

    kubectl(kubeconfig, "-n", namespace, "annotate", "rpool", "mainnet", f"{PAUSE}=true")
    paused = wait_for(lambda: _conditions(kubeconfig, namespace).get("ReconciliationPaused"),
                      what="the ReconciliationPaused condition")  # fmt: skip
    assert (paused["status"], paused["reason"]) == ("True", "ReconciliationPaused")
    assert PAUSE in paused["message"]
    assert _conditions(kubeconfig, namespace)["Ready"]["status"] == "True"  # kept as it was

    # A spec change while paused: the operator sees it (the condition names the new
    # generation), and the children stay as they were.
    apply(_pool(listener_replicas=3))
    generation = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool",
                              "mainnet")["metadata"]["generation"]  # fmt: skip
    wait_for(lambda: _conditions(kubeconfig, namespace)["ReconciliationPaused"]
             ["observedGeneration"] == generation, what="the paused update seen")  # fmt: skip
    listener = _listener(kubeconfig, namespace)
    assert listener is not None
    assert listener["spec"]["replicas"] == 2
    assert listener["metadata"]["generation"] == 1  # never written again

    # A child deleted by hand while paused is not recreated: the deletion's event reaches the
    # operator, which leaves it alone.
    kubectl(kubeconfig, "-n", namespace, "delete", "configmap", "mainnet-relayer")
    wait_for(lambda: "DELETED ConfigMap mainnet-relayer left alone" in operator.output(),
             what="the operator to hold the deletion")  # fmt: skip
    found = kubectl(kubeconfig, "-n", namespace, "get", "configmap", "mainnet-relayer",
                    check=False)  # fmt: skip
    assert found.returncode != 0, "a paused pool's ConfigMap was recreated"

    # Resumed: the children follow the current spec, the condition goes.
    kubectl(kubeconfig, "-n", namespace, "annotate", "rpool", "mainnet", f"{PAUSE}-")

    def resumed() -> bool:
        listener = _listener(kubeconfig, namespace)
        configmap = kubectl(kubeconfig, "-n", namespace, "get", "configmap", "mainnet-relayer",
                            check=False)  # fmt: skip
        return (listener is not None and listener["spec"]["replicas"] == 3
                and configmap.returncode == 0)  # fmt: skip

    wait_for(resumed, timeout=60, what="the children updated after resuming")
    wait_for(lambda: "ReconciliationPaused" not in _conditions(kubeconfig, namespace),
             what="the condition gone")  # fmt: skip
    wait_for(lambda: _conditions(kubeconfig, namespace)["Ready"]["status"] == "True",
             timeout=120, what="Ready again")  # fmt: skip
