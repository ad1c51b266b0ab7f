"""The operator reconciling many RelayerPools to Ready, against a bare client as the ceiling.

Runs against the local stack's API server with KWOK (``chainloom-dev stack up --full``;
``KUBECONFIG`` from ``chainloom-dev stack env``). Each pool has one target chain with one wallet,
so it renders a ConfigMap, a listener Deployment + Service, one worker Deployment and a
NetworkPolicy; KWOK runs the pods, on fake nodes the bench adds for them (100 pods each,
labelled ``chainloom.io/bench``) and removes at the end.

1. Ceiling: a bare client server-side-applies exactly the manifests the operator renders (the
   same pure renderer) for N pools into a fresh namespace and waits until every Deployment
   reports its replicas available.
2. Operator: ``chainloom operator run --namespace NS`` as a process; the N RelayerPools are
   created and the clock stops when every pool's ``Ready`` condition is True. The operator's
   peak RSS is its ``VmHWM``.

Printed: both times, their ratio, and the peak RSS. The issue's goal: with ``--pools 1000``,
at most 2x the bare time and at most 150 MB. An error of the API server (a full ClusterIP range,
say) or an unreachable one ends the bench with one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from chainloom_dev.net import free_port
from chainloom_operator._kube import namespaced_resource

SPEC: dict[str, Any] = {
    "redis": {"url": "redis://redis.invalid:6379/0"},
    "chains": [{"chain": "ethereum", "wallets": [{"name": "w", "secret_ref": {"name": "wallet"}}]}],
    # The pods go to the bench's own KWOK nodes, never to a real node of the cluster.
    "placement": {"node_selector": {"chainloom.io/bench": "true"}},
}


def _client() -> Any:
    from lightkube import Client, KubeConfig

    return Client(KubeConfig.from_file(os.environ["KUBECONFIG"]), field_manager="bench")


def _namespace(client: Any, prefix: str) -> str:
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import Namespace, Secret

    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    client.create(Namespace(metadata=ObjectMeta(name=name)))
    client.create(Secret(metadata=ObjectMeta(name="wallet"), stringData={"key": "11" * 32}),
                  namespace=name)  # fmt: skip
    return name


PLURALS = {"ConfigMap": "configmaps", "Service": "services", "Deployment": "deployments",
           "NetworkPolicy": "networkpolicies", "RelayerPool": "relayerpools"}  # fmt: skip
"""The plurals of the kinds the bench writes."""


def _available(client: Any, namespace: str, wanted: int) -> int:
    from chainloom_operator._render.status import deployment_available

    listed = list(client.list(namespaced_resource("apps/v1", "Deployment", "deployments"),
                              namespace=namespace))  # fmt: skip
    ready = [d for d in listed if deployment_available(d)]
    return len(ready) if len(listed) >= wanted else 0


def bare(pools: int) -> float:
    """Seconds for a bare client to apply every pool's children and see them available."""
    from lightkube.resources.core_v1 import Namespace
    from lightkube.types import PatchType

    from chainloom_operator._render.common import Owner
    from chainloom_operator._render.relayer import render_relayer_pool
    from chainloom_operator.models import RelayerPoolSpec

    client = _client()
    namespace = _namespace(client, "bench-bare")
    spec = RelayerPoolSpec.model_validate(SPEC)
    try:
        start = time.perf_counter()
        for index in range(pools):
            owner = Owner("RelayerPool", f"p{index}", namespace, str(uuid.uuid4()), 1)
            for manifest in render_relayer_pool(owner, spec):
                manifest["metadata"].pop("ownerReferences")  # no owner exists here
                kind = manifest["kind"]
                resource = namespaced_resource(manifest["apiVersion"], kind, PLURALS[kind])
                client.patch(resource, manifest["metadata"]["name"], manifest,
                             namespace=namespace, patch_type=PatchType.APPLY,
                             force=True)  # fmt: skip
        while _available(client, namespace, 2 * pools) < 2 * pools:
            time.sleep(0.5)
        return time.perf_counter() - start
    finally:
        client.delete(Namespace, namespace)
        client.close()


