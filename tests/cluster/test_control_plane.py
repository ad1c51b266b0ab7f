"""The Kubernetes control plane is real: version, CRDs, custom objects, and (full tier) Pods."""

from __future__ import annotations

import json
import subprocess
import time

from chainloom_dev.stack import versions
from chainloom_dev.stack.components.kubernetes import k8s_dir
from tests.conftest import StackForTests


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(k8s_dir() / "bin" / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_api_server_reports_the_real_version(kubeconfig: str) -> None:
    version = json.loads(_kubectl(kubeconfig, "version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == versions.KUBERNETES
    assert version["clientVersion"]["gitVersion"] == versions.KUBERNETES


def test_python_client_round_trips_a_config_map(kube_namespace: str, kubeconfig: str) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap

    with Client(KubeConfig.from_file(kubeconfig)) as client:
        client.create(ConfigMap(metadata=ObjectMeta(name="probe"), data={"k": "v"}),
                      namespace=kube_namespace)  # fmt: skip
        assert client.get(ConfigMap, "probe", namespace=kube_namespace).data == {"k": "v"}


def test_full_tier_runs_deployment_pods_on_the_simulated_node(
    local_stack: StackForTests, kube_namespace: str, kubeconfig: str
) -> None:
    local_stack.require("kwok")
    # KWOK's nodes are tainted, so that pods land there only when they ask to (a real node,
    # `stack up --node`, takes the rest).
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "demo"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {
                    "nodeSelector": {"type": "kwok"},
                    "tolerations": [
                        {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [{"name": "demo", "image": "registry.invalid/demo:1"}],
                },
            },
        },
    }
    _kubectl(kubeconfig, "-n", kube_namespace, "apply", "-f", "-", stdin=json.dumps(deployment))
    deadline = time.monotonic() + 90
    phases: list[str] = []
    while time.monotonic() < deadline:
        pods = json.loads(_kubectl(kubeconfig, "-n", kube_namespace, "get", "pods", "-o", "json"))
        phases = [pod["status"].get("phase", "") for pod in pods["items"]]
        if len(phases) == 2 and all(phase == "Running" for phase in phases):
            break
        time.sleep(0.5)
    assert phases == ["Running", "Running"]
    nodes = {pod["spec"]["nodeName"] for pod in pods["items"]}
    assert nodes == {"kwok-node-0"}
