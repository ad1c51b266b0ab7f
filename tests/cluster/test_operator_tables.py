"""BackendTable against the real Bigtable emulator and Cassandra: tables created, drift
reported in status (and left alone), Retain keeps the tables without a finalizer, Delete drops
them behind the operator's finalizer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore import bigtable as store
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.service import locate
from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.settings import BigtableSettings
from tests.conftest import StackForTests
from tests.operator_support import (
    OperatorProcess,
    chainloom_crds,
    kubectl,
    kubectl_json,
    start_operator,
    wait_for,
)

__all__ = ["chainloom_crds"]


@pytest.fixture
def operator(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, bigtable_emulator: str,
    local_stack: StackForTests,
) -> Iterator[OperatorProcess]:  # fmt: skip
    running = start_operator(chainloom_crds, kube_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    yield running
    running.stop()


def _apply(kubeconfig: str, namespace: str, document: dict[str, Any]) -> None:
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip


def _table(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "chainloom.io/v1alpha1", "kind": "BackendTable",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def _status(kubeconfig: str, namespace: str, name: str) -> dict[str, Any]:
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", name)
    status: dict[str, Any] = found.get("status") or {}
    return status


def _status_with(kubeconfig: str, namespace: str, name: str, field: str
                 ) -> dict[str, Any] | None:  # fmt: skip
    """The status once ``field`` in it is non-empty."""
    status = _status(kubeconfig, namespace, name)
    return status if status.get(field) else None


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_bigtable_tables_created_drift_reported_and_retained(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str
) -> None:
    namespace, table = kube_namespace, f"events-{uuid.uuid4().hex[:8]}"
    _apply(kubeconfig, namespace, _table("events", {"backend": "bigtable",
                                                    "bigtable": {"table": table}}))  # fmt: skip
    status = wait_for(
        lambda: _status_with(kubeconfig, namespace, "events", "tables"),
        timeout=120, what="the tables in status")  # fmt: skip
    assert status["tables"] == [table, f"{table}-index"]
    assert sorted(status["created"]) == sorted([table, f"{table}-index"])
    assert _condition(status, "Ready")["reason"] == "InSync"
    located = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    assert store.check_schema(located).in_sync
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", "events")
    assert not found["metadata"].get("finalizers")  # Retain: no finalizer

    # Someone changes a GC policy by hand: reported at the next check, not reverted.
    from google.cloud.bigtable import Client
    from google.cloud.bigtable import column_family as cf

    client = Client(project=located.project, admin=True)
    client.instance(located.instance).table(table).column_family(
        "Signatures", cf.MaxVersionsGCRule(5)
    ).update()
    status = wait_for(
        lambda: _status_with(kubeconfig, namespace, "events", "drift"),
        timeout=60, what="drift in status")  # fmt: skip
    expected = {"table": table, "item": "Signatures", "problem": "gc_rule",
                "expected": "max_versions=1", "actual": "max_versions=5"}  # fmt: skip
    assert status["drift"] == [expected]
    degraded = _condition(status, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "Drifted")
    assert not store.check_schema(located).in_sync  # left as it was

    # The finalizer follows the policy: added for Delete, removed again for Retain.
    def finalizers() -> list[str]:
        found = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", "events")
        names: list[str] = found["metadata"].get("finalizers") or []
        return names

    policies: list[tuple[str, list[str]]] = [("Delete", ["chainloom.io/finalizer"]), ("Retain", [])]
    for policy, wanted in policies:
        kubectl(kubeconfig, "-n", namespace, "patch", "btable", "events", "--type=merge",
                "-p", f'{{"spec": {{"deletion_policy": "{policy}"}}}}')  # fmt: skip

        def settled(wanted: list[str] = wanted) -> bool:
            return finalizers() == wanted

        wait_for(settled, what=f"finalizers {wanted}")

    kubectl(kubeconfig, "-n", namespace, "delete", "btable", "events", "--wait=true")
    assert store.check_schema(located).drift  # Retain: the tables are still there
    store.drop_tables(located)


def test_cassandra_keyspace_drift_and_delete_policy(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str,
    cassandra_address: tuple[str, int],
) -> None:  # fmt: skip
    from cassandra.cluster import Cluster

    namespace, keyspace = kube_namespace, f"op_{uuid.uuid4().hex[:10]}"
    host, port = cassandra_address
    spec = {"backend": "cassandra", "deletion_policy": "Delete",
            "cassandra": {"hosts": [host], "port": port, "keyspace": keyspace,
                          "replication_factor": 1}}  # fmt: skip
    _apply(kubeconfig, namespace, _table("ledger", spec))
    status = wait_for(
        lambda: _status_with(kubeconfig, namespace, "ledger", "tables"),
        timeout=300, every=2, what="the keyspace in status")  # fmt: skip
    assert len(status["tables"]) == len(TABLE_NAMES)
    assert _condition(status, "Ready")["status"] == "True"
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "btable", "ledger")
    assert found["metadata"]["finalizers"] == ["chainloom.io/finalizer"]

    cluster = Cluster([host], port=port, protocol_version=5)
    session = cluster.connect()
    try:
        tables = session.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
        )
        assert len(list(tables)) == len(TABLE_NAMES)
        session.execute(
            f"ALTER KEYSPACE {keyspace} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 2}",
            timeout=120,
        )
        status = wait_for(
            lambda: _status_with(kubeconfig, namespace, "ledger", "drift"),
            timeout=120, every=2, what="replication drift")  # fmt: skip
        expected = {"table": keyspace, "item": "replication_factor", "problem": "replication",
                    "expected": "1", "actual": "2"}  # fmt: skip
        assert status["drift"] == [expected]

        kubectl(kubeconfig, "-n", namespace, "delete", "btable", "ledger", "--wait=false")
        wait_for(lambda: kubectl(kubeconfig, "-n", namespace, "get", "btable", "ledger",
                                 check=False).returncode != 0,
                 timeout=300, every=2, what="the finalizer to let go")  # fmt: skip
        rows = session.execute(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (keyspace,),
        )
        assert rows.one() is None
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        cluster.shutdown()
