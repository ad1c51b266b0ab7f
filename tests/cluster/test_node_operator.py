"""The chart and the operator on the real node, with pods that run: the operator's pods reach
Ready through their probes and reconcile; ``helm upgrade`` and ``helm uninstall`` (CRDs kept);
a RelayerPool's listener and workers relay transfers from a spy replay to redemption on the
simulated chain in the stack's Redis, and a deleted worker pod loses nothing.

The pods reach the host's servers through relays on the node's IP (``node_support``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import redis
import yaml

from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from chainloom.wormhole import VAA, GuardianSets
from chainloom_dev.sim.sim_chains import RedisLedgerAdapter, SimChainRules
from chainloom_dev.stack.components.node import NODE_NAME
from tests.cluster.node_support import (
    NODE_IMAGE,
    ON_THE_NODE,
    Release,
    chart_release,
    free_port_on,
    host_relay,
    node_gateway,
    run_pod,
    tilt_devnet_quorum,
    wait_explained,
)
from tests.conftest import REPO_ROOT, NodeCluster
from tests.integration.relayer.relay_support import transfer_payload
from tests.operator_support import install_crds, kubectl, kubectl_json, wait_for

SAMPLES = REPO_ROOT / "docs" / "samples"
CHAINLOOM_CRDS = {"ingestpipelines.chainloom.io", "relayerpools.chainloom.io",
                  "backendtables.chainloom.io"}  # fmt: skip


def _apply(cluster: NodeCluster, namespace: str, document: dict[str, Any]) -> None:
    kubectl(cluster.kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip


def _condition(cluster: NodeCluster, namespace: str, resource: str, kind: str) -> dict[str, Any]:
    found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", resource)
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


def _ready(cluster: NodeCluster, namespace: str, resource: str) -> bool:
    return _condition(cluster, namespace, resource, "Ready").get("status") == "True"


def _backend_table(name: str, table: str) -> dict[str, Any]:
    document = yaml.safe_load((SAMPLES / "backendtable-bigtable.yaml").read_text())
    document["metadata"]["name"] = name
    document["spec"]["bigtable"]["table"] = table
    return dict(document)


def _operator_pods_ready(release: Release, count: int) -> list[dict[str, Any]] | None:
    pods = [p for p in release.pods() if not p["metadata"].get("deletionTimestamp")]
    ready = [
        p
        for p in pods
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        )
    ]
    return pods if len(pods) == count and len(ready) == count else None


def test_the_image_holds_the_operator_and_runs_as_its_user(
    node_cluster: NodeCluster, node_namespace: str
) -> None:
    probe = (
        "import getpass, importlib.metadata as metadata, shutil, chainloom_operator, kopf\n"
        "(script,) = metadata.entry_points(group='console_scripts', name='chainloom')\n"
        "print(getpass.getuser(), script.value, shutil.which('chainloom'),"
        " chainloom_operator.__name__)\n"
    )
    logs = run_pod(node_cluster, node_namespace, "probe", ["python3", "-c", probe],
                   securityContext={"runAsUser": 10001, "runAsGroup": 10001})  # fmt: skip
    assert logs.split() == ["chainloom", "chainloom.cli:main", "/usr/local/bin/chainloom",
                            "chainloom_operator"]  # fmt: skip
    help_text = run_pod(node_cluster, node_namespace, "help", ["chainloom", "operator", "--help"])
    assert "Run the operator" in help_text
    assert "Generate the CRDs" in help_text


def test_the_chart_runs_the_operator_on_the_node_through_install_upgrade_and_uninstall(
    node_cluster: NodeCluster, node_namespace: str, bigtable_emulator: str
) -> None:
    cluster, namespace = node_cluster, node_namespace
    install_crds(cluster.kubeconfig)  # kubectl apply --server-side -f crds/
    with (
        host_relay(node_gateway(cluster), bigtable_emulator) as emulator,
        chart_release(cluster, namespace) as release,
    ):
        release.install(f"config.bigtable.emulatorHost={emulator}",
                        "operator.recheckInterval=5")  # fmt: skip
        pods = wait_explained(
            lambda: _operator_pods_ready(release, 2),
            what="2 ready operator pods",
            explain=release.logs,
        )
        for pod in pods:
            assert pod["spec"]["nodeName"] == NODE_NAME
            (container,) = pod["status"]["containerStatuses"]
            assert container["image"].endswith(NODE_IMAGE), container["image"]
            assert container["restartCount"] == 0, release.logs()
        # Peering: exactly one replica acts (two starting together may both resume for a
        # moment; then one pauses in favour of the other).
        wait_explained(
            lambda: release.active_replicas() == 1,
            timeout=120,
            what="one active replica",
            explain=release.logs,
        )

        # The operator in its pod reconciles: the tables in the emulator, through the relay.
        table = f"events-{namespace}"
        _apply(cluster, namespace, _backend_table("events", table))
        wait_explained(
            lambda: _ready(cluster, namespace, "btable/events"),
            what="BackendTable events Ready",
            explain=release.logs,
        )
        status = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "btable", "events")
        assert status["status"]["tables"] == [table, f"{table}-index"]

        # helm upgrade: one replica left, and it (active or promoted) still reconciles.
        release.upgrade(f"config.bigtable.emulatorHost={emulator}", "operator.recheckInterval=5",
                        "operator.replicas=1")  # fmt: skip
        wait_explained(
            lambda: _operator_pods_ready(release, 1),
            what="1 ready operator pod after the upgrade",
            explain=release.logs,
        )
        _apply(cluster, namespace, _backend_table("archive", f"archive-{namespace}"))
        wait_explained(
            lambda: _ready(cluster, namespace, "btable/archive"),
            what="BackendTable archive Ready after the upgrade",
            explain=release.logs,
        )

        # helm uninstall: the operator goes, the CRDs and the resources stay.
        release.uninstall()
        wait_for(lambda: not release.pods(), timeout=180, what="the operator pods to go")
        crds = kubectl_json(cluster.kubeconfig, "get", "crd", "-l",
                            "app.kubernetes.io/part-of=chainloom")  # fmt: skip
        assert {item["metadata"]["name"] for item in crds["items"]} >= CHAINLOOM_CRDS
        kept = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "btable")["items"]
        assert {item["metadata"]["name"] for item in kept} == {"events", "archive"}


# --------------------------------------------------------------------------------------------
# A RelayerPool with real pods

TRANSFERS_PER_CHAIN = 24
"""Transfers to each of the two target chains."""
TARGETS = {2: ("hot-1", "hot-2"), 4: ("hot-1",)}
"""Target chain -> wallet names: three worker pods, one chain with a single wallet."""


def _signed_transfers() -> dict[int, list[VAA]]:
    """Per target chain, signed transfers from the devnet token bridge of the other chain."""
    guardians = tilt_devnet_quorum()
    assert guardians.addresses == GuardianSets.devnet().get(0).addresses[:13]
    out: dict[int, list[VAA]] = {}
    for target, source in ((2, 4), (4, 2)):
        out[target] = [
            guardians.sign(emitter_chain=source, emitter_address=guardians.token_bridge_emitter,
                           sequence=1000 + i, payload=transfer_payload(target_chain=target),
                           signers=range(13))
            for i in range(TRANSFERS_PER_CHAIN)
        ]  # fmt: skip
    return out


def _pool(redis_url: str, spy: str) -> dict[str, Any]:
    chains = [
        {"chain": chain, "wallets": [{"name": w, "secret_ref": {"name": f"c{chain}-{w}"}}
                                     for w in wallets]}
        for chain, wallets in TARGETS.items()
    ]  # fmt: skip
    return {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "RelayerPool",
        "metadata": {"name": "devnet"},
        "spec": {
            "image": NODE_IMAGE,
            "image_pull_policy": "Never",
            "spy_address": spy,
            "redis": {"url": redis_url},
            "validation": {
                "guardian_sets": {"source": "devnet"},
                "known_emitters": ["devnet"],
                "tokens": [{"chain": "*", "address": "*", "min_fee": 0}],
            },
            "listener": {"replicas": 1, "rest": {"port": 4201}},
            "worker": {
                "adapter": "redis-sim",
                "batch": 4,
                "lease_ttl": 5,
                "reap_every": 2,
                "recheck": 0.5,
            },
            "placement": {"node_selector": dict(ON_THE_NODE)},
            "chains": chains,
        },
    }


def _pool_pods(cluster: NodeCluster, namespace: str) -> list[dict[str, Any]]:
    found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "pods", "-l",
                         "chainloom.io/owner-name=devnet")  # fmt: skip
    items: list[dict[str, Any]] = found["items"]
    return items


def _pod_logs(cluster: NodeCluster, namespace: str) -> str:
    out = []
    for pod in _pool_pods(cluster, namespace):
        name = pod["metadata"]["name"]
        text = kubectl(cluster.kubeconfig, "-n", namespace, "logs", name, check=False).stdout
        out.append(f"--- {name}\n{text[-3000:]}")
    return "\n".join(out)


def test_a_relayer_pool_relays_on_the_node_and_a_deleted_worker_loses_nothing(
    node_cluster: NodeCluster, node_namespace: str, redis_url: str, tmp_path: Path
) -> None:
    cluster, namespace = node_cluster, node_namespace
    install_crds(cluster.kubeconfig)
    transfers = _signed_transfers()
    half = TRANSFERS_PER_CHAIN // 2
    first, second = ([vaa for chain in sorted(transfers) for vaa in transfers[chain][part]]
                     for part in (slice(0, half), slice(half, None)))  # fmt: skip
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    # Submitting and finality take a moment on the simulated chains, so work is in flight
    # when a worker goes.
    for chain in TARGETS:
        RedisLedgerAdapter.install(client, chain, SimChainRules(confirm_after=2.0,
                                                                stall_seconds=0.5))  # fmt: skip
    keys = {}
    for chain, wallets in TARGETS.items():
        for wallet in wallets:
            name = f"c{chain}-{wallet}"
            keys[name] = secrets.token_hex(32)
            kubectl(cluster.kubeconfig, "-n", namespace, "create", "secret", "generic", name,
                    f"--from-literal=key={keys[name]}")  # fmt: skip

    gateway = node_gateway(cluster)
    redis_host, _, database = redis_url.removeprefix("redis://").partition("/")
    spy_port, spy_log = free_port_on(gateway), tmp_path / "spy.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    with spy_log.open("wb") as log:  # the child keeps its own descriptor
        spy = subprocess.Popen(
            [sys.executable, "-m", "chainloom_dev", "spy", "serve", "--listen",
             f"{gateway}:{spy_port}", "--stdin", "--lossless", "--wait-for-subscribers", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, env=env,
        )  # fmt: skip
    assert spy.stdin is not None

    def publish(vaas: list[VAA]) -> None:
        assert spy.stdin is not None
        spy.stdin.write(b"".join(vaa.to_bytes().hex().encode() + b"\n" for vaa in vaas))
        spy.stdin.flush()

    try:
        with (
            host_relay(gateway, redis_host) as relayed_redis,
            chart_release(cluster, namespace) as release,
        ):
            release.install("operator.replicas=1", "operator.recheckInterval=2")

            def explain() -> str:
                return (f"depths: {tables.depths()}\n{release.logs()}\n"
                        f"{_pod_logs(cluster, namespace)}\nspy: {spy_log.read_text()}")  # fmt: skip

            _apply(cluster, namespace, _pool(f"redis://{relayed_redis}/{database}",
                                             f"{gateway}:{spy_port}"))  # fmt: skip
            wait_explained(
                lambda: _ready(cluster, namespace, "rpool/devnet"),
                what="the RelayerPool Ready",
                explain=explain,
            )
            pool = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "rpool", "devnet")
            assert pool["status"]["readyWorkers"] == "3/3"
            pods = _pool_pods(cluster, namespace)
            assert len(pods) == 4  # the listener and three workers, running for real
            assert {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}

            def completed(chain: int) -> int:
                return tables.depths()[Table.COMPLETED].get(chain, 0)

            # The first half; the worker pod of the one-wallet chain is deleted while that
            # chain's work is in flight, the second half arrives while it is replaced.
            publish(first)
            wait_explained(
                lambda: 0 < completed(4) < half,
                every=0.2,
                what="some transfers to chain 4 completed",
                explain=explain,
            )
            (worker,) = [p["metadata"]["name"] for p in pods
                         if p["metadata"]["labels"].get("chainloom.io/chain") == "4"]  # fmt: skip
            kubectl(cluster.kubeconfig, "-n", namespace, "delete", "pod", worker, "--wait=false")
            publish(second)
            wait_explained(
                lambda: all(completed(c) == TRANSFERS_PER_CHAIN for c in TARGETS),
                what="every transfer completed",
                explain=explain,
            )
            replacement = [p["metadata"]["name"] for p in _pool_pods(cluster, namespace)
                           if p["metadata"]["labels"].get("chainloom.io/chain") == "4"
                           and p["status"].get("phase") == "Running"]  # fmt: skip
            assert set(replacement) - {worker}, "no new worker pod for chain 4"

            # Exactly once: every transfer redeemed by one accepted submission, none refused.
            for chain, vaas in transfers.items():
                chain_state = RedisLedgerAdapter(client, chain)
                expected = {vaa.digest_hex for vaa in vaas}
                assert chain_state.submission_counts() == dict.fromkeys(expected, 1)
                assert chain_state.duplicate_attempts() == 0
            depths = tables.depths()
            left = (Table.INCOMING, Table.IN_WORK, Table.FAILED)
            assert not any(depths[t].get(c) for t in left for c in TARGETS), depths

            # The operator in its pod reads the depths through the relay into the status.
            wait_for(lambda: (kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "rpool",
                                           "devnet")["status"].get("queueDepths") or {})
                     .get("completed") == 2 * TRANSFERS_PER_CHAIN,
                     timeout=120, what="the queue depths in the pool's status")  # fmt: skip

            # Wallet keys are files, never in the environment, the logs, the status or events.
            logs = _pod_logs(cluster, namespace) + release.logs()
            status = json.dumps(kubectl_json(cluster.kubeconfig, "-n", namespace, "get",
                                             "rpool", "devnet"))  # fmt: skip
            events = json.dumps(kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "events"))
            for key in keys.values():
                assert key not in logs
                assert key not in status
                assert key not in events
    finally:
        spy.stdin.close()
        spy.terminate()
        spy.wait(timeout=30)
        client.close()
