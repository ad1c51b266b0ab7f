"""Pods on the real node resolve names through the stack's cluster DNS (``cluster-dns``:
CoreDNS on the host behind the ``kube-dns`` Service; docs/stack.md, "Cluster DNS")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from chainloom_dev.stack import versions
from chainloom_dev.stack.components.dns import CLUSTER_DNS_IP, ENDPOINT_SLICE_NAME
from chainloom_dev.stack.components.kubernetes import KUBERNETES_SERVICE_IP
from tests.cluster.node_support import node_gateway, run_pod
from tests.conftest import NodeCluster

_LOOKUPS = """
import json, socket, time

def lookup(name):
    # The pod may start before CoreDNS's informer has seen a Service created just now.
    for _ in range(60):
        try:
            return socket.gethostbyname(name)
        except socket.gaierror:
            time.sleep(0.5)
    return socket.gethostbyname(name)

result = {
    "resolv_conf": open("/etc/resolv.conf").read(),
    "kubernetes_fqdn": lookup("kubernetes.default.svc.cluster.local"),
    "kubernetes_short": lookup("kubernetes.default"),
    "service_fqdn": lookup("web.%(namespace)s.svc.cluster.local"),
    "service_short": lookup("web"),
}
try:
    socket.gethostbyname("chainloom-absent.invalid")
    result["outside"] = "resolved"
except socket.gaierror as error:
    # EAI_NONAME: the host's resolver said NXDOMAIN through CoreDNS's forward plugin
    # (EAI_AGAIN would mean no answer: the query went nowhere).
    result["outside"] = "nxdomain" if error.errno == socket.EAI_NONAME else str(error)
print(json.dumps(result))
"""


def test_a_pod_resolves_the_api_server_and_a_service_by_name(
    node_cluster: NodeCluster, node_namespace: str
) -> None:
    node_cluster.kubectl_run(
        "-n", node_namespace, "create", "service", "clusterip", "web", "--tcp=80:8080"
    )
    service = json.loads(
        node_cluster.kubectl_run("-n", node_namespace, "get", "service", "web", "-o", "json")
    )
    script = _LOOKUPS % {"namespace": node_namespace}
    logs = run_pod(node_cluster, node_namespace, "lookups", ["python3", "-c", script])
    result = json.loads(logs.strip().splitlines()[-1])

    assert f"nameserver {CLUSTER_DNS_IP}" in result["resolv_conf"]
    assert f"search {node_namespace}.svc.cluster.local svc.cluster.local" in result["resolv_conf"]
    assert result["kubernetes_fqdn"] == result["kubernetes_short"] == KUBERNETES_SERVICE_IP
    assert result["service_fqdn"] == result["service_short"] == service["spec"]["clusterIP"]
    assert result["outside"] == "nxdomain"


def test_the_kube_dns_service_points_at_the_host_server(node_cluster: NodeCluster) -> None:
    service = json.loads(
        node_cluster.kubectl_run("-n", "kube-system", "get", "service", "kube-dns", "-o", "json")
    )
    assert service["spec"]["clusterIP"] == CLUSTER_DNS_IP
    endpoint_slice = json.loads(
        node_cluster.kubectl_run(
            "-n", "kube-system", "get", "endpointslice", ENDPOINT_SLICE_NAME, "-o", "json"
        )
    )
    assert endpoint_slice["endpoints"][0]["addresses"] == [node_gateway(node_cluster)]


def test_stack_status_shows_cluster_dns_healthy_with_its_version(
    node_cluster: NodeCluster,
) -> None:
    env = {**os.environ, "CHAINLOOM_RUN": str(node_cluster.run_dir)}
    status = subprocess.run(
        [sys.executable, "-m", "chainloom_dev", "stack", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    rows = {row["name"]: row for row in json.loads(status.stdout)}
    row = rows["cluster-dns"]
    assert row["healthy"], row["detail"]
    assert row["version"] == f"CoreDNS-{versions.COREDNS.removeprefix('v')}"
