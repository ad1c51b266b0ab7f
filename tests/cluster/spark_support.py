"""Helpers of the tests that run SparkApplications on the node with the real spark-operator.

The stack's spark-operator (``chainloom-dev stack up --node``) runs applications in namespaces
labelled ``chainloom.io/spark-operator=enabled``; a test labels its namespace, applies the
driver's service account (``render_driver_access``) and an application
(``render_application``), and waits for the application's state. Driver and executors read
their input from a host directory mounted with Spark's own volume settings (the controller runs
without its webhook, so the SparkApplication's ``volumes`` would not reach the pods) and reach
the stack's Bigtable emulator through a relay on the node's IP (:func:`host_relay`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import TableMissingError
from chainloom.settings import BigtableSettings
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.stack._model import SilentProgress
from chainloom_dev.stack.components.image import archive_digest, build_image, import_if_changed
from chainloom_dev.stack.components.node import ctr
from chainloom_dev.stack.components.spark_image import (
    SPARK_IMAGE,
    SPARK_IMAGE_REFERENCE,
    SPARK_RECIPE,
)
from chainloom_dev.stack.components.spark_operator import NAMESPACE_LABEL
from chainloom_spark.manifest import render_application, render_driver_access
from chainloom_spark.settings import KubernetesSettings, SparkJobSettings, SparkSettings
from tests.cluster.node_support import wait_explained
from tests.conftest import NodeCluster, StackForTests
from tests.operator_support import kubectl

APP_LABEL = "sparkoperator.k8s.io/app-name"
"""The label the spark-operator puts on an application's driver and executor pods."""

ROLE_LABEL = "spark-role"
"""Spark's own label: ``driver`` or ``executor``."""

FINISHED = ("COMPLETED", "FAILED", "SUBMISSION_FAILED")
"""Application states that end a run (no retry left)."""

INPUT_MOUNT = "/input"
"""Where driver and executors see the input directory."""
GUARDIANS_FILE = "guardians.json"
"""The dev guardian set, as a guardian-set file in the input directory."""


