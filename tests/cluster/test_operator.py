"""The operator against the real API server (KWOK nodes run the pods): RelayerPool children,
updates, repair and garbage collection; status from what the cluster reports; missing Secrets
as events; restart; IngestPipeline against the spark-operator's real CRDs."""

from __future__ import annotations

import copy
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from chainloom_dev.net import free_port
from tests.conftest import REPO_ROOT, StackForTests
from tests.operator_support import (
    OperatorProcess,
    chainloom_crds,
    kubectl,
    kubectl_json,
    spark_crds,
    start_operator,
    wait_for,
)

__all__ = ["chainloom_crds", "spark_crds"]

SAMPLES = REPO_ROOT / "docs" / "samples"
POOL_CHILDREN = {
    ("ConfigMap", "mainnet-relayer"),
    ("Deployment", "mainnet-listener"),
    ("Service", "mainnet-listener"),
    ("Deployment", "mainnet-worker-ethereum-hot-1"),
    ("Deployment", "mainnet-worker-ethereum-hot-2"),
    ("Deployment", "mainnet-worker-solana-hot-1"),
    ("NetworkPolicy", "mainnet-relayer"),
}
CHILD_KINDS = "configmaps,deployments,services,networkpolicies"


@pytest.fixture
def operator(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, local_stack: StackForTests
) -> Iterator[OperatorProcess]:
    local_stack.require("kwok")
    running = start_operator(chainloom_crds, kube_namespace, tmp_path / "operator.log")
    yield running
    running.stop()


def _apply(kubeconfig: str, namespace: str, document: dict[str, Any] | Path) -> None:
    text = document.read_text() if isinstance(document, Path) else yaml.safe_dump(document)
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-", stdin=text)


def _secrets(kubeconfig: str, namespace: str, *names: str) -> None:
    for name in names:
        kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", name,
                "--from-literal=key=" + "11" * 32)  # fmt: skip


