"""SparkApplications run by the real spark-operator on the node: a driver pod, two executor pods,
the stack's Bigtable emulator; and the faults a cluster brings (docs/stack.md, "The
spark-operator").

One input (dev-kit VAAs, each message once, so the stored cells do not depend on arrival order)
is written by a local-mode run in this process (the reference) and by SparkApplications on the
node; every table must equal the reference cell for cell. The clean run is shared by the tests
that only read it. Faults: an executor pod deleted mid-job (Spark reruns its tasks on a new
executor), the driver pod deleted mid-job (``restartPolicy: OnFailure`` submits again, the
rerun is idempotent), and the spark-operator SIGKILLed mid-run and started again (a private
controller for one namespace, so the stack's keeps running: the new one finds the application
running and follows it to the end, without submitting it twice).

A scheduled pipeline's last run is still played by the test (an IngestPipeline's mirror of a
ScheduledSparkApplication), in a namespace no spark-operator watches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from chainloom_dev.stack import versions
from chainloom_dev.stack.components.node import NODE_NAME
from chainloom_dev.stack.components.spark_operator import (
    ControllerConfig,
    lease_holder,
    start_controller,
    stop_controller,
)
from tests.cluster.node_support import NODE_IMAGE, host_relay, node_gateway
from tests.cluster.spark_support import (
    NodeJob,
    apply,
    ensure_spark_operator,
    explain,
    exported_emulator,
    get_application,
    import_spark_image,
    input_directory,
    label_namespace,
    local_reference,
    pods,
    row_count,
    running_pods,
    state_of,
    table_contents,
    termination_summary,
    wait_for_state,
)
from tests.conftest import NodeCluster, StackForTests
from tests.operator_support import (
    OperatorProcess,
    install_crds_with_spark,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)

DRIVER_CONTAINER = "spark-kubernetes-driver"
INPUT_DIR = "/input"
VAAS = 4000
"""Input size: long enough (two passes over it, flushes of 20 rows) for a fault to land
mid-job on the loaded 2-core machine."""
MID_JOB_ROWS = 100
"""Rows in the table when a fault is injected: the job is visibly writing."""


@pytest.fixture(scope="module")
def spark_image(node_cluster: NodeCluster) -> str:
    """This checkout's ``chainloom-spark`` in the node's containerd, under its own tag (built and
    imported only when it changed: a cold build takes minutes, docs/stack.md)."""
    return import_spark_image(node_cluster)


@pytest.fixture(scope="module")
def vaas() -> list[bytes]:
    return list(generate_vaas(VAAS, 27, DevGuardians(), Mix(duplicate=0, conflict=0)))


@pytest.fixture(scope="module")
def emulator(local_stack: StackForTests) -> Iterator[str]:
    with exported_emulator(local_stack) as address:
        yield address


@pytest.fixture(scope="module")
def reference(spark: Any, emulator: str, vaas: list[bytes], tmp_path_factory: Any) -> Any:
    """The input's tables as a local-mode run writes them."""
    return local_reference(vaas, "dev", tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="module")
def spark_namespace(node_cluster: NodeCluster) -> Iterator[str]:
    """A namespace the stack's spark-operator runs applications in (deleted afterwards)."""
    name = f"s-{uuid.uuid4().hex[:10]}"
    node_cluster.kubectl_run("create", "namespace", name)
    label_namespace(node_cluster.kubeconfig, name)
    try:
        yield name
    finally:
        node_cluster.kubectl_run("delete", "namespace", name, "--wait=false")


@pytest.fixture(scope="module")
def node_job(node_cluster: NodeCluster, spark_image: str, spark_namespace: str, emulator: str,
             vaas: list[bytes]) -> Iterator[NodeJob]:  # fmt: skip
    """The input on the host, the emulator relayed to the node's IP, the driver's service
    account: what every application of this module runs with."""
    ensure_spark_operator(node_cluster)
    directory = input_directory(raw.hex() for raw in vaas)
    try:
        with host_relay(node_gateway(node_cluster), emulator) as relay:
            job = NodeJob(spark_namespace, relay, directory, image=spark_image)
            apply(node_cluster.kubeconfig, job.access())
            yield job
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _executors_ran(application: dict[str, Any]) -> list[str]:
    """The executor pods the spark-operator saw for the run (``status.executorState``)."""
    return sorted((application.get("status") or {}).get("executorState") or {})


