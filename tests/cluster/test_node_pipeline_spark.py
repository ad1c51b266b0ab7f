"""A batch IngestPipeline end to end on the node: the chainloom operator renders its
SparkApplication, the stack's real spark-operator submits it (spark-submit in cluster mode), a
driver pod and two executor pods write the stack's Bigtable emulator, and the operator mirrors
what the spark-operator and the driver report into the pipeline's status (issue 27 §2).

Nothing here plays the controller: the states the pipeline shows are the ones the spark-operator
wrote, the counts are the ones the driver left as its termination message. The table the run
writes must equal what a local-mode run of the same input writes, cell for cell. One run for
the module (it takes minutes on the shared 2-core node); the tests only read it.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from chainloom.wormhole.vaa import parse_vaa
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from tests.cluster.node_support import host_relay, node_gateway, tilt_devnet_quorum, wait_explained
from tests.cluster.spark_support import (
    INPUT_MOUNT,
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
    running_pods,
    table_contents,
    termination_summary,
)
from tests.conftest import REPO_ROOT, NodeCluster, StackForTests
from tests.operator_support import (
    install_crds_with_spark,
    kubectl,
    kubectl_json,
    start_operator,
)

NAME = "ingest"
"""The pipeline, and so its SparkApplication (the driver pod is ``ingest-driver``)."""
VAAS = 2000
"""Input size: enough for the run to be seen RUNNING with both executors at work."""
EXECUTORS = 2
ENDED = ("COMPLETED", "FAILED", "SUBMISSION_FAILED")


@pytest.fixture(scope="module")
def vaas() -> list[bytes]:
    """Each message once, signed by a quorum of the Tilt devnet's guardians: the image's
    bundled ``devnet`` set verifies them (the dev kit, and its ``dev`` set, is not in it)."""
    quorum = tilt_devnet_quorum()
    bodies = generate_vaas(VAAS, 72, DevGuardians(), Mix(duplicate=0, conflict=0))
    return [quorum.sign_body(parse_vaa(raw).body, signers=range(13)) for raw in bodies]


@pytest.fixture(scope="module")
def emulator(local_stack: StackForTests) -> Iterator[str]:
    with exported_emulator(local_stack) as address:
        yield address


@pytest.fixture(scope="module")
def reference(spark: Any, emulator: str, vaas: list[bytes], tmp_path_factory: Any) -> Any:
    """The input's tables as a local-mode run writes them."""
    return local_reference(vaas, "devnet", tmp_path_factory.mktemp("reference"))


