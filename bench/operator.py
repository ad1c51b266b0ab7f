"""The operator reconciling many RelayerPools to Ready, against a bare client as the ceiling.

Runs against the local stack's API server with KWOK (``chainloom stack up --full``;
``KUBECONFIG`` from ``chainloom stack env``). Each pool has one target chain with one wallet,
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

SPEC: dict[str, Any] = {
    "redis": {"url": "redis://redis.invalid:6379/0"},
    "chains": [{"chain": "ethereum", "wallets": [{"name": "w", "secret_ref": {"name": "wallet"}}]}],
    # The pods go to the bench's own KWOK nodes, never to a real node of the cluster.
    "placement": {"node_selector": {"chainloom.io/bench": "true"}},
}


def _api() -> Any:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    api.configuration.connection_pool_maxsize = 16
    return client, api


def _namespace(client: Any, api: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_secret(name, client.V1Secret(
        metadata=client.V1ObjectMeta(name="wallet"), string_data={"key": "11" * 32}))  # fmt: skip
    return name


def _available(apps: Any, namespace: str, wanted: int) -> int:
    from chainloom_operator._render.status import deployment_available

    listed = apps.list_namespaced_deployment(namespace).to_dict()["items"]
    ready = [d for d in listed if deployment_available(_camel(d))]
    return len(ready) if len(listed) >= wanted else 0


def _camel(deployment: dict[str, Any]) -> dict[str, Any]:
    """The typed client's snake_case dict, as the status fields the API server returns."""
    status = deployment.get("status") or {}
    return {
        "metadata": {"generation": deployment["metadata"].get("generation", 0)},
        "spec": {"replicas": deployment["spec"].get("replicas", 1)},
        "status": {
            "observedGeneration": status.get("observed_generation") or 0,
            "updatedReplicas": status.get("updated_replicas") or 0,
            "availableReplicas": status.get("available_replicas") or 0,
        },
    }


def bare(pools: int) -> float:
    """Seconds for a bare client to apply every pool's children and see them available."""
    from kubernetes.dynamic import DynamicClient

    from chainloom_operator._render.common import Owner
    from chainloom_operator._render.relayer import render_relayer_pool
    from chainloom_operator.models import RelayerPoolSpec

    client, api = _api()
    namespace = _namespace(client, api, "bench-bare")
    dynamic = DynamicClient(api)
    spec = RelayerPoolSpec.model_validate(SPEC)
    apps = client.AppsV1Api(api)
    try:
        start = time.perf_counter()
        for index in range(pools):
            owner = Owner("RelayerPool", f"p{index}", namespace, str(uuid.uuid4()), 1)
            for manifest in render_relayer_pool(owner, spec):
                manifest["metadata"].pop("ownerReferences")  # no owner exists here
                resource = dynamic.resources.get(api_version=manifest["apiVersion"],
                                                 kind=manifest["kind"])  # fmt: skip
                resource.server_side_apply(body=manifest, name=manifest["metadata"]["name"],
                                           namespace=namespace, field_manager="bench",
                                           force_conflicts=True)  # fmt: skip
        while _available(apps, namespace, 2 * pools) < 2 * pools:
            time.sleep(0.5)
        return time.perf_counter() - start
    finally:
        client.CoreV1Api(api).delete_namespace(namespace)


def with_operator(pools: int) -> tuple[float, float]:
    """Seconds until every pool is Ready under the operator, and its peak RSS in MB."""
    client, api = _api()
    namespace = _namespace(client, api, "bench-op")
    custom = client.CustomObjectsApi(api)
    log = Path(tempfile.mkstemp(prefix="bench-operator-", suffix=".log")[1])
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "chainloom", "operator", "run", "--namespace", namespace,
             "--liveness", "http://127.0.0.1:0/healthz"],
            stdout=handle, stderr=subprocess.STDOUT, env=environment,
        )  # fmt: skip
    try:
        time.sleep(3)  # the operator's start-up is not part of the reconcile time
        start = time.perf_counter()
        for index in range(pools):
            body = {"apiVersion": "chainloom.io/v1alpha1", "kind": "RelayerPool",
                    "metadata": {"name": f"p{index}"}, "spec": SPEC}  # fmt: skip
            custom.create_namespaced_custom_object("chainloom.io", "v1alpha1", namespace,
                                                   "relayerpools", body)  # fmt: skip
        while True:
            listed = custom.list_namespaced_custom_object("chainloom.io", "v1alpha1", namespace,
                                                          "relayerpools")["items"]  # fmt: skip
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
        client.CoreV1Api(api).delete_namespace(namespace)


PODS_PER_NODE = 100
"""Pods the bench places on one of its KWOK nodes (KWOK nodes take 110)."""


def add_nodes(pools: int) -> list[str]:
    """Fake nodes for the pools' pods (KWOK manages nodes labelled type=kwok), the bench's own."""
    client, api = _api()
    core = client.CoreV1Api(api)
    names = [f"bench-kwok-{i}" for i in range(-(-2 * pools // PODS_PER_NODE))]
    for name in names:
        core.create_node(client.V1Node(metadata=client.V1ObjectMeta(
            name=name,
            annotations={"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            labels={"type": "kwok", "kubernetes.io/hostname": name, "chainloom.io/bench": "true"},
        )))  # fmt: skip
    return names


def remove_nodes(names: list[str]) -> None:
    client, api = _api()
    for name in names:
        client.CoreV1Api(api).delete_node(name)


def api_error_line(error: Exception) -> str:
    """One line for an error of the Kubernetes client: the API server's own message (the
    ``message`` of its Status body) with the HTTP status, else the error's text."""
    status, body = getattr(error, "status", None), getattr(error, "body", None)
    message = ""
    if isinstance(body, (str, bytes)) and body:
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        if isinstance(document, dict):
            message = str(document.get("message") or "")
    if not message:
        message = str(getattr(error, "reason", "") or error)
    line = " ".join(message.split())
    return f"bench/operator: the API server answered {status}: {line}" if status else \
        f"bench/operator: {line}"  # fmt: skip


def main() -> None:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=100, help="RelayerPools (the goal: 1000).")
    args = parser.parse_args()
    if not os.environ.get("KUBECONFIG"):
        raise SystemExit('bench/operator: set KUBECONFIG (eval "$(chainloom stack env)")')
    try:
        run(args.pools)
    except (ApiException, HTTPError) as error:
        raise SystemExit(api_error_line(error)) from None


CRDS = Path(__file__).resolve().parent.parent / "crds"
"""The project's CRDs, applied first (a fresh stack has none)."""


def apply_crds() -> None:
    """``kubectl apply --server-side`` of :data:`CRDS` (kubectl from ``chainloom stack env``)."""
    try:
        applied = subprocess.run(
            ["kubectl", "apply", "--server-side", "--force-conflicts", "-f", str(CRDS)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        raise SystemExit(
            'bench/operator: kubectl is not on PATH (eval "$(chainloom stack env)")'
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