def _children(kubeconfig: str, namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    listed = kubectl_json(kubeconfig, "-n", namespace, "get", CHILD_KINDS,
                          "-l", "chainloom.io/owner-name", "--show-managed-fields")  # fmt: skip
    return {(i["kind"], i["metadata"]["name"]): i for i in listed["items"]}


def _condition(kubeconfig: str, namespace: str, resource: str, kind: str) -> dict[str, Any]:
    found = kubectl_json(kubeconfig, "-n", namespace, "get", resource)
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


KWOK_PLACEMENT = {
    "node_selector": {"type": "kwok"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
}
"""Where the tests' pods go: the stack's simulated KWOK node (labelled and tainted for it), which
runs them without a container runtime; never a real node, where the sample's addresses mean
nothing."""


def _on_kwok(sample: str) -> dict[str, Any]:
    """A sample resource with its pods placed on the KWOK node."""
    document: dict[str, Any] = yaml.safe_load((SAMPLES / sample).read_text())
    spec = document["spec"]
    spec.get("streaming", spec)["placement"] = KWOK_PLACEMENT
    return document


def _pool_sample() -> dict[str, Any]:
    return _on_kwok("relayerpool.yaml")


def test_relayer_pool_children_status_updates_repair_and_gc(
    operator: OperatorProcess, kube_namespace: str, kubeconfig: str
) -> None:
    namespace = kube_namespace
    _secrets(kubeconfig, namespace, "eth-hot-1", "eth-hot-2", "sol-hot-1")
    _apply(kubeconfig, namespace, _pool_sample())
    pool = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool", "mainnet")

    def all_children() -> dict[tuple[str, str], dict[str, Any]] | None:
        found = _children(kubeconfig, namespace)
        return found if set(found) >= POOL_CHILDREN else None

    children = wait_for(all_children, what="the pool's children")
    for child in children.values():
        (reference,) = child["metadata"]["ownerReferences"]
        assert (reference["kind"], reference["uid"]) == ("RelayerPool", pool["metadata"]["uid"])
        managers = {m["manager"] for m in child["metadata"]["managedFields"]}
        assert "chainloom-operator" in managers

    # KWOK runs the pods, so the Deployments become available and the pool Ready.
    wait_for(lambda: _condition(kubeconfig, namespace, "rpool/mainnet", "Ready").get("status")
             == "True", timeout=120, what="Ready")  # fmt: skip
    status = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool", "mainnet")["status"]
    assert status["readyWorkers"] == "3/3"
    assert status["observedGeneration"] == pool["metadata"]["generation"]
    table = kubectl(kubeconfig, "-n", namespace, "get", "rpool").stdout
    assert "3/3" in table

    # A spec change: one wallet fewer, another retry budget.
    changed = _pool_sample()
    changed["spec"]["chains"][0]["wallets"] = changed["spec"]["chains"][0]["wallets"][:1]
    changed["spec"]["worker"]["max_retries"] = 3
    _apply(kubeconfig, namespace, changed)

    def updated() -> bool:
        found = _children(kubeconfig, namespace)
        config = found.get(("ConfigMap", "mainnet-relayer"), {}).get("data", {})
        retries = yaml.safe_load(config.get("relayer.yaml", "{}"))["worker"]["max_retries"]
        return retries == 3 and ("Deployment", "mainnet-worker-ethereum-hot-2") not in found

    wait_for(updated, what="the spec change in the children")

    # A child deleted by hand comes back.
    kubectl(kubeconfig, "-n", namespace, "delete", "deployment", "mainnet-worker-solana-hot-1")
    wait_for(lambda: ("Deployment", "mainnet-worker-solana-hot-1")
             in _children(kubeconfig, namespace), what="the worker to be recreated")  # fmt: skip
    kubectl(kubeconfig, "-n", namespace, "delete", "configmap", "mainnet-relayer")
    wait_for(lambda: ("ConfigMap", "mainnet-relayer") in _children(kubeconfig, namespace),
             what="the ConfigMap to be recreated")  # fmt: skip

    # Deleting the pool: the garbage collector removes every child.
    kubectl(kubeconfig, "-n", namespace, "delete", "rpool", "mainnet", "--wait=true")
    wait_for(lambda: not _children(kubeconfig, namespace), timeout=90,
             what="the garbage collector")  # fmt: skip


def test_missing_secret_is_an_event_and_degraded_until_created(
    chainloom_crds: str, kube_namespace: str, kubeconfig: str, tmp_path: Path,
    local_stack: StackForTests,
) -> None:  # fmt: skip
    local_stack.require("kwok")
    metrics_port = free_port()
    operator = start_operator(chainloom_crds, kube_namespace, tmp_path / "operator.log",
                              "--metrics", f"127.0.0.1:{metrics_port}")  # fmt: skip
    try:
        _missing_secret_then_created(kube_namespace, kubeconfig)
        text = _get(f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        operator.stop()
    seen = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    pool = ("kind", "RelayerPool")
    assert seen[("chainloom_operator_errors_total", (pool, ("reason", "MissingSecret")))] >= 1
    assert seen[("chainloom_operator_reconciles_total", (pool, ("outcome", "retry")))] >= 1
    assert seen[("chainloom_operator_reconciles_total", (pool, ("outcome", "ok")))] >= 1
    assert seen[("chainloom_operator_reconcile_duration_seconds_count", (pool,))] >= 2
    assert "11" * 32 not in text


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return str(answer.read().decode())


def _missing_secret_then_created(namespace: str, kubeconfig: str) -> None:
    pool = _pool_sample()
    pool["spec"]["chains"] = pool["spec"]["chains"][1:]  # solana only: one Secret
    _apply(kubeconfig, namespace, pool)

    def warned() -> dict[str, Any] | None:
        events = kubectl_json(kubeconfig, "-n", namespace, "get", "events",
                              "--field-selector", "reason=MissingSecret")["items"]  # fmt: skip
        return events[0] if events else None

    event = wait_for(warned, what="a MissingSecret event")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "RelayerPool"
    assert "Secret " + namespace + "/sol-hot-1" in event["message"]
    degraded = wait_for(lambda: (c := _condition(kubeconfig, namespace, "rpool/mainnet",
                                                 "Degraded")).get("status") == "True" and c,
                        what="Degraded")  # fmt: skip
    assert degraded["reason"] == "MissingSecret"

    _secrets(kubeconfig, namespace, "sol-hot-1")
    wait_for(lambda: _condition(kubeconfig, namespace, "rpool/mainnet", "Ready").get("status")
             == "True", timeout=120, what="Ready once the Secret exists")  # fmt: skip
    assert _condition(kubeconfig, namespace, "rpool/mainnet", "Degraded")["status"] == "False"
    secret_text = "11" * 32
    for item in kubectl_json(kubeconfig, "-n", namespace, "get", "events")["items"]:
        assert secret_text not in json.dumps(item)
    configmap = kubectl_json(kubeconfig, "-n", namespace, "get", "configmap", "mainnet-relayer")
    assert secret_text not in json.dumps(configmap)


def test_restart_reconciles_what_changed_while_the_operator_was_down(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, local_stack: StackForTests
) -> None:
    local_stack.require("kwok")
    kubeconfig, namespace = chainloom_crds, kube_namespace
    _secrets(kubeconfig, namespace, "eth-hot-1", "eth-hot-2", "sol-hot-1")
    first = start_operator(kubeconfig, namespace, tmp_path / "first.log")
    try:
        _apply(kubeconfig, namespace, _pool_sample())
        wait_for(lambda: set(_children(kubeconfig, namespace)) >= POOL_CHILDREN,
                 what="the children")  # fmt: skip
    finally:
        first.stop()
    kubectl(kubeconfig, "-n", namespace, "delete", "deployment", "mainnet-listener")
    changed = copy.deepcopy(_pool_sample())
    changed["spec"]["listener"]["replicas"] = 3
    _apply(kubeconfig, namespace, changed)

    second = start_operator(kubeconfig, namespace, tmp_path / "second.log")
    try:

        def restored() -> bool:
            listener = _children(kubeconfig, namespace).get(("Deployment", "mainnet-listener"))
            return listener is not None and listener["spec"]["replicas"] == 3

        wait_for(restored, what="the listener recreated with 3 replicas")
    finally:
        second.stop()


def test_ingest_pipeline_renders_a_spark_application_the_server_accepts(
    spark_crds: str, kube_namespace: str, tmp_path: Path, bigtable_emulator: str,
    local_stack: StackForTests,
) -> None:  # fmt: skip
    local_stack.require("kwok")
    kubeconfig, namespace = spark_crds, kube_namespace
    running = start_operator(kubeconfig, namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    try:
        table = yaml.safe_load((SAMPLES / "backendtable-bigtable.yaml").read_text())
        table["spec"]["bigtable"]["table"] = f"events-{namespace}"
        _apply(kubeconfig, namespace, table)
        _apply(kubeconfig, namespace, SAMPLES / "ingestpipeline-batch.yaml")
        _apply(kubeconfig, namespace, SAMPLES / "ingestpipeline-scheduled.yaml")

        application = wait_for(
            lambda: kubectl(kubeconfig, "-n", namespace, "get", "sparkapplication",
                            "backfill-2024", "-o", "json", check=False).stdout or None,
            what="the SparkApplication")  # fmt: skip
        found = json.loads(application)
        assert found["metadata"]["ownerReferences"][0]["kind"] == "IngestPipeline"
        assert found["spec"]["arguments"][:3] == ["vaa-ingest", "--input",
                                                  "s3a://wormhole-archive/vaas/2024/"]  # fmt: skip
        assert f"events-{namespace}" in found["spec"]["arguments"]
        scheduled = kubectl_json(kubeconfig, "-n", namespace, "get",
                                 "scheduledsparkapplication", "nightly-ingest")  # fmt: skip
        assert scheduled["spec"]["schedule"] == "0 2 * * *"

        # No spark-operator controller runs here: the status says so, and what to install.
        ready = wait_for(lambda: (c := _condition(kubeconfig, namespace, "ipl/backfill-2024",
                                                  "Ready")).get("reason") and c,
                         what="the pipeline's status")  # fmt: skip
        assert ready["status"] == "False"
        assert ready["reason"] == "AwaitingSparkOperator"
        assert "helm install spark-operator" in ready["message"]

        # What the spark-operator controller would write: the pipeline's status follows it.
        done = {"status": {"applicationState": {"state": "COMPLETED"}, "driverInfo": {}}}
        kubectl(kubeconfig, "-n", namespace, "patch", "sparkapplication", "backfill-2024",
                "--subresource=status", "--type=merge", "-p", json.dumps(done))  # fmt: skip

        def completed() -> bool:
            found = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", "backfill-2024")
            status = found.get("status") or {}
            ready = _condition(kubeconfig, namespace, "ipl/backfill-2024", "Ready")
            return status.get("state") == "COMPLETED" and ready.get("status") == "True"

        wait_for(completed, what="the pipeline to mirror COMPLETED")

        # Streaming mode: the indexer's Deployment, run by KWOK.
        _apply(kubeconfig, namespace, _on_kwok("ingestpipeline-streaming.yaml"))
        wait_for(lambda: _condition(kubeconfig, namespace, "ipl/live", "Ready").get("status")
                 == "True", timeout=120, what="the indexer available")  # fmt: skip
        indexer = kubectl_json(kubeconfig, "-n", namespace, "get", "deployment", "live-indexer")
        assert indexer["spec"]["template"]["spec"]["containers"][0]["args"][:2] == [
            "indexer",
            "run",
        ]
    finally:
        running.stop()


def test_two_replicas_one_acts_and_the_other_takes_over(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, local_stack: StackForTests
) -> None:
    local_stack.require("kwok")
    kubeconfig, namespace = chainloom_crds, kube_namespace
    _apply(kubeconfig, namespace, {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
                                   "metadata": {"name": "chainloom"}})  # fmt: skip
    _secrets(kubeconfig, namespace, "eth-hot-1", "eth-hot-2", "sol-hot-1")
    active = start_operator(kubeconfig, namespace, tmp_path / "active.log",
                            "--peering", "chainloom", "--priority", "100")  # fmt: skip
    standby = start_operator(kubeconfig, namespace, tmp_path / "standby.log",
                             "--peering", "chainloom", "--priority", "50")  # fmt: skip
    try:
        # Replicas start paused; only the one with the highest priority resumes.
        wait_for(lambda: "Resuming operations after the pause" in active.output(),
                 what="the active replica to resume")  # fmt: skip
        _apply(kubeconfig, namespace, _pool_sample())
        wait_for(lambda: set(_children(kubeconfig, namespace)) >= POOL_CHILDREN,
                 what="the children")  # fmt: skip
        wait_for(lambda: "Handler 'relayer_pool' succeeded" in active.output(),
                 what="the active replica's handler")  # fmt: skip
        assert "Handler 'relayer_pool'" not in standby.output()
        assert "Resuming operations" not in standby.output()

        active.stop()
        wait_for(lambda: "Resuming operations after the pause" in standby.output(),
                 timeout=120, what="the standby to take over")  # fmt: skip
        kubectl(kubeconfig, "-n", namespace, "delete", "deployment", "mainnet-listener")
        wait_for(lambda: ("Deployment", "mainnet-listener") in _children(kubeconfig, namespace),
                 what="the standby to recreate the listener")  # fmt: skip
    finally:
        active.stop()
        standby.stop()


def test_a_kind_the_server_does_not_serve_names_what_to_install(chainloom_crds: str) -> None:
    from chainloom_operator._kube import Cluster, api_client
    from chainloom_operator.errors import MissingCrdError

    manifest = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkNoSuchKind",
                "metadata": {"name": "x", "namespace": "default"}}  # fmt: skip
    with Cluster(api_client(chainloom_crds)) as cluster:
        with pytest.raises(MissingCrdError, match="install the Kubeflow spark-operator"):
            cluster.apply(manifest)
        assert not cluster.served("sparkoperator.k8s.io/v1beta2", "SparkNoSuchKind")


def test_the_adapter_applies_finds_and_deletes_children_and_checks_secrets(
    chainloom_crds: str, kube_namespace: str
) -> None:
    from chainloom_operator._kube import FIELD_MANAGER, Cluster, api_client
    from chainloom_operator._render.common import Owner
    from chainloom_operator.errors import MissingSecretError

    namespace = kube_namespace
    with Cluster(api_client(chainloom_crds)) as cluster:
        metadata = {"name": "parent", "namespace": namespace}
        parent = cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
        owner = Owner("ConfigMap", "parent", namespace, parent["metadata"]["uid"], 1)
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
                     "uid": owner.uid}  # fmt: skip
        child = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                 "metadata": {"name": "child", "namespace": namespace,
                              "labels": dict(owner.selector()),
                              "ownerReferences": [reference]}}  # fmt: skip
        applied = cluster.apply(child)
        assert [m["manager"] for m in applied["metadata"]["managedFields"]] == [FIELD_MANAGER]
        again = cluster.apply(child)
        assert again["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]
        found = cluster.children(owner, (("v1", "ConfigMap"),))
        assert [(c["kind"], c["metadata"]["name"], c["data"]) for c in found] == [
            ("ConfigMap", "child", {"k": "v"})
        ]

        _secrets(chainloom_crds, namespace, "wallet")
        cluster.check_secrets(namespace, [("wallet", "key", "a wallet")])
        with pytest.raises(MissingSecretError, match=f"Secret {namespace}/absent"):
            cluster.check_secrets(namespace, [("wallet", "key", "a"), ("absent", "key", "b")])

        cluster.delete(child)
        cluster.delete(child)  # gone already is fine
        assert cluster.get("v1", "ConfigMap", namespace, "child") is None
        assert cluster.children(owner, (("v1", "ConfigMap"),)) == []
        cluster.patch_status("relayerpools", namespace, "absent", {"x": 1})  # gone is fine
        assert cluster.get_custom("relayerpools", namespace, "absent") is None


def test_queue_depths_in_status_when_redis_is_reachable(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, redis_url: str,
    local_stack: StackForTests,
) -> None:  # fmt: skip
    local_stack.require("kwok")
    kubeconfig, namespace = chainloom_crds, kube_namespace
    _secrets(kubeconfig, namespace, "sol-hot-1")
    pool = _pool_sample()
    pool["spec"]["chains"] = pool["spec"]["chains"][1:]
    pool["spec"]["redis"] = {"url": redis_url}
    running = start_operator(kubeconfig, namespace, tmp_path / "operator.log")
    try:
        _apply(kubeconfig, namespace, pool)

        def depths() -> dict[str, int] | None:
            status = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool", "mainnet")
            found: dict[str, int] | None = (status.get("status") or {}).get("queueDepths")
            return found or None

        found = wait_for(depths, what="queue depths in status")
        assert set(found) == {"incoming", "in_work", "pending_confirmation", "failed",
                              "completed"}  # fmt: skip
    finally:
        running.stop()


def test_retries_are_bounded(chainloom_crds: str, kube_namespace: str, tmp_path: Path) -> None:
    kubeconfig, namespace = chainloom_crds, kube_namespace
    running = start_operator(kubeconfig, namespace, tmp_path / "operator.log",
                             env={"CHAINLOOM_RETRIES": "2"})  # fmt: skip
    try:
        _apply(kubeconfig, namespace, _pool_sample())  # no Secrets exist
        wait_for(lambda: "gave up after 2 attempts" in running.output(),
                 what="the operator to give up")  # fmt: skip
        assert running.output().count("Handler 'relayer_pool' failed temporarily") == 1
    finally:
        running.stop()


def test_listing_stays_in_the_watched_namespaces(chainloom_crds: str, kube_namespace: str) -> None:
    from chainloom_operator._kube import Cluster, api_client

    _apply(chainloom_crds, kube_namespace, SAMPLES / "backendtable-bigtable.yaml")
    with Cluster(api_client(chainloom_crds)) as cluster:

        def names(*namespaces: str) -> set[tuple[str, str]]:
            found = list(cluster.list_custom("backendtables", namespaces))
            return {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in found}

        assert names(kube_namespace) == {(kube_namespace, "events")}
        assert names("t-no-such-namespace") == set()
        assert (kube_namespace, "events") in names("t-*")
        assert {ns for ns, _ in names(kube_namespace[:4] + "*")} <= {
            ns for ns, _ in names() if ns.startswith(kube_namespace[:4])
        }
