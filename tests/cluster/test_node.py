"""Pods run real containers on the stack's node: the chainloom image, probes, Services, in-cluster
API access and host networking (``chainloom-dev stack up --node``; docs/stack.md, "The node")."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from chainloom_dev.stack import versions
from chainloom_dev.stack.components.node import NODE_NAME
from tests.cluster.node_support import NODE_IMAGE as IMAGE
from tests.conftest import NodeCluster


def _wait_for_phase(
    cluster: NodeCluster, namespace: str, pod: str, phases: set[str], timeout: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = json.loads(cluster.kubectl_run("-n", namespace, "get", "pod", pod, "-o", "json"))
        if body["status"].get("phase") in phases or time.monotonic() > deadline:
            return dict(body)
        time.sleep(0.5)


def _pod(name: str, command: list[str], **spec: Any) -> str:
    """A one-shot pod of the chainloom image on the real node."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
                "containers": [
                    {
                        "name": "main",
                        "image": IMAGE,
                        "imagePullPolicy": "Never",
                        "command": command,
                    }
                ],
                **spec,
            },
        }
    )


def _run_to_completion(
    cluster: NodeCluster, namespace: str, name: str, command: list[str], **spec: Any
) -> str:
    cluster.kubectl_run("-n", namespace, "apply", "-f", "-", stdin=_pod(name, command, **spec))
    body = _wait_for_phase(cluster, namespace, name, {"Succeeded", "Failed"})
    logs = cluster.kubectl_run("-n", namespace, "logs", name)
    assert body["status"]["phase"] == "Succeeded", logs
    return logs


def test_the_node_is_ready_with_the_stack_kubelet(node_cluster: NodeCluster) -> None:
    node = json.loads(node_cluster.kubectl_run("get", "node", NODE_NAME, "-o", "json"))
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == versions.KUBERNETES
    assert info["containerRuntimeVersion"].startswith("containerd://")
    assert not node["spec"].get("taints")


def test_a_pod_of_the_chainloom_image_decodes_a_vaa(
    node_cluster: NodeCluster, node_namespace: str, vaa_vectors: list[dict[str, Any]]
) -> None:
    vector = vaa_vectors[0]
    logs = _run_to_completion(
        node_cluster, node_namespace, "decode", ["chainloom", "vaa", "decode", vector["hex"]]
    )
    decoded = json.loads(logs.strip().splitlines()[-1])
    assert decoded["digest"] == vector["expected"]["digest"]
    assert decoded["sequence"] == vector["expected"]["sequence"]


def test_a_deployment_with_an_http_readiness_probe_serves_through_its_service(
    node_cluster: NodeCluster, node_namespace: str
) -> None:
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": IMAGE,
                            "imagePullPolicy": "Never",
                            "command": ["python3", "-m", "http.server", "8080"],
                            "args": ["--directory", "/etc"],
                            "readinessProbe": {
                                "httpGet": {"path": "/hostname", "port": 8080},
                                "periodSeconds": 1,
                            },
                        }
                    ]
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    for manifest in (deployment, service):
        node_cluster.kubectl_run(
            "-n", node_namespace, "apply", "-f", "-", stdin=json.dumps(manifest)
        )
    node_cluster.kubectl_run(
        "-n", node_namespace, "rollout", "status", "deployment/web", "--timeout=120s"
    )
    pods = json.loads(node_cluster.kubectl_run("-n", node_namespace, "get", "pods", "-o", "json"))
    names = {pod["metadata"]["name"] for pod in pods["items"]}
    assert len(names) == 2
    cluster_ip = json.loads(
        node_cluster.kubectl_run("-n", node_namespace, "get", "service", "web", "-o", "json")
    )["spec"]["clusterIP"]
    # kube-proxy programs a new Service's rules a moment after its endpoints turn ready: wait
    # (up to 30 s) for the first answer, then every one of 20 requests must be answered.
    fetch = (
        "import time, urllib.request\n"
        f"url = 'http://{cluster_ip}/hostname'\n"
        "for _ in range(60):\n"
        "    try:\n"
        "        urllib.request.urlopen(url, timeout=5).read(); break\n"
        "    except OSError:\n"
        "        time.sleep(0.5)\n"
        "for _ in range(20):\n"
        f"    print(urllib.request.urlopen('http://{cluster_ip}/hostname', timeout=5).read()"
        ".decode().strip())\n"
    )
    logs = _run_to_completion(node_cluster, node_namespace, "client", ["python3", "-c", fetch])
    answered = set(logs.split())
    assert answered <= names
    assert answered  # kube-proxy's DNAT reached at least one of the Deployment's pods


def test_a_pod_reaches_the_api_server_with_its_service_account(
    node_cluster: NodeCluster, node_namespace: str
) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "read-config"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read-config"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-config"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": node_namespace}],
    }
    marker = uuid.uuid4().hex
    for manifest in (role, binding):
        node_cluster.kubectl_run(
            "-n", node_namespace, "apply", "-f", "-", stdin=json.dumps(manifest)
        )
    node_cluster.kubectl_run(
        "-n", node_namespace, "create", "configmap", "probe", f"--from-literal=marker={marker}"
    )
    read = (
        "from lightkube import Client, KubeConfig\n"
        "from lightkube.resources.core_v1 import ConfigMap\n"
        "client = Client(KubeConfig.from_service_account())\n"
        f"print(client.get(ConfigMap, 'probe', namespace='{node_namespace}').data['marker'])\n"
    )
    logs = _run_to_completion(node_cluster, node_namespace, "incluster", ["python3", "-c", read])
    assert logs.strip() == marker


def test_a_host_network_pod_reaches_the_host_redis(
    node_cluster: NodeCluster, node_namespace: str, redis_url: str
) -> None:
    import redis

    marker = uuid.uuid4().hex
    write = (
        "import redis\n"
        f"redis.Redis.from_url('{redis_url}').set('chainloom:node-test', '{marker}')\n"
        "print('written')\n"
    )
    logs = _run_to_completion(
        node_cluster, node_namespace, "redis", ["python3", "-c", write], hostNetwork=True
    )
    assert logs.strip() == "written"
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.get("chainloom:node-test") == marker.encode()
    finally:
        client.close()
