"""A BackendTable on a Cassandra with logins and TLS (the stack's ``cassandra-secured``, in a
private run directory): the operator creates the keyspace with NetworkTopologyStrategy through
the settings' password file and CA, reports a refused login in the Ready condition, and the
password appears in no status, event or operator log.

The API server is a private one too: this checkout's CRDs (with the new Cassandra fields) must
stay installed for the whole test, and on a shared API server another checkout's tests apply
their own CRDs at any moment.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.ledger.cassandra_schema import TABLE_NAMES
from tests.operator_support import (
    OperatorProcess,
    install_crds,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)
from tests.secured_support import PrivateStack, private_stack

NAMESPACE = "secured"


@pytest.fixture(scope="module")
def private_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private API server with this checkout's CRDs and the namespace :data:`NAMESPACE`."""
    with private_stack(tmp_path_factory.mktemp("api") / "run", "kubernetes") as stack:
        kubeconfig = stack.extra("kube-apiserver")["kubeconfig"]
        install_crds(kubeconfig)
        kubectl(kubeconfig, "create", "namespace", NAMESPACE)
        yield kubeconfig


@pytest.fixture
def operator(private_kubeconfig: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    running = start_operator(private_kubeconfig, NAMESPACE, tmp_path / "operator.log")
    yield running
    running.stop()


def _cassandra(stack: PrivateStack, keyspace: str, password_file: str) -> dict[str, Any]:
    extra = stack.extra("cassandra-secured")
    host, port = stack.address("cassandra-secured")
    return {"hosts": [host], "port": port, "keyspace": keyspace,
            "replication_strategy": "NetworkTopologyStrategy",
            "datacenter_replication": {"datacenter1": 1}, "local_datacenter": "datacenter1",
            "username": extra["username"], "password_file": password_file,
            "tls": {"enabled": True, "ca_file": extra["ca_file"]}}  # fmt: skip


def _apply(kubeconfig: str, namespace: str, name: str, cassandra: dict[str, Any]) -> None:
    document = {"apiVersion": "chainloom.io/v1alpha1", "kind": "BackendTable",
                "metadata": {"name": name},
                "spec": {"backend": "cassandra", "deletion_policy": "Delete",
                         "cassandra": cassandra}}  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip


def _ready(kubeconfig: str, namespace: str, name: str) -> dict[str, Any]:
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", name)
    conditions = (found.get("status") or {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == "Ready"), {})


def test_a_secured_keyspace_is_created_and_a_refused_login_reported(
    operator: OperatorProcess, private_kubeconfig: str, secured_cassandra: PrivateStack,
    tmp_path: Path,
) -> None:  # fmt: skip
    namespace, kubeconfig = NAMESPACE, private_kubeconfig
    extra = secured_cassandra.extra("cassandra-secured")
    password = Path(extra["password_file"]).read_text().strip()
    keyspace = f"op_{uuid.uuid4().hex[:10]}"
    _apply(kubeconfig, namespace, "ledger",
           _cassandra(secured_cassandra, keyspace, extra["password_file"]))  # fmt: skip
    wait_for(lambda: _ready(kubeconfig, namespace, "ledger").get("status") == "True",
             timeout=300, every=2, what="the secured keyspace Ready")  # fmt: skip
    status = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", "ledger")["status"]
    assert len(status["tables"]) == len(TABLE_NAMES)
    assert not status.get("drift")  # NetworkTopologyStrategy {datacenter1: 1}, as asked

    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password\n")
    _apply(kubeconfig, namespace, "refused",
           _cassandra(secured_cassandra, f"{keyspace}_x", str(wrong)))  # fmt: skip

    def refused() -> dict[str, Any] | None:
        ready = _ready(kubeconfig, namespace, "refused")
        return ready if "refused" in ready.get("message", "") else None

    condition = wait_for(refused, timeout=120, every=2, what="the refusal in status")
    assert condition["status"] == "False"
    assert "the credentials of role 'chainloom' were refused" in condition["message"]

    kubectl(kubeconfig, "-n", namespace, "delete", "btable", "refused", "--wait=false")
    kubectl(kubeconfig, "-n", namespace, "delete", "btable", "ledger", "--wait=true",
            "--timeout=300s")  # fmt: skip
    everything = "\n".join([
        kubectl(kubeconfig, "-n", namespace, "get", "events", "-o", "yaml").stdout,
        kubectl(kubeconfig, "-n", namespace, "get", "btable", "-o", "yaml").stdout,
        operator.output(),
    ])  # fmt: skip
    assert "the credentials of role" in everything
    assert password not in everything
    assert "not-the-password" not in everything
