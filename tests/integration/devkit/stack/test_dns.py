"""The slim CoreDNS against the real API server: Service names resolve to their ClusterIPs.

The server is started the way the node's ``cluster-dns`` component starts it, on 127.0.0.1
only (without a node there is no pod bridge), against the session's control plane; queries are
made with dnspython, as a pod's resolver would make them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dns.exception
import dns.rdtypes.IN.SRV
import dns.resolver
import dns.reversename
import pytest

from chainloom_dev.stack import _process
from chainloom_dev.stack._model import Running, SilentProgress
from chainloom_dev.stack.components.dns import (
    CLUSTER_DOMAIN,
    build_coredns,
    check_coredns,
    kube_dns_endpoint_slice,
    kube_dns_service,
    start_coredns,
)
from chainloom_dev.stack.components.kubernetes import KUBERNETES_SERVICE_IP
from tests.operator_support import kubectl, kubectl_json


@pytest.fixture(scope="module")
def coredns(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The cached slim CoreDNS (built if missing), serving the session's API server."""
    build_coredns(SilentProgress())
    run_dir: Path = tmp_path_factory.mktemp("cluster-dns")
    running = start_coredns(run_dir, kubeconfig, ("127.0.0.1",), SilentProgress(), None)
    try:
        yield running
    finally:
        _process.stop(running.pid)


def _resolver(running: Running) -> dns.resolver.Resolver:
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = ["127.0.0.1"]
    resolver.port = int(running.extra["port"])
    resolver.lifetime = 5.0
    return resolver


def _a_records(resolver: dns.resolver.Resolver, name: str, timeout: float = 30) -> list[str]:
    """The A records of ``name``, waiting while the server has not seen the object yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return sorted(record.to_text() for record in resolver.resolve(name, "A"))
        except dns.resolver.NXDOMAIN:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_it_reports_healthy_and_ready_with_its_version(coredns: Running) -> None:
    assert check_coredns(coredns) == coredns.version
    assert coredns.version.startswith("CoreDNS-1.")
    assert coredns.extra["addresses"] == "127.0.0.1"


def test_the_kubernetes_service_resolves_to_its_cluster_ip(coredns: Running) -> None:
    name = f"kubernetes.default.svc.{CLUSTER_DOMAIN}."
    assert _a_records(_resolver(coredns), name) == [KUBERNETES_SERVICE_IP]


def test_a_new_service_resolves_to_its_cluster_ip_and_back(
    coredns: Running, kubeconfig: str, kube_namespace: str
) -> None:
    name = f"web-{uuid.uuid4().hex[:6]}"
    kubectl(
        kubeconfig,
        "-n",
        kube_namespace,
        "create",
        "service",
        "clusterip",
        name,
        "--tcp=80:8080",
    )
    service = kubectl_json(kubeconfig, "-n", kube_namespace, "get", "service", name)
    cluster_ip = service["spec"]["clusterIP"]
    fqdn = f"{name}.{kube_namespace}.svc.{CLUSTER_DOMAIN}."
    resolver = _resolver(coredns)

    assert _a_records(resolver, fqdn) == [cluster_ip]
    (srv,) = resolver.resolve(f"_80-8080._tcp.{fqdn}", "SRV")
    assert isinstance(srv, dns.rdtypes.IN.SRV.SRV)
    assert (srv.port, srv.target.to_text()) == (80, fqdn)
    (ptr,) = resolver.resolve(dns.reversename.from_address(cluster_ip), "PTR")
    assert ptr.to_text() == fqdn

    kubectl(kubeconfig, "-n", kube_namespace, "delete", "service", name)
    deadline = time.monotonic() + 30
    while True:  # the name goes with the Service
        try:
            resolver.resolve(fqdn, "A")
        except dns.resolver.NXDOMAIN:
            break
        assert time.monotonic() < deadline, f"{fqdn} still resolves after the Service was deleted"
        time.sleep(0.3)


def test_a_missing_service_is_nxdomain_from_the_cluster_zone(
    coredns: Running, kube_namespace: str
) -> None:
    with pytest.raises(dns.resolver.NXDOMAIN):
        _resolver(coredns).resolve(f"absent.{kube_namespace}.svc.{CLUSTER_DOMAIN}.", "A")


def test_names_outside_the_cluster_go_to_the_host_resolver(coredns: Running) -> None:
    # ``.invalid`` never exists (RFC 6761): the host's resolver answers NXDOMAIN. Without the
    # forward plugin CoreDNS would answer SERVFAIL or REFUSED instead (no plugin for the zone).
    with pytest.raises(dns.resolver.NXDOMAIN):
        _resolver(coredns).resolve(f"chainloom-{uuid.uuid4().hex[:8]}.invalid.", "A")


def test_the_api_server_accepts_the_kube_dns_service_and_its_endpoint_slice(
    kubeconfig: str,
) -> None:
    # A server-side dry run: the node's stack may own the real kube-dns Service.
    for manifest in (kube_dns_service(15353), kube_dns_endpoint_slice("10.88.7.1", 15353)):
        kubectl(kubeconfig, "apply", "--dry-run=server", "-f", "-", stdin=manifest)


def test_a_stopped_server_fails_its_check(kubeconfig: str, tmp_path: Path) -> None:
    running = start_coredns(
        tmp_path, kubeconfig, ("127.0.0.1",), SilentProgress(), None, name="cluster-dns-stop"
    )
    _process.stop(running.pid)
    with pytest.raises(OSError, match="refused"):  # urllib's URLError around ECONNREFUSED
        check_coredns(running)
    with pytest.raises(dns.exception.Timeout):
        _resolver(running).resolve(f"kubernetes.default.svc.{CLUSTER_DOMAIN}.", "A", lifetime=1)