def _pipeline(job: NodeJob, table: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sink BackendTable and the batch IngestPipeline, with the sizes, input volume and
    emulator address of :class:`NodeJob` (what the node's other Spark tests run with)."""
    settings = job.settings()
    kube = settings.kubernetes
    sink = yaml.safe_load((REPO_ROOT / "docs/samples/backendtable-bigtable.yaml").read_text())
    sink["spec"]["bigtable"]["table"] = table
    resources = {"image": kube.image, "image_pull_policy": kube.image_pull_policy,
                 "driver_memory": kube.driver_memory, "executor_instances": kube.executor_instances,
                 "executor_cores": kube.executor_cores, "executor_memory": kube.executor_memory,
                 "env": dict(kube.env)}  # fmt: skip
    pipeline = {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "IngestPipeline",
        "metadata": {"name": NAME},
        "spec": {"mode": "batch", "sink": sink["metadata"]["name"],
                 "batch": {"job": "vaa-ingest", "input": f"{INPUT_MOUNT}/vaas.txt",
                           "guardian_sets": {"source": "devnet"},
                           "arguments": ["--partitions", str(job.partitions)],
                           "spark": {"shuffle_partitions": settings.spark.shuffle_partitions,
                                     "conf": dict(settings.spark.conf)},
                           "resources": resources}},
    }  # fmt: skip
    return sink, pipeline


def _pipeline_status(kubeconfig: str, namespace: str) -> dict[str, Any]:
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", NAME).get("status")
    return dict(found or {})


@pytest.fixture(scope="module")
def run(node_cluster: NodeCluster, emulator: str, vaas: list[bytes]) -> Iterator[dict[str, Any]]:
    """The pipeline applied in a namespace of its own (labelled for the spark-operator), the
    operator running for it, followed until the application ends: the states the pipeline's
    status went through, the executor pods seen running, the final status and application."""
    kubeconfig = node_cluster.kubeconfig
    image = import_spark_image(node_cluster)
    ensure_spark_operator(node_cluster)
    install_crds_with_spark(kubeconfig)
    namespace, table = f"e-{uuid.uuid4().hex[:10]}", f"ipl-{uuid.uuid4().hex[:8]}"
    node_cluster.kubectl_run("create", "namespace", namespace)
    directory = input_directory(raw.hex() for raw in vaas)
    operator = None
    try:
        label_namespace(kubeconfig, namespace)
        with host_relay(node_gateway(node_cluster), emulator) as relay:
            job = NodeJob(namespace, relay, directory, image=image, executors=EXECUTORS)
            apply(kubeconfig, job.access())
            log = directory.parent / f"chainloom-operator-{namespace}.log"
            operator = start_operator(kubeconfig, namespace, log,
                                      env={"BIGTABLE_EMULATOR_HOST": emulator})  # fmt: skip
            sink, pipeline = _pipeline(job, table)
            for document in (sink, pipeline):
                kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                        stdin=yaml.safe_dump(document))  # fmt: skip
            states: list[str] = []
            executors: set[str] = set()

            def ended() -> dict[str, Any] | None:
                executors.update(running_pods(kubeconfig, namespace, NAME, "executor"))
                status = _pipeline_status(kubeconfig, namespace)
                state = str(status.get("state") or "")
                if state and state not in states[-1:]:
                    states.append(state)
                # a completed run is over for the pipeline once its counts are in
                over = state in ENDED and (status.get("summary") or state != "COMPLETED")
                return status if over else None

            def why() -> str:
                tail = operator.output()[-3000:] if operator is not None else ""
                return (f"pipeline states: {states}\n{explain(kubeconfig, namespace, NAME)}\n"
                        f"operator log:\n{tail}")  # fmt: skip

            status = wait_explained(ended, what=f"pipeline {NAME} to end", explain=why,
                                    timeout=1200, every=1)  # fmt: skip
            yield {
                "namespace": namespace, "table": table, "states": states, "status": status,
                "executors": executors, "explain": why(),
                "application": get_application(kubeconfig, namespace, NAME),
            }  # fmt: skip
    finally:
        if operator is not None:
            operator.stop()
        node_cluster.kubectl_run("delete", "namespace", namespace, "--wait=false")
        shutil.rmtree(directory, ignore_errors=True)


def test_the_pipeline_shows_the_real_states_attempts_and_executors(
    node_cluster: NodeCluster, run: dict[str, Any]
) -> None:
    status, application = run["status"], run["application"]
    assert status["state"] == "COMPLETED", run["explain"]
    # what the spark-operator wrote on the way, seen in the pipeline's status
    assert {"SUBMITTED", "RUNNING"} & set(run["states"][:-1]), run["states"]
    assert run["states"][-1] == "COMPLETED"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", status["conditions"]
    assert application is not None
    mirrored = application["status"]
    assert (status["submissionAttempts"], status["executionAttempts"]) == (1, 1), status
    assert status["driverPod"] == f"{NAME}-driver" == mirrored["driverInfo"]["podName"]
    (attempt,) = status["attempts"]
    assert attempt["application"] == NAME
    assert attempt["number"] == 1
    assert attempt["submissionId"] == mirrored["submissionID"] != ""
    assert attempt["driverPod"] == f"{NAME}-driver"
    assert attempt["state"] == "COMPLETED"
    assert attempt["terminated"] == mirrored["terminationTime"] != ""
    # two executor pods ran, and the pipeline lists what the spark-operator saw of them
    assert len(run["executors"]) >= EXECUTORS, run["executors"]
    assert set(status["executorState"]) == set(mirrored["executorState"]), status
    assert len(status["executorState"]) >= EXECUTORS


def test_the_pipeline_shows_the_drivers_counts(
    node_cluster: NodeCluster, run: dict[str, Any]
) -> None:
    summary = termination_summary(node_cluster.kubeconfig, run["namespace"], f"{NAME}-driver")
    assert (summary["job"], summary["read"], summary["new"], summary["refused"]) == (
        "vaa-ingest", VAAS, VAAS, 0
    )  # fmt: skip
    counts = {key: value for key, value in summary.items() if isinstance(value, int)}
    assert run["status"]["summary"] == counts


def test_the_table_equals_a_local_mode_run_cell_for_cell(
    run: dict[str, Any], reference: Any
) -> None:
    assert run["status"]["state"] == "COMPLETED", run["explain"]
    assert table_contents(run["table"]) == reference