def _wait_mid_job(cluster: NodeCluster, job: NodeJob, name: str, table: str) -> None:
    """Until both executors run and the job has written :data:`MID_JOB_ROWS` rows."""

    def writing() -> bool:
        executors = running_pods(cluster.kubeconfig, job.namespace, name, "executor")
        return len(executors) >= job.executors and row_count(table) >= MID_JOB_ROWS

    wait_for_state(cluster.kubeconfig, job.namespace, name, ["RUNNING"], timeout=600)
    wait_for(writing, timeout=600, every=1, what=f"{name}'s executors writing")


@pytest.fixture(scope="module")
def clean_run(node_cluster: NodeCluster, node_job: NodeJob) -> dict[str, Any]:
    """One application run start to end, nothing disturbed: its final object and table."""
    table = f"clean-{uuid.uuid4().hex[:8]}"
    apply(node_cluster.kubeconfig, [node_job.application("clean", table)])
    seen: set[str] = set()

    def completed() -> dict[str, Any] | None:
        seen.update(running_pods(node_cluster.kubeconfig, node_job.namespace, "clean",
                                 "executor"))  # fmt: skip
        application = get_application(node_cluster.kubeconfig, node_job.namespace, "clean")
        return application if state_of(application) in ("COMPLETED", "FAILED") else None

    application = wait_for(completed, timeout=900, every=1, what="the clean run to end")
    return {"application": application, "table": table, "running_executors": seen}


def test_an_application_runs_with_two_executors_and_writes_what_local_mode_writes(
    node_cluster: NodeCluster, node_job: NodeJob, clean_run: dict[str, Any], reference: Any
) -> None:
    application = clean_run["application"]
    kubeconfig, namespace = node_cluster.kubeconfig, node_job.namespace
    assert state_of(application) == "COMPLETED", explain(kubeconfig, namespace, "clean")
    status = application["status"]
    assert status["driverInfo"]["podName"] == "clean-driver"
    assert len(_executors_ran(application)) >= 2, status
    assert len(clean_run["running_executors"]) >= 2
    assert status.get("executionAttempts", 1) == 1
    summary = termination_summary(kubeconfig, namespace, "clean-driver")
    assert (summary["job"], summary["read"], summary["new"]) == ("vaa-ingest", VAAS, VAAS)
    assert summary["refused"] == 0
    assert table_contents(clean_run["table"]) == reference


