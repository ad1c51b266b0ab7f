"""An IngestPipeline's Spark job on the real node: the job the operator renders, run in a pod of
``chainloom-spark:dev`` with ``spark-submit --master local[*]``, writes the stack's Bigtable
emulator, and its counts reach the IngestPipeline's status through the driver pod's termination
message (docs/stack.md, "The Spark image").

No spark-operator controller runs here, so the test plays its two parts: it starts the driver pod
from the SparkApplication's spec (container ``spark-kubernetes-driver``, as Spark names it) and,
once the pod has ended, writes the application's status as the controller would (``COMPLETED``,
``driverInfo.podName``) through the status subresource. The operator does the rest for real.
A scheduled pipeline's counts come the same way, from the run its ScheduledSparkApplication
names in ``status.lastRunName``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.service import locate
from chainloom.settings import BigtableSettings
from chainloom.wormhole import parse_vaa
from chainloom_dev.stack._model import SilentProgress
from chainloom_dev.stack.components.image import build_image, import_if_changed
from chainloom_dev.stack.components.node import NODE_NAME
from chainloom_dev.stack.components.spark_image import (
    SPARK_IMAGE,
    SPARK_IMAGE_REFERENCE,
    SPARK_RECIPE,
)
from tests.cluster.node_support import NODE_IMAGE
from tests.conftest import NodeCluster
from tests.operator_support import (
    OperatorProcess,
    install_crds,
    kubectl,
    kubectl_json,
    spark_operator_crds,
    start_operator,
    wait_established,
    wait_for,
)

DRIVER_CONTAINER = "spark-kubernetes-driver"
INPUT_DIR = "/input"


@pytest.fixture(scope="module")
def spark_image(node_cluster: NodeCluster) -> str:
    """``chainloom-spark:dev`` of this checkout in the node's containerd (built and imported
    only when it changed: a cold build takes minutes, docs/stack.md)."""
    state = json.loads((node_cluster.run_dir / "state.json").read_text())
    archive, _ = build_image(SPARK_RECIPE, SilentProgress())
    socket = Path(state["containerd"]["extra"]["socket"])
    import_if_changed(socket, archive, SPARK_IMAGE_REFERENCE)
    return SPARK_IMAGE


@pytest.fixture
def operator_on_node_api(
    node_cluster: NodeCluster, node_namespace: str, bigtable_emulator: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator (a host process) on the node's API server, the CRDs installed there."""
    kubeconfig = node_cluster.kubeconfig
    install_crds(kubeconfig)
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts",
            "--field-manager=chainloom-tests", "-f", str(spark_operator_crds()))  # fmt: skip
    wait_established(kubeconfig, "sparkapplications.sparkoperator.k8s.io")
    running = start_operator(kubeconfig, node_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    yield running
    running.stop()


def _signed_mainnet(vaa_vectors: list[dict[str, Any]]) -> list[bytes]:
    return [
        bytes.fromhex(v["hex"])
        for v in vaa_vectors
        if v["expected"].get("num_signatures", 0) > 0
        and (v["expected"].get("verified_against") or "").startswith("mainnet")
    ]


def _driver_pod(application: dict[str, Any], bigtable_emulator: str) -> dict[str, Any]:
    """The driver pod of ``application`` as a local-mode ``spark-submit``: its image, file,
    arguments, Spark configuration and environment; host networking reaches the emulator."""
    spec = application["spec"]
    conf = [f"--conf={key}={value}" for key, value in sorted(spec["sparkConf"].items())]
    env = [*spec["driver"].get("env", []), {"name": "BIGTABLE_EMULATOR_HOST",
                                             "value": bigtable_emulator}]  # fmt: skip
    name = application["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-driver", "labels": spec["driver"]["labels"]},
        "spec": {
            "restartPolicy": "Never",
            "hostNetwork": True,
            "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
            "containers": [
                {
                    "name": DRIVER_CONTAINER,
                    "image": spec["image"],
                    "imagePullPolicy": spec["imagePullPolicy"],
                    "command": [
                        *("spark-submit", "--master", "local[*]"),
                        "--conf=spark.driver.bindAddress=127.0.0.1",
                        "--conf=spark.driver.host=127.0.0.1",
                        *conf,
                        spec["mainApplicationFile"].removeprefix("local://"),
                        *spec["arguments"],
                    ],
                    "env": env,
                    "volumeMounts": [{"name": "input", "mountPath": INPUT_DIR}],
                }
            ],
            "volumes": [{"name": "input", "configMap": {"name": f"{name}-input"}}],
        },
    }


