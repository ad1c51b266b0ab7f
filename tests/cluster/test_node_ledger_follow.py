"""The following ledger ETL on the real node: the operator renders two replicas of ``chainloom
ledger follow`` over the stack's Cassandra, fed by the replay server on the host (a ledger every
0.5 s, rippled's gRPC API); ``status.writer`` names the writing pod; force-deleting that pod
(its container dies at once, mid-ledger) lets the standby take over, shown in ``status.writer``
and a ``WriterChanged`` event, and the history ends equal to a clean load of the same dump.

The operator runs on the host and reads the pods' ``/status`` by their IPs; the pods reach
Cassandra and the replay server through relays on the node's IP (``node_support``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.errors import LedgerConfigError
from chainloom.ledger.service import make_backend
from chainloom_dev.net import free_port
from tests.cluster.node_support import (
    NODE_IMAGE,
    ON_THE_NODE,
    host_relay,
    node_gateway,
    wait_explained,
)
from tests.conftest import NodeCluster
from tests.ledger_api_support import (
    FIRST,
    assert_equals_clean_load,
    drop_keyspace,
    generate_live_dump,
    start_replay,
    stop_replay,
)
from tests.operator_support import install_crds, kubectl, kubectl_json, start_operator

LEDGERS = 40
LAST = FIRST + LEDGERS


def test_the_following_etl_survives_its_writer_pods_death(
    node_cluster: NodeCluster, node_namespace: str, cassandra_address: tuple[str, int],
    vectors_dir: Path, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, namespace = node_cluster, node_namespace
    config = cluster.kubeconfig
    install_crds(config)
    keyspace = f"follow_{namespace.replace('-', '_')}"
    host, port = cassandra_address
    dump = generate_live_dump(vectors_dir, tmp_path / "live.jsonl", LEDGERS, seed=11)
    grpc_port = free_port()
    replay = start_replay(dump, grpc_port, 0.5, subprocess.DEVNULL)
    operator = start_operator(config, namespace, tmp_path / "operator.log")
    reader: BackendInterface | None = None
    gateway = node_gateway(cluster)
    try:
        with (
            host_relay(gateway, f"{host}:{port}") as cassandra,
            host_relay(gateway, f"127.0.0.1:{grpc_port}") as rippled,
        ):
            relay_host, relay_port = cassandra.rsplit(":", 1)

            def explain() -> str:
                pods = kubectl(config, "-n", namespace, "get", "pods", "-o", "wide",
                               check=False).stdout  # fmt: skip
                logs = kubectl(config, "-n", namespace, "logs", "-l",
                               "app.kubernetes.io/component=ledger-etl", "--tail=20",
                               "--prefix", check=False)  # fmt: skip
                return f"{pods}\n{logs.stdout}{logs.stderr}\n{operator.output()[-3000:]}"

            table = {
                "apiVersion": "chainloom.io/v1alpha1", "kind": "BackendTable",
                "metadata": {"name": "ledger"},
                "spec": {"backend": "cassandra",
                         "cassandra": {"hosts": [relay_host], "port": int(relay_port),
                                       "keyspace": keyspace, "replication_factor": 1}},
            }  # fmt: skip
            pipeline = {
                "apiVersion": "chainloom.io/v1alpha1", "kind": "IngestPipeline",
                "metadata": {"name": "xrpl"},
                "spec": {"mode": "streaming", "sink": "ledger",
                         "ledger": {"grpc": rippled, "start": FIRST, "replicas": 2,
                                    "fallback_seconds": 3, "poll_interval": 0.2,
                                    "image": NODE_IMAGE, "image_pull_policy": "Never",
                                    "placement": {"node_selector": dict(ON_THE_NODE)}}},
            }  # fmt: skip
            for document in (table, pipeline):
                kubectl(config, "-n", namespace, "apply", "--server-side", "-f", "-",
                        stdin=yaml.safe_dump(document))  # fmt: skip

            def writer() -> str | None:
                """The one pod in status.writer (None: nobody, or two for a moment)."""
                found = kubectl_json(config, "-n", namespace, "get", "ipl", "xrpl")
                name: str = (found.get("status") or {}).get("writer") or ""
                return name if name and "," not in name else None

            first = wait_explained(writer, timeout=420, what="a writer in status.writer",
                                   explain=explain)  # fmt: skip

            def open_reader() -> BackendInterface | None:
                try:
                    return make_backend({"type": "cassandra", "read_only": True, "cassandra": {
                        "hosts": [host], "port": port, "keyspace": keyspace}})  # fmt: skip
                except LedgerConfigError:  # the writer is still creating the tables
                    return None

            reader = wait_explained(open_reader, timeout=240, what="the keyspace",
                                    explain=explain)  # fmt: skip

            def stored_max() -> int:
                assert reader is not None
                found = reader.hard_fetch_ledger_range()
                return 0 if found is None else found.max_sequence

            wait_explained(lambda: stored_max() >= FIRST + 8, timeout=240,
                           what="ledgers flowing", explain=explain)  # fmt: skip
            kubectl(config, "-n", namespace, "delete", "pod", first, "--grace-period=0",
                    "--force")  # fmt: skip
            killed_at = stored_max()
            assert killed_at < LAST, "the writer finished before its pod died"

            def another() -> str | None:
                now = writer()
                return now if now != first else None

            second = wait_explained(another, timeout=180, what="the standby to take over",
                                    explain=explain)  # fmt: skip

            def takeover_events() -> list[str] | None:
                events = kubectl_json(config, "-n", namespace, "get", "events", "--field-selector",
                                      "reason=WriterChanged")["items"]  # fmt: skip
                return [e["message"] for e in events] or None

            messages = wait_explained(takeover_events, timeout=60, what="a WriterChanged event",
                                      explain=explain)  # fmt: skip
            assert messages == [f"pod {second} took over writing the ledger from pod {first}"]
            wait_explained(lambda: stored_max() == LAST, timeout=300,
                           what="the end of the dump", explain=explain)  # fmt: skip

        assert_equals_clean_load(reader, dump, tmp_path, FIRST, LAST)
    finally:
        operator.stop()
        stop_replay(replay)
        if reader is not None:
            reader.close()
        drop_keyspace(cassandra_address, keyspace)
