"""A pipeline whose driver cannot start ends with a condition naming the cause, on the real node:
an image that cannot be pulled (the kubelet's ErrImagePull), a driver no node has room for (the
scheduler's Unschedulable), a Secret deleted after the application was rendered (the kubelet's
CreateContainerConfigError). Each is a real pod on the real node, read by the operator through
its watch on driver pods; each condition comes with a Warning event, within bounded time.

No spark-operator controller runs here: the test plays its part, as ``test_node_spark`` does: it
writes the application's status (SUBMITTED, ``driverInfo.podName``) and starts the driver pod
from the SparkApplication's spec the way spark-submit does (container
``spark-kubernetes-driver``, the application's labels plus ``spark-role: driver``, the driver's
cores as its CPU request, its ``env``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.node_support import NODE_IMAGE, ON_THE_NODE
from tests.conftest import REPO_ROOT, NodeCluster
from tests.operator_support import (
    OperatorProcess,
    install_crds_with_spark,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)

DRIVER_CONTAINER = "spark-kubernetes-driver"
UNPULLABLE = "127.0.0.1:9/chainloom/no-such-image:0"
"""An image nobody serves (the discard port refuses): the kubelet's pull fails at once."""


@pytest.fixture
def operator(
    node_cluster: NodeCluster, node_namespace: str, bigtable_emulator: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator (a host process) on the node's API server, the CRDs and a sink there."""
    kubeconfig = node_cluster.kubeconfig
    install_crds_with_spark(kubeconfig)
    running = start_operator(kubeconfig, node_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    table = yaml.safe_load((REPO_ROOT / "docs/samples/backendtable-bigtable.yaml").read_text())
    table["spec"]["bigtable"]["table"] = f"events-{node_namespace}"
    _apply(kubeconfig, node_namespace, table)
    yield running
    running.stop()


def _apply(kubeconfig: str, namespace: str, document: dict[str, Any]) -> None:
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip


def _pipeline(name: str, **batch: Any) -> dict[str, Any]:
    resources = {"image": NODE_IMAGE, "image_pull_policy": "Never", **batch.pop("resources", {})}
    return {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "IngestPipeline",
        "metadata": {"name": name},
        "spec": {"mode": "batch", "sink": "events",
                 "batch": {"job": "vaa-ingest", "input": "/data/vaas", "resources": resources,
                           "driver_placement": {"node_selector": dict(ON_THE_NODE)}, **batch}},
    }  # fmt: skip


def _submitted(kubeconfig: str, namespace: str, name: str) -> dict[str, Any]:
    """Wait for the pipeline's SparkApplication and write SUBMITTED as the spark-operator
    does; the application as the API server has it."""
    found = wait_for(
        lambda: kubectl(kubeconfig, "-n", namespace, "get", "sparkapplication", name, "-o",
                        "json", check=False).stdout or None,
        what=f"SparkApplication {name}")  # fmt: skip
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"applicationState": {"state": "SUBMITTED"}, "submissionID": "s1",
              "submissionAttempts": 1, "executionAttempts": 1,
              "lastSubmissionAttemptTime": now,
              "driverInfo": {"podName": f"{name}-driver"}}  # fmt: skip
    patch = json.dumps({"status": status})
    kubectl(kubeconfig, "-n", namespace, "patch", "sparkapplication", name,
            "--subresource=status", "--type=merge", "-p", patch)  # fmt: skip
    application: dict[str, Any] = json.loads(found)
    return application


def _start_driver(kubeconfig: str, namespace: str, application: dict[str, Any]) -> None:
    """The driver pod as spark-submit creates it from the application."""
    spec, name = application["spec"], application["metadata"]["name"]
    driver = spec["driver"]
    labels = {**application["metadata"]["labels"], **driver.get("labels", {}),
              "spark-role": "driver", "sparkoperator.k8s.io/app-name": name}  # fmt: skip
    container = {
        "name": DRIVER_CONTAINER,
        "image": spec["image"],
        "imagePullPolicy": spec["imagePullPolicy"],
        "command": ["sleep", "600"],
        # spark-submit turns envSecretKeyRefs into secretKeyRef variables of the pod
        "env": [
            {"name": variable, "valueFrom": {"secretKeyRef": ref}}
            for variable, ref in driver.get("envSecretKeyRefs", {}).items()
        ],
        "resources": {"requests": {"cpu": str(driver["cores"]), "memory": "64Mi"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-driver", "labels": labels},
        "spec": {"restartPolicy": "Never", "nodeSelector": driver.get("nodeSelector", {}),
                 "terminationGracePeriodSeconds": 0, "containers": [container]},
    }  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "-f", "-", stdin=json.dumps(pod))


def _degraded(kubeconfig: str, namespace: str, name: str, reason: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        status = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", name).get("status")
        conditions = (status or {}).get("conditions") or []
        degraded: dict[str, Any] = next((c for c in conditions if c["type"] == "Degraded"), {})
        return degraded if degraded.get("reason") == reason else None

    return wait_for(found, timeout=120, what=f"Degraded {reason} on {name}")


def _warning(kubeconfig: str, namespace: str, reason: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        events = kubectl_json(kubeconfig, "-n", namespace, "get", "events",
                              "--field-selector", f"reason={reason}")["items"]  # fmt: skip
        return next((e for e in events if e["involvedObject"]["kind"] == "IngestPipeline"), None)

    event = wait_for(found, what=f"a {reason} event on the pipeline")
    assert event["type"] == "Warning"
    return event


def test_an_image_that_cannot_be_pulled_is_named(
    operator: OperatorProcess, node_cluster: NodeCluster, node_namespace: str
) -> None:
    kubeconfig, namespace = node_cluster.kubeconfig, node_namespace
    pipeline = _pipeline("noimage", resources={"image": UNPULLABLE,
                                               "image_pull_policy": "Always"})  # fmt: skip
    _apply(kubeconfig, namespace, pipeline)
    _start_driver(kubeconfig, namespace, _submitted(kubeconfig, namespace, "noimage"))
    degraded = _degraded(kubeconfig, namespace, "noimage", "ImagePullFailed")
    assert UNPULLABLE in degraded["message"]
    assert "noimage-driver" in degraded["message"]
    ready = next(c for c in kubectl_json(kubeconfig, "-n", namespace, "get", "ipl",
                                         "noimage")["status"]["conditions"]
                 if c["type"] == "Ready")  # fmt: skip
    assert (ready["status"], ready["reason"]) == ("False", "ImagePullFailed")
    assert UNPULLABLE in _warning(kubeconfig, namespace, "ImagePullFailed")["message"]


def test_a_driver_no_node_has_room_for_is_named(
    operator: OperatorProcess, node_cluster: NodeCluster, node_namespace: str
) -> None:
    kubeconfig, namespace = node_cluster.kubeconfig, node_namespace
    _apply(kubeconfig, namespace, _pipeline("huge", resources={"driver_cores": 512}))
    _start_driver(kubeconfig, namespace, _submitted(kubeconfig, namespace, "huge"))
    degraded = _degraded(kubeconfig, namespace, "huge", "Unschedulable")
    assert "huge-driver cannot be scheduled" in degraded["message"]
    assert "Insufficient cpu" in degraded["message"]
    _warning(kubeconfig, namespace, "Unschedulable")


def test_a_secret_gone_after_rendering_is_named(
    operator: OperatorProcess, node_cluster: NodeCluster, node_namespace: str
) -> None:
    kubeconfig, namespace = node_cluster.kubeconfig, node_namespace
    kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", "creds",
            "--from-literal=password=pw-value")  # fmt: skip
    secrets = {"env": [{"name": "CHAINLOOM_CASSANDRA__PASSWORD",
                        "secret_ref": {"name": "creds", "key": "password"}}]}  # fmt: skip
    _apply(kubeconfig, namespace, _pipeline("creds", secrets=secrets))
    application = _submitted(kubeconfig, namespace, "creds")
    kubectl(kubeconfig, "-n", namespace, "delete", "secret", "creds")
    _start_driver(kubeconfig, namespace, application)
    degraded = _degraded(kubeconfig, namespace, "creds", "MissingSecret")
    # The kubelet's words about the driver pod, not the operator's own check of the spec.
    assert "creds-driver" in degraded["message"]
    assert 'secret "creds" not found' in degraded["message"]
    assert "pw-value" not in json.dumps(kubectl_json(kubeconfig, "-n", namespace, "get",
                                                     "ipl", "creds"))  # fmt: skip
    _warning(kubeconfig, namespace, "MissingSecret")
