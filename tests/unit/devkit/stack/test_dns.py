"""The cluster DNS component's pure parts: the generated Go program, the Corefile, the
``kube-dns`` Service and EndpointSlice, and the kubelet's DNS settings (no build, no server)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from chainloom_dev.stack import manager, versions
from chainloom_dev.stack.components import dns, node
from chainloom_dev.stack.components.kubernetes import (
    KUBERNETES_SERVICE_IP,
    SERVICE_CLUSTER_IP_RANGE,
)


def _directives(corefile: str) -> dict[str, str]:
    """``directive -> its arguments`` of the server block's top level (one level of nesting)."""
    found: dict[str, str] = {}
    depth = 0
    for line in corefile.splitlines():
        words = line.split()
        if not words:
            continue
        if depth == 1 and words[0] != "}":
            found[words[0]] = " ".join(w for w in words[1:] if w != "{")
        depth += line.count("{") - line.count("}")
    assert depth == 0, "unbalanced braces"
    return found


def test_the_program_imports_only_the_chosen_plugins_and_runs_coredns() -> None:
    source = dns.main_go()
    imported = {
        line.split('"')[1].rsplit("/", 1)[1]
        for line in source.splitlines()
        if line.strip().startswith('_ "')
    }
    assert imported == set(dns.PLUGINS)
    assert '"github.com/coredns/coredns/coremain"' in source
    assert "coremain.Run()" in source
    assert "core/plugin" not in source  # CoreDNS's all-plugins package is what made it slow


def test_the_module_pins_the_coredns_version() -> None:
    assert f"require github.com/coredns/coredns {versions.COREDNS}\n" in dns.go_mod()


def test_the_cache_name_follows_the_version_and_the_plugin_set() -> None:
    assert dns.coredns_dir().name.startswith(f"coredns-{versions.COREDNS}-")
    assert dns.coredns_binary().parent.parent == dns.coredns_dir()


def test_every_directive_of_the_corefile_is_a_compiled_plugin() -> None:
    listen = dns.DnsListen(("127.0.0.1", "10.88.7.1"), 15353, 18080, 18181)
    directives = _directives(dns.corefile(listen, "/run/kubeconfig"))
    assert set(directives) <= set(dns.PLUGINS)
    assert set(dns.PLUGINS) <= set(directives)  # nothing is compiled in that is never used


def test_the_corefile_serves_the_cluster_domain_from_the_api_server() -> None:
    listen = dns.DnsListen(("127.0.0.1", "10.88.7.1"), 15353, 18080, 18181)
    text = dns.corefile(listen, "/run/kubeconfig")
    assert text.startswith(".:15353 {\n")
    directives = _directives(text)
    assert directives["bind"] == "127.0.0.1 10.88.7.1"  # never every interface
    assert directives["kubernetes"] == "cluster.local in-addr.arpa ip6.arpa"
    assert "        kubeconfig /run/kubeconfig chainloom\n" in text
    assert "        fallthrough in-addr.arpa ip6.arpa\n" in text
    assert directives["forward"] == ". /etc/resolv.conf"
    assert directives["health"] == "127.0.0.1:18080"
    assert directives["ready"] == "127.0.0.1:18181"


def test_the_kube_dns_service_has_the_fixed_cluster_ip_and_no_selector() -> None:
    service = json.loads(dns.kube_dns_service(15353))
    assert service["metadata"] == {
        "name": "kube-dns",
        "namespace": "kube-system",
        "labels": service["metadata"]["labels"],
    }
    spec = service["spec"]
    assert spec["clusterIP"] == dns.CLUSTER_DNS_IP == "10.0.0.10"
    assert "selector" not in spec
    ports = {(p["name"], p["protocol"]): (p["port"], p["targetPort"]) for p in spec["ports"]}
    assert ports == {("dns", "UDP"): (53, 15353), ("dns-tcp", "TCP"): (53, 15353)}


def test_the_cluster_dns_ip_is_in_the_service_range_and_not_the_api_servers() -> None:
    address = ipaddress.ip_address(dns.CLUSTER_DNS_IP)
    assert address in ipaddress.ip_network(SERVICE_CLUSTER_IP_RANGE)
    assert dns.CLUSTER_DNS_IP != KUBERNETES_SERVICE_IP


def test_the_endpoint_slice_points_the_service_at_the_gateway_port() -> None:
    slice_ = json.loads(dns.kube_dns_endpoint_slice("10.88.7.1", 15353))
    assert slice_["metadata"]["namespace"] == "kube-system"
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "kube-dns"
    # Written by the stack, so no controller of the API server rewrites or deletes it.
    assert slice_["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] != (
        "endpointslice-controller.k8s.io"
    )
    assert slice_["endpoints"] == [{"addresses": ["10.88.7.1"], "conditions": {"ready": True}}]
    service_ports = {
        p["name"]: p["protocol"] for p in json.loads(dns.kube_dns_service(1))["spec"]["ports"]
    }
    slice_ports = {p["name"]: (p["protocol"], p["port"]) for p in slice_["ports"]}
    # kube-proxy pairs a Service port with the slice's port of the same name.
    assert {name: protocol for name, (protocol, _) in slice_ports.items()} == service_ports
    assert {port for _, port in slice_ports.values()} == {15353}


def test_the_kubelet_points_pods_at_the_cluster_dns(tmp_path: Path) -> None:
    layout = node.layout(tmp_path)
    config = json.loads(node.kubelet_config(layout, 10250, 10248, dns=dns.CLUSTER_DNS_IP))
    assert config["clusterDNS"] == ["10.0.0.10"]
    assert config["clusterDomain"] == "cluster.local" == dns.CLUSTER_DOMAIN
    # hostNetwork pods and the "Default" DNS policy still get the host's resolvers.
    assert config["resolvConf"] == "/etc/resolv.conf"


def test_the_node_runs_cluster_dns_before_the_kubelet() -> None:
    order = manager.resolve(["kubelet"])
    assert order.index("containerd") < order.index("cluster-dns") < order.index("kubelet")
    assert "cluster-dns" in manager.GROUPS["node"]
    assert "cluster-dns" not in manager.resolve([], full=True)  # it needs the node's bridge