def with_operator(pools: int) -> tuple[float, float]:
    """Seconds until every pool is Ready under the operator, and its peak RSS in MB."""
    from lightkube.resources.core_v1 import Namespace

    client = _client()
    namespace = _namespace(client, "bench-op")
    pool: Any = namespaced_resource("chainloom.io/v1alpha1", "RelayerPool", PLURALS["RelayerPool"])
    log = Path(tempfile.mkstemp(prefix="bench-operator-", suffix=".log")[1])
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "chainloom", "operator", "run", "--namespace", namespace,
             "--liveness", f"http://127.0.0.1:{free_port()}/healthz"],
            stdout=handle, stderr=subprocess.STDOUT, env=environment,
        )  # fmt: skip
    try:
        time.sleep(3)  # the operator's start-up is not part of the reconcile time
        start = time.perf_counter()
        for index in range(pools):
            body = {"apiVersion": "chainloom.io/v1alpha1", "kind": "RelayerPool",
                    "metadata": {"name": f"p{index}"}, "spec": SPEC}  # fmt: skip
            client.create(pool(body), namespace=namespace)
        while True:
            listed = list(client.list(pool, namespace=namespace))
            ready = sum(
                any(c["type"] == "Ready" and c["status"] == "True"
                    for c in (item.get("status") or {}).get("conditions", []))
                for item in listed
            )  # fmt: skip
            if ready == pools:
                break
            if process.poll() is not None:
                raise SystemExit(f"the operator exited; see {log}")
            time.sleep(0.5)
        elapsed = time.perf_counter() - start
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        return elapsed, int(peak.split()[1]) / 1024
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        client.delete(Namespace, namespace)
        client.close()


PODS_PER_NODE = 100
"""Pods the bench places on one of its KWOK nodes (KWOK nodes take 110)."""


def add_nodes(pools: int) -> list[str]:
    """Fake nodes for the pools' pods (KWOK manages nodes labelled type=kwok), the bench's own."""
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import Node

    names = [f"bench-kwok-{i}" for i in range(-(-2 * pools // PODS_PER_NODE))]
    with _client() as client:
        for name in names:
            client.create(Node(metadata=ObjectMeta(
                name=name,
                annotations={"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                labels={"type": "kwok", "kubernetes.io/hostname": name,
                        "chainloom.io/bench": "true"},
            )))  # fmt: skip
    return names


def remove_nodes(names: list[str]) -> None:
    from lightkube.resources.core_v1 import Node

    with _client() as client:
        for name in names:
            client.delete(Node, name)


def api_error_line(error: Exception) -> str:
    """One line for an error of the Kubernetes client: the API server's own message (the
    ``message`` of its Status body) with the HTTP status, else the error's text."""
    from lightkube import ApiError

    if isinstance(error, ApiError):
        message = " ".join(str(error.status.message or error.status.reason or "").split())
        return f"bench/operator: the API server answered {error.status.code}: {message}"
    return f"bench/operator: {' '.join(str(error).split())}"


def main() -> None:
    from httpx2 import HTTPError
    from lightkube import ConfigError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=100, help="RelayerPools (the goal: 1000).")
    args = parser.parse_args()
    if not os.environ.get("KUBECONFIG"):
        raise SystemExit('bench/operator: set KUBECONFIG (eval "$(chainloom-dev stack env)")')
    try:
        run(args.pools)
    except (HTTPError, ConfigError) as error:
        raise SystemExit(api_error_line(error)) from None


CRDS = Path(__file__).resolve().parent.parent / "crds"
"""The project's CRDs, applied first (a fresh stack has none)."""


def apply_crds() -> None:
    """``kubectl apply --server-side`` of :data:`CRDS` (kubectl from
    ``chainloom-dev stack env``)."""
    try:
        applied = subprocess.run(
            ["kubectl", "apply", "--server-side", "--force-conflicts", "-f", str(CRDS)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        raise SystemExit(
            'bench/operator: kubectl is not on PATH (eval "$(chainloom-dev stack env)")'
        ) from None
    if applied.returncode != 0:
        raise SystemExit(
            f"bench/operator: applying {CRDS} failed: {' '.join(applied.stderr.split())}"
        )


def run(pools: int) -> None:
    """Both measurements on the bench's own KWOK nodes; prints the figures as JSON."""
    apply_crds()
    nodes = add_nodes(pools)
    try:
        ceiling = bare(pools)
        print(f"bench/operator: bare client {ceiling:.1f} s for {pools} pools", file=sys.stderr)
        elapsed, peak = with_operator(pools)
    finally:
        remove_nodes(nodes)
    figures = {"pools": pools, "bare_seconds": round(ceiling, 1),
               "operator_seconds": round(elapsed, 1), "ratio": round(elapsed / ceiling, 2),
               "operator_peak_rss_mb": round(peak)}  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