def test_a_pipelines_job_runs_on_the_node_writes_bigtable_and_its_counts_reach_the_status(
    node_cluster: NodeCluster,
    node_namespace: str,
    spark_image: str,
    operator_on_node_api: OperatorProcess,
    bigtable_emulator: str,
    vaa_vectors: list[dict[str, Any]],
) -> None:
    kubeconfig, namespace = node_cluster.kubeconfig, node_namespace
    table = f"events-{namespace}"
    signed = _signed_mainnet(vaa_vectors)
    lines = [raw.hex() for raw in signed] + ["zz-not-a-vaa"]
    resources: list[dict[str, Any]] = [
        {"apiVersion": "chainloom.io/v1alpha1", "kind": "BackendTable",
         "metadata": {"name": "events"},
         "spec": {"backend": "bigtable", "bigtable": {"table": table}}},
        {"apiVersion": "chainloom.io/v1alpha1", "kind": "IngestPipeline",
         "metadata": {"name": "ingest"},
         "spec": {"mode": "batch", "sink": "events",
                  "batch": {"job": "vaa-ingest", "input": f"{INPUT_DIR}/vaas.txt",
                            "guardian_sets": {"source": "mainnet"},
                            "resources": {"image": spark_image,
                                          "image_pull_policy": "Never"}}}},
    ]  # fmt: skip
    for resource in resources:
        kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                stdin=yaml.safe_dump(resource))  # fmt: skip

    def tables_ready() -> bool:
        status = kubectl_json(kubeconfig, "-n", namespace, "get", "backendtable", "events")
        conditions = (status.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for(tables_ready, timeout=120, what="the BackendTable's tables")
    application = wait_for(
        lambda: json.loads(
            kubectl(kubeconfig, "-n", namespace, "get", "sparkapplication", "ingest", "-o",
                    "json", check=False).stdout or "null"
        ),
        what="the rendered SparkApplication",
    )  # fmt: skip
    assert application["spec"]["image"] == SPARK_IMAGE
    assert application["spec"]["arguments"][:3] == ["vaa-ingest", "--input", "/input/vaas.txt"]

    # The driver pod, as the spark-operator would start it (in local mode here).
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ingest-input"},
            "data": {"vaas.txt": "\n".join(lines) + "\n"}}  # fmt: skip
    pod = _driver_pod(application, bigtable_emulator)
    for manifest in (data, pod):
        kubectl(kubeconfig, "-n", namespace, "apply", "-f", "-", stdin=json.dumps(manifest))
    driver = pod["metadata"]["name"]

    def ended_pod() -> dict[str, Any] | None:
        found: dict[str, Any] = kubectl_json(kubeconfig, "-n", namespace, "get", "pod", driver)
        return found if found["status"].get("phase") in ("Succeeded", "Failed") else None

    ended = wait_for(ended_pod, timeout=600, every=2, what="the driver pod to end")
    logs = kubectl(kubeconfig, "-n", namespace, "logs", driver, check=False).stdout
    assert ended["status"].get("phase") == "Succeeded", logs[-4000:]

    # The job's summary, as Kubernetes kept it from the container's termination message.
    (container,) = ended["status"]["containerStatuses"]
    counts = json.loads(container["state"]["terminated"]["message"])
    assert counts["job"] == "vaa-ingest"
    assert counts["read"] == len(lines)
    assert counts["refused"] == 1
    ids = {parse_vaa(raw).message_id for raw in signed}
    assert counts["new"] == len(ids) > 0

    # What it wrote, read back from the stack's emulator.
    store = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    with BigtableTables(store) as tables:
        reader = EventReader(tables)
        for message_id in ids:
            assert reader.get(message_id) is not None, message_id

    # The controller's part: the application finished, its driver was that pod.
    finished = {"status": {"applicationState": {"state": "COMPLETED"},
                           "driverInfo": {"podName": driver}}}  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "patch", "sparkapplication", "ingest",
            "--subresource=status", "--type=merge", "-p", json.dumps(finished))  # fmt: skip
    expected = {k: v for k, v in counts.items() if isinstance(v, int)}

    def summary() -> dict[str, Any] | None:
        status = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", "ingest").get("status")
        found = (status or {}).get("summary") or {}
        return found if found == expected and status["state"] == "COMPLETED" else None

    wait_for(summary, timeout=60, what="the job's counts in the IngestPipeline's status")

    # A rerun (the controller starts the application again): the last run's counts are cleared.
    rerun = {"status": {"applicationState": {"state": "RUNNING"}}}
    kubectl(kubeconfig, "-n", namespace, "patch", "sparkapplication", "ingest",
            "--subresource=status", "--type=merge", "-p", json.dumps(rerun))  # fmt: skip

    def cleared() -> bool:
        status = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", "ingest")["status"]
        return status["state"] == "RUNNING" and not status.get("summary")

    wait_for(cleared, timeout=60, what="the summary cleared for the rerun")