def test_stack_status_shows_the_spark_operator_healthy_with_its_version(
    node_cluster: NodeCluster, node_job: NodeJob
) -> None:
    del node_job  # the stack's spark-operator is up
    env = {**os.environ, "CHAINLOOM_RUN": str(node_cluster.run_dir)}
    status = subprocess.run(
        [sys.executable, "-m", "chainloom_dev", "stack", "status", "--json"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    row = {row["name"]: row for row in json.loads(status.stdout)}["spark-operator"]
    assert row["healthy"], row["detail"]
    assert row["version"] == versions.SPARK_OPERATOR


def test_an_executor_deleted_mid_job_is_replaced_and_the_table_is_the_same(
    node_cluster: NodeCluster, node_job: NodeJob, reference: Any
) -> None:
    kubeconfig, namespace, name = node_cluster.kubeconfig, node_job.namespace, "lost-executor"
    table = f"exec-{uuid.uuid4().hex[:8]}"
    apply(kubeconfig, [node_job.application(name, table)])
    _wait_mid_job(node_cluster, node_job, name, table)
    victim = running_pods(kubeconfig, namespace, name, "executor")[0]
    kubectl(kubeconfig, "-n", namespace, "delete", "pod", victim, "--grace-period=0", "--force")
    assert row_count(table) < VAAS, "the executor was deleted after the job had written all"
    application = wait_for_state(kubeconfig, namespace, name, ["COMPLETED"], timeout=900)
    assert victim in _executors_ran(application)
    assert table_contents(table) == reference


def test_the_driver_deleted_mid_job_is_resubmitted_and_the_rerun_is_idempotent(
    node_cluster: NodeCluster, node_job: NodeJob, reference: Any
) -> None:
    kubeconfig, namespace, name = node_cluster.kubeconfig, node_job.namespace, "lost-driver"
    table = f"drv-{uuid.uuid4().hex[:8]}"
    apply(kubeconfig, [node_job.application(name, table, retries=2)])
    _wait_mid_job(node_cluster, node_job, name, table)
    first = get_application(kubeconfig, namespace, name)
    assert first is not None
    kubectl(kubeconfig, "-n", namespace, "delete", "pod", f"{name}-driver", "--grace-period=1")
    assert row_count(table) < VAAS, "the driver was deleted after the job had written all"
    application = wait_for_state(kubeconfig, namespace, name, ["COMPLETED"], timeout=900)
    status = application["status"]
    assert status["executionAttempts"] >= 2, status
    assert status["submissionID"] != first["status"]["submissionID"]
    summary = termination_summary(kubeconfig, namespace, f"{name}-driver")
    assert summary["read"] == VAAS
    assert summary["new"] < VAAS  # the first attempt's rows were kept, not written again
    assert summary["new"] + summary["updated"] + summary["unchanged"] == VAAS
    assert table_contents(table) == reference


def test_the_spark_operator_killed_mid_run_and_restarted_follows_the_same_run(
    node_cluster: NodeCluster, node_job: NodeJob, reference: Any, tmp_path: Path
) -> None:
    """A private controller for one namespace (its own label value and Lease), so the stack's
    keeps running; SIGKILLed while the application runs, a new one takes the Lease over and
    completes the run it finds, without a second submission."""
    kubeconfig = node_cluster.kubeconfig
    state = json.loads((node_cluster.run_dir / "state.json").read_text())
    key = uuid.uuid4().hex[:8]
    namespace, name, table = f"p-{key}", "restarted", f"rst-{key}"
    node_cluster.kubectl_run("create", "namespace", namespace)
    label_namespace(kubeconfig, namespace, f"private-{key}")
    config = ControllerConfig(
        kubeconfig=kubeconfig,
        server=state["kube-apiserver"]["extra"]["server"],
        namespace_selector=f"chainloom.io/spark-operator=private-{key}",
        lease_name=f"chainloom-spark-operator-{key}",
        health_port=free_port(),
        metrics_port=free_port(),
    )
    job = replace(node_job, namespace=namespace)
    lease = f"kube-system/{config.lease_name}"
    first = start_controller("spark-operator-1", tmp_path, config, tmp_path / "first.log")
    second = None
    try:
        wait_for(lambda: lease_holder(kubeconfig, lease), timeout=60, what="the first leader")
        holder = lease_holder(kubeconfig, lease)
        apply(kubeconfig, [*job.access(), job.application(name, table)])
        _wait_mid_job(node_cluster, job, name, table)
        running = get_application(kubeconfig, namespace, name)
        assert running is not None
        driver_uid = pods(kubeconfig, namespace, name, "driver")[0]["metadata"]["uid"]
        stop_controller(first, kill=True)

        again = replace(config, health_port=free_port(), metrics_port=free_port())
        second = start_controller("spark-operator-2", tmp_path, again, tmp_path / "second.log")
        application = wait_for_state(kubeconfig, namespace, name, ["COMPLETED"], timeout=900)
        assert lease_holder(kubeconfig, lease) not in ("", holder)
        status = application["status"]
        assert status["submissionID"] == running["status"]["submissionID"]
        assert status.get("submissionAttempts", 1) == 1
        assert status.get("executionAttempts", 1) == 1
        listed = kubectl_json(kubeconfig, "-n", namespace, "get", "sparkapplications")["items"]
        assert [item["metadata"]["name"] for item in listed] == [name]
        assert pods(kubeconfig, namespace, name, "driver")[0]["metadata"]["uid"] == driver_uid
        assert table_contents(table) == reference
    finally:
        for controller in (first, second):
            if controller is not None:
                stop_controller(controller)
        kubectl(kubeconfig, "-n", "kube-system", "delete", "lease", config.lease_name,
                "--ignore-not-found")  # fmt: skip
        node_cluster.kubectl_run("delete", "namespace", namespace, "--wait=false")


@pytest.fixture
def operator_on_node_api(
    node_cluster: NodeCluster, node_namespace: str, bigtable_emulator: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator (a host process) on the node's API server, the CRDs installed there."""
    kubeconfig = node_cluster.kubeconfig
    install_crds_with_spark(kubeconfig)
    running = start_operator(kubeconfig, node_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    yield running
    running.stop()


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