def ensure_spark_operator(cluster: NodeCluster) -> dict[str, Any]:
    """The node's spark-operator as ``state.json`` records it, (re)started in that run directory
    unless it is running (``stack up`` leaves a running component alone)."""
    env = {**os.environ, "CHAINLOOM_RUN": str(cluster.run_dir)}
    started = subprocess.run(
        [sys.executable, "-m", "chainloom_dev", "stack", "up", "--only", "spark-operator"],
        env=env, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    found: dict[str, Any] = json.loads((cluster.run_dir / "state.json").read_text())[
        "spark-operator"
    ]
    return found


def import_spark_image(cluster: NodeCluster) -> str:
    """``chainloom-spark`` of this checkout in the node's containerd, under a tag of its own
    inputs (``chainloom-spark:<hash>``): the node is shared, and another checkout's tests may
    import their ``chainloom-spark:dev`` at any time. Built and imported only when missing."""
    state = json.loads((cluster.run_dir / "state.json").read_text())
    socket = Path(state["containerd"]["extra"]["socket"])
    archive, inputs = build_image(SPARK_RECIPE, SilentProgress())
    digest = archive_digest(archive)
    tag = f"{SPARK_IMAGE.split(':')[0]}:{inputs[:12]}"
    reference = f"docker.io/library/{tag}"
    for _ in range(3):
        listed = ctr(socket, "images", "ls", timeout=60).splitlines()[1:]
        if any(line.split()[:1] == [reference] and digest in line for line in listed):
            return tag
        import_if_changed(socket, archive, SPARK_IMAGE_REFERENCE)
        ctr(socket, "images", "tag", "--force", SPARK_IMAGE_REFERENCE, reference)
    pytest.fail(f"{tag} did not keep digest {digest} (another import raced it three times)")


def label_namespace(kubeconfig: str, namespace: str, value: str = NAMESPACE_LABEL[1]) -> None:
    """Label ``namespace`` for the spark-operator whose selector names ``value``."""
    kubectl(kubeconfig, "label", "namespace", namespace, "--overwrite",
            f"{NAMESPACE_LABEL[0]}={value}")  # fmt: skip


def apply(kubeconfig: str, documents: Iterable[dict[str, Any]]) -> None:
    """``kubectl apply`` each document (they name their namespace)."""
    kubectl(kubeconfig, "apply", "-f", "-",
            stdin=yaml.safe_dump_all(list(documents), sort_keys=False))  # fmt: skip


def input_directory(lines: Iterable[str]) -> Path:
    """A host directory holding ``vaas.txt`` (one VAA per line) and ``guardians.json`` (the dev
    kit's 19 guardians as a guardian-set file: the product image has no dev kit, so pods read
    the set as a user's pods would), readable by the image's user."""
    directory = Path(tempfile.mkdtemp(prefix="chainloom-spark-input-"))
    (directory / "vaas.txt").write_text("".join(f"{line}\n" for line in lines))
    (directory / GUARDIANS_FILE).write_text(json.dumps(DevGuardians().sets(0).to_json()))
    directory.chmod(0o755)
    for written in ("vaas.txt", GUARDIANS_FILE):
        (directory / written).chmod(0o644)
    return directory


def node_conf(input_dir: Path) -> dict[str, str]:
    """The Spark settings of every application the tests run on the node: small CPU requests
    (the node has two cores) and ``input_dir`` mounted read-only at :data:`INPUT_MOUNT` in the
    driver and the executors."""
    conf = {"spark.kubernetes.driver.request.cores": "250m",
            "spark.kubernetes.executor.request.cores": "250m"}  # fmt: skip
    for role in ("driver", "executor"):
        volume = f"spark.kubernetes.{role}.volumes.hostPath.input"
        conf |= {f"{volume}.mount.path": INPUT_MOUNT, f"{volume}.mount.readOnly": "true",
                 f"{volume}.options.path": str(input_dir)}  # fmt: skip
    return conf


@dataclass(frozen=True)
class NodeJob:
    """How the tests' applications run on the node."""

    namespace: str
    """Where the application, its pods and its service account live."""
    bigtable: str
    """The emulator as pods reach it (``<node IP>:<relay port>``)."""
    input_dir: Path
    """The host directory mounted at :data:`INPUT_MOUNT`."""
    image: str = SPARK_IMAGE
    """The Spark image (:func:`import_spark_image`'s tag)."""
    executors: int = 2
    """Executor pods (one core each)."""
    partitions: int = 8
    """Input partitions (tasks per pass)."""

    def settings(self) -> SparkJobSettings:
        return SparkJobSettings(
            spark=SparkSettings(shuffle_partitions=2, conf=node_conf(self.input_dir)),
            kubernetes=KubernetesSettings(
                namespace=self.namespace,
                image=self.image,
                image_pull_policy="Never",
                driver_memory="768m",
                executor_instances=self.executors,
                executor_cores=1,
                executor_memory="768m",
                env={"BIGTABLE_EMULATOR_HOST": self.bigtable,
                     "CHAINLOOM_WRITER__FLUSH_ROWS": "20"},
            ),
        )  # fmt: skip

    def access(self) -> list[dict[str, Any]]:
        """The driver's service account and its Role."""
        return render_driver_access(self.settings())

    def application(self, name: str, table: str, *, retries: int = 0) -> dict[str, Any]:
        """vaa-ingest of ``vaas.txt`` into ``table``; ``retries``: restartPolicy OnFailure."""
        arguments = ["--input", f"{INPUT_MOUNT}/vaas.txt", "--table", table,
                     "--guardian-set", f"{INPUT_MOUNT}/{GUARDIANS_FILE}",
                     "--partitions", str(self.partitions)]  # fmt: skip
        document = render_application("vaa-ingest", arguments, self.settings(), name=name)
        if retries:
            document["spec"]["restartPolicy"] = {
                "type": "OnFailure", "onFailureRetries": retries, "onFailureRetryInterval": 5,
                "onSubmissionFailureRetries": retries, "onSubmissionFailureRetryInterval": 5,
            }  # fmt: skip
        return document


def get_application(kubeconfig: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The SparkApplication, or None."""
    found = kubectl(kubeconfig, "-n", namespace, "get", "sparkapplication", name, "-o", "json",
                    check=False)  # fmt: skip
    if found.returncode != 0:
        return None
    application: dict[str, Any] = json.loads(found.stdout)
    return application


def state_of(application: dict[str, Any] | None) -> str:
    """``status.applicationState.state`` ('' before the controller wrote one)."""
    status = (application or {}).get("status") or {}
    return str((status.get("applicationState") or {}).get("state") or "")


def pods(kubeconfig: str, namespace: str, application: str, role: str) -> list[dict[str, Any]]:
    """The application's pods of ``role`` (``driver`` / ``executor``) that exist now."""
    found = kubectl(kubeconfig, "-n", namespace, "get", "pods", "-o", "json", "-l",
                    f"{APP_LABEL}={application},{ROLE_LABEL}={role}")  # fmt: skip
    items: list[dict[str, Any]] = json.loads(found.stdout)["items"]
    return items


def running_pods(kubeconfig: str, namespace: str, application: str, role: str) -> list[str]:
    """Names of the application's Running pods of ``role``."""
    return [pod["metadata"]["name"] for pod in pods(kubeconfig, namespace, application, role)
            if pod["status"].get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp")]  # fmt: skip


def explain(kubeconfig: str, namespace: str, name: str) -> str:
    """The application's status, its pods and its driver's log tail (for failure messages)."""
    application = get_application(kubeconfig, namespace, name)
    listed = kubectl(kubeconfig, "-n", namespace, "get", "pods", "-o", "wide", check=False).stdout
    driver = f"{name}-driver"
    log = kubectl(kubeconfig, "-n", namespace, "logs", driver, "--tail=60", check=False)
    status = json.dumps((application or {}).get("status"), indent=1)[-3000:]
    return f"status: {status}\npods:\n{listed}\n{driver} log:\n{log.stdout}{log.stderr}"


def wait_for_state(kubeconfig: str, namespace: str, name: str, states: Iterable[str], *,
                   timeout: float = 600, every: float = 2) -> dict[str, Any]:  # fmt: skip
    """Wait until the application is in one of ``states``; fail (with its pods and driver log)
    after ``timeout`` or when it ends in another state."""
    wanted = tuple(states)

    def reached() -> dict[str, Any] | None:
        application = get_application(kubeconfig, namespace, name)
        state = state_of(application)
        if state in wanted:
            return application
        if state in FINISHED:
            pytest.fail(f"{name} ended {state}, not {' or '.join(wanted)}\n"
                        f"{explain(kubeconfig, namespace, name)}")  # fmt: skip
        return None

    return wait_explained(
        reached,
        what=f"{name} to be {' or '.join(wanted)}",
        timeout=timeout,
        every=every,
        explain=lambda: explain(kubeconfig, namespace, name),
    )


def termination_summary(kubeconfig: str, namespace: str, driver: str) -> dict[str, Any]:
    """The job's counts the driver container left as its termination message."""
    found = json.loads(kubectl(kubeconfig, "-n", namespace, "get", "pod", driver, "-o",
                               "json").stdout)  # fmt: skip
    (container,) = found["status"]["containerStatuses"]
    summary: dict[str, Any] = json.loads(container["state"]["terminated"]["message"])
    return summary


@contextlib.contextmanager
def exported_emulator(local_stack: StackForTests) -> Iterator[str]:
    """The stack's Bigtable emulator, exported for this process while the block runs (the
    tests read the tables here)."""
    address = local_stack.require("bigtable")["bigtable"].address
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIGTABLE_EMULATOR_HOST", address)
        yield address


def local_reference(vaas: list[bytes], guardian_set: str, directory: Path) -> Any:
    """The tables of ``vaas`` as a local-mode vaa-ingest run writes them (in this process's
    Spark session): what every node run is compared with, cell for cell."""
    from chainloom_spark.jobs import vaa_ingest

    path = directory / "vaas.txt"
    path.write_text("".join(raw.hex() + "\n" for raw in vaas))
    table = f"ref-{uuid.uuid4().hex[:10]}"
    code = vaa_ingest.main(["--input", str(path), "--table", table, "--guardian-set",
                            guardian_set, "--partitions", "8"])  # fmt: skip
    assert code == 0
    contents = table_contents(table)
    assert len(contents[0]) == len(vaas)
    return contents


def table_contents(table: str) -> tuple[dict[str, Any], list[Any]]:
    """Every cell of the events table and its index (the emulator of this process's env), the
    event feed's rows left out (``feed:``, keyed by their write time)."""
    store = BigtableSettings(project="chainloom", instance="local", table=table)
    with BigtableTables(store) as tables:
        index = tables.scan_index("", "~")
        return dict(tables.scan_events([("", "~")])), [
            r for r in index if r[0] < "feed:" or r[0] >= "feed;"
        ]


def row_count(table: str) -> int:
    """Rows of the events table (0 before it exists)."""
    try:
        return len(table_contents(table)[0])
    except TableMissingError:
        return 0