def test_a_schedules_last_run_reaches_the_status_with_its_counts(
    node_cluster: NodeCluster, node_namespace: str, operator_on_node_api: OperatorProcess
) -> None:
    """A scheduled pipeline: the operator follows the ScheduledSparkApplication's
    ``status.lastRunName`` to that run's SparkApplication and its driver pod's termination
    message. The test plays the absent controller again: it starts the run's driver (a pod of
    the chainloom image on the node that writes a summary as the job does and exits), records
    the run as COMPLETED, then names it in the schedule's status."""
    kubeconfig, namespace = node_cluster.kubeconfig, node_namespace
    resources: list[dict[str, Any]] = [
        {"apiVersion": "chainloom.io/v1alpha1", "kind": "BackendTable",
         "metadata": {"name": "events"},
         "spec": {"backend": "bigtable", "bigtable": {"table": f"events-{namespace}"}}},
        {"apiVersion": "chainloom.io/v1alpha1", "kind": "IngestPipeline",
         "metadata": {"name": "nightly"},
         "spec": {"mode": "batch", "sink": "events", "schedule": "0 2 * * *",
                  "batch": {"job": "vaa-ingest", "input": f"{INPUT_DIR}/vaas.txt"}}},
    ]  # fmt: skip
    for resource in resources:
        kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                stdin=yaml.safe_dump(resource))  # fmt: skip
    schedule = wait_for(
        lambda: json.loads(
            kubectl(kubeconfig, "-n", namespace, "get", "scheduledsparkapplication", "nightly",
                    "-o", "json", check=False).stdout or "null"
        ),
        what="the rendered ScheduledSparkApplication",
    )  # fmt: skip

    # The run's driver: a real container that leaves the job's kind of summary behind.
    run, driver = "nightly-1764000000", "nightly-1764000000-driver"
    summary = {"job": "vaa-ingest", "read": 41, "new": 37, "duplicates": 3, "refused": 1}
    write = f"open('/dev/termination-log', 'w').write({json.dumps(json.dumps(summary))})"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": driver},
           "spec": {"restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
                    "containers": [{"name": DRIVER_CONTAINER, "image": NODE_IMAGE,
                                    "imagePullPolicy": "Never",
                                    "command": ["python3", "-c", write]}]}}  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "-f", "-", stdin=json.dumps(pod))

    def ended() -> dict[str, Any] | None:
        found: dict[str, Any] = kubectl_json(kubeconfig, "-n", namespace, "get", "pod", driver)
        return found if found["status"].get("phase") in ("Succeeded", "Failed") else None

    finished_pod = wait_for(ended, timeout=180, every=1, what="the run's driver pod to end")
    assert finished_pod["status"]["phase"] == "Succeeded", finished_pod["status"]

    # The controller's part: the run (owned by the schedule, from its template) finished ...
    application = {
        "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
        "metadata": {"name": run, "labels": schedule["metadata"].get("labels", {}),
                     "ownerReferences": [{"apiVersion": schedule["apiVersion"],
                                          "kind": "ScheduledSparkApplication",
                                          "name": "nightly",
                                          "uid": schedule["metadata"]["uid"],
                                          "controller": True}]},
        "spec": schedule["spec"]["template"],
    }  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "-f", "-", stdin=json.dumps(application))
    completed = {"status": {"applicationState": {"state": "COMPLETED"},
                            "driverInfo": {"podName": driver}}}  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "patch", "sparkapplication", run,
            "--subresource=status", "--type=merge", "-p", json.dumps(completed))  # fmt: skip
    # ... and the schedule names it as its last run.
    scheduled = {"status": {"scheduleState": "Scheduled", "lastRunName": run,
                            "lastRun": "2026-11-24T02:00:00Z",
                            "nextRun": "2026-11-25T02:00:00Z"}}  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "patch", "scheduledsparkapplication", "nightly",
            "--subresource=status", "--type=merge", "-p", json.dumps(scheduled))  # fmt: skip
    expected = {k: v for k, v in summary.items() if isinstance(v, int)}

    def counted() -> dict[str, Any] | None:
        status = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", "nightly").get("status")
        found = status or {}
        wanted = (found.get("state"), found.get("lastRun"), found.get("summary"))
        return found if wanted == ("Scheduled", run, expected) else None

    wait_for(counted, timeout=60, what="the last run's counts in the IngestPipeline's status")
