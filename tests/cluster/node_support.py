"""Helpers of the tests that run the chart and the operator's children on the real node.

Pods on the node sit on the CNI bridge; the stack's servers listen on the host's loopback,
which a pod cannot reach. The node's IP is the bridge's gateway (docs/stack.md), so a
:func:`host_relay` (socat, as the stack's ``apiserver-relay`` does for the API server) listens
there and forwards to a loopback server: a pod then reaches the stack's Redis, Bigtable
emulator or a spy replay at ``<gateway>:<port>``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.stack.components.image import IMAGE
from chainloom_dev.stack.components.kubernetes import helm_dir
from chainloom_dev.stack.components.node import NODE_NAME
from tests.conftest import REPO_ROOT, NodeCluster
from tests.operator_support import kubectl, kubectl_json, wait_for

T = TypeVar("T")

CHART = REPO_ROOT / "charts" / "chainloom"

NODE_IMAGE = os.environ.get("CHAINLOOM_NODE_IMAGE", IMAGE)
"""The chainloom image the node tests run: ``chainloom:dev`` (what ``chainloom-dev stack image``
imports), or an image an engineer built from a worktree and imported under another tag, so
the shared node's image need not be replaced to test a change."""

ON_THE_NODE = {"chainloom.io/node": "real"}
"""The real node's label (the KWOK node is tainted, so nothing lands there unasked anyway)."""

# scripts/devnet-consts.json of wormhole-foundation/wormhole, devnetGuardians[0..12].private:
# the Tilt devnet's public test keys (never for real funds). Thirteen of its nineteen guardians
# are a quorum, so VAAs they sign verify against the bundled ``devnet`` guardian set, which a
# pod has without any file.
_TILT_GUARDIAN_KEYS = (
    "cfb12303a19cde580bb4dd771639b0d26bc68353645571a8cff516ab2ee113a0",
    "c3b2e45c422a1602333a64078aeb42637370b0f48fe385f9cfa6ad54a8e0c47e",
    "9f790d3f08bc4b5cd910d4278f3deb406e57bb5e924906ccd52052bb078ccd47",
    "b20cc49d6f2c82a5e6519015fc18aa3e562867f85f872c58f1277cfbd2a0c8e4",
    "eded5a2fdcb5bbbfa5b07f2a91393813420e7ac30a72fc935b6df36f8294b855",
    "00d39587c3556f289677a837c7f3c0817cb7541ce6e38a243a4bdc761d534c5e",
    "da534d61a8da77b232f3a2cee55c0125e2b3e33a5cd8247f3fe9e72379445c3b",
    "cdbabfc2118eb00bc62c88845f3bbd03cb67a9e18a055101588ca9b36387006c",
    "c83d36423820e7350428dc4abe645cb2904459b7d7128adefe16472fdac397ba",
    "1cbf4e1388b81c9020500fefc83a7a81f707091bb899074db1bfce4537428112",
    "17646a6ba14a541957fc7112cc973c0b3f04fce59484a92c09bb45a0b57eb740",
    "eb94ff04accbfc8195d44b45e7c7da4c6993b2fbbfc4ef166a7675a905df9891",
    "053a6527124b309d914a47f5257a995e9b0ad17f14659f90ed42af5e6e262b6a",
)


def tilt_devnet_quorum() -> DevGuardians:
    """Guardians 0..12 of the Tilt devnet: sign with ``signers=range(13)`` for a quorum."""
    return DevGuardians.from_private_keys([bytes.fromhex(k) for k in _TILT_GUARDIAN_KEYS])


def image_parts(image: str = NODE_IMAGE) -> tuple[str, str]:
    """``(repository, tag)`` of an image name, for the chart's ``image.*`` values."""
    repository, _, tag = image.rpartition(":")
    return repository, tag


def node_gateway(cluster: NodeCluster) -> str:
    """The node's InternalIP: the pod bridge's gateway on the host."""
    node = kubectl_json(cluster.kubeconfig, "get", "node", NODE_NAME)
    address: str = next(
        a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
    )
    return address


def free_port_on(host: str) -> int:
    """A free TCP port on the address ``host``."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def host_relay(gateway: str, target: str) -> Iterator[str]:
    """Relay ``<gateway>:<free port>`` to the loopback server ``target`` (host:port) while
    the block runs; yields the address pods use."""
    socat = shutil.which("socat")
    if socat is None:
        pytest.skip("socat is not installed (the node's apiserver-relay installs it)")
    target_host, target_port = target.rsplit(":", 1)
    port = free_port_on(gateway)
    relay = subprocess.Popen(
        [socat, f"TCP-LISTEN:{port},bind={gateway},fork,reuseaddr",
         f"TCP:{target_host}:{target_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: relay.poll() is None and _answers(gateway, port), timeout=30,
                 what=f"the relay {gateway}:{port} -> {target}")  # fmt: skip
        yield f"{gateway}:{port}"
    finally:
        relay.terminate()
        relay.wait(timeout=20)


def run_pod(cluster: NodeCluster, namespace: str, name: str, command: list[str],
            **spec: Any) -> str:  # fmt: skip
    """Run a one-shot pod of the node image on the node; return its logs (fails the test
    unless it succeeds)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": dict(ON_THE_NODE),
            "containers": [{"name": "main", "image": NODE_IMAGE, "imagePullPolicy": "Never",
                            "command": command}],
            **spec,
        },
    }  # fmt: skip
    kubectl(cluster.kubeconfig, "-n", namespace, "apply", "-f", "-", stdin=json.dumps(pod))

    def finished() -> str | None:
        found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "pod", name)
        phase: str | None = found["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = wait_for(finished, timeout=180, what=f"pod {name} to finish")
    logs = kubectl(cluster.kubeconfig, "-n", namespace, "logs", name).stdout
    assert phase == "Succeeded", f"pod {name} {phase}:\n{logs}"
    return logs


def helm(*args: str) -> str:
    """Run the stack's helm; fail the test on a non-zero exit."""
    result = subprocess.run(
        [str(helm_dir() / "bin" / "helm"), *args],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result.stdout


@dataclass
class Release:
    """The chart installed in one namespace of the node's cluster, its operator on the node."""

    cluster: NodeCluster
    """The node's cluster."""
    namespace: str
    """The release's namespace (also the one namespace its operator watches)."""
    name: str
    """The release name."""

    @property
    def deployment(self) -> str:
        return f"{self.name}-chainloom-operator"

    def values(self, *sets: str) -> list[str]:
        """The flags every helm call of this release passes, then ``--set`` of ``sets``."""
        repository, tag = image_parts()
        flags = ["--namespace", self.namespace, "--kubeconfig", self.cluster.kubeconfig,
                 "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
                 "--set", "image.pullPolicy=Never",
                 "--set", f"operator.namespaces={{{self.namespace}}}",
                 "--set", f"operator.peering.name=p-{self.namespace}",
                 "--set-json", f"operator.nodeSelector={json.dumps(ON_THE_NODE)}"]  # fmt: skip
        for value in sets:
            flags += ["--set", value]
        return flags

    def install(self, *sets: str) -> None:
        """``helm install``; the tests apply ``crds/`` with kubectl first (the documented
        order), so helm leaves the CRDs alone: on a shared cluster another checkout's tests
        may have applied a newer copy, which helm's own apply would conflict with."""
        helm("install", self.name, str(CHART), *self.values(*sets), "--skip-crds", "--wait",
             "--timeout", "300s")  # fmt: skip

    def upgrade(self, *sets: str) -> None:
        helm("upgrade", self.name, str(CHART), *self.values(*sets), "--wait", "--timeout", "300s")

    def uninstall(self) -> None:
        helm("uninstall", self.name, "--namespace", self.namespace,
             "--kubeconfig", self.cluster.kubeconfig, "--wait", "--timeout", "300s")  # fmt: skip

    def installed(self) -> bool:
        listed = helm("list", "--namespace", self.namespace, "--kubeconfig",
                      self.cluster.kubeconfig, "--short")  # fmt: skip
        return self.name in listed.split()

    def pods(self) -> list[dict[str, Any]]:
        found = kubectl_json(self.cluster.kubeconfig, "-n", self.namespace, "get", "pods", "-l",
                             f"app.kubernetes.io/instance={self.name},"
                             "app.kubernetes.io/component=operator")  # fmt: skip
        items: list[dict[str, Any]] = found["items"]
        return items

    def pod_logs(self) -> dict[str, str]:
        """Each operator pod's whole log, by pod name."""
        return {
            pod["metadata"]["name"]: kubectl(self.cluster.kubeconfig, "-n", self.namespace,
                                             "logs", pod["metadata"]["name"], check=False).stdout
            for pod in self.pods()
        }  # fmt: skip

    def active_replicas(self) -> int:
        """Operator pods whose last peering decision was to resume (act), not to pause."""
        return sum(
            text.rfind("Resuming operations") > text.rfind("Pausing operations")
            for text in self.pod_logs().values()
        )

    def logs(self) -> str:
        """The end of every operator pod's log, concatenated (for failure messages)."""
        return "\n".join(f"--- {name}\n{text[-4000:]}" for name, text in self.pod_logs().items())


@contextlib.contextmanager
def chart_release(cluster: NodeCluster, namespace: str) -> Iterator[Release]:
    """A release named after the namespace, uninstalled afterwards if the test has not (its
    ClusterRole and binding are cluster-scoped: the namespace's deletion would not remove
    them)."""
    release = Release(cluster, namespace, f"r{namespace[2:]}")
    try:
        yield release
    finally:
        if release.installed():
            release.uninstall()


def wait_explained(probe: Callable[[], T | None], *, what: str, explain: Callable[[], str],
                   timeout: float = 300, every: float = 0.5) -> T:  # fmt: skip
    """:func:`wait_for`, and on a timeout the failure also shows ``explain()`` (pod logs,
    read only then)."""
    try:
        return wait_for(probe, timeout=timeout, every=every, what=what)
    except pytest.fail.Exception as failure:
        pytest.fail(f"{failure}\n{explain()}")
