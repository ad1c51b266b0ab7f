"""A BackendTable's read API on the real node: the operator renders the events API over the
stack's Bigtable emulator, its pods pass their readiness (a real round trip to the store) and
the table reports ``apiReady 2/2``; a client pod reads VAAs written from the host through the
API's Service, by its cluster DNS name. The same for the ledger API over the stack's Cassandra:
a client pod's JSON-RPC answers through the Service equal those of the API served on the host
over the same keyspace.

The operator runs on the host (as in ``test_operator.py``: what matters here is that the pods it
renders serve); the API's pods reach the emulator through a relay on the node's IP
(``node_support``).
"""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from chainloom.eventstore import bigtable as store
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.service import locate
from chainloom.eventstore.writer import EventWriter
from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.ledger.config import DatabaseSettings
from chainloom.ledger.service import make_backend
from chainloom.settings import BigtableSettings, CassandraSettings
from chainloom.wormhole import VAA, GuardianSets, mainnet_emitters
from chainloom_dev.stack.components.node import NODE_NAME
from tests.cluster.node_support import (
    NODE_IMAGE,
    ON_THE_NODE,
    host_relay,
    node_gateway,
    run_pod,
    tilt_devnet_quorum,
    wait_explained,
)
from tests.conftest import NodeCluster
from tests.ledger_api_support import FIRST, LEDGERS, drop_keyspace, load, make_dump
from tests.operator_support import install_crds, kubectl, kubectl_json, start_operator

SEQUENCES = range(100, 103)
"""The VAAs written (sequences of the devnet token bridge on Ethereum)."""


def _table(name: str, table: str, emulator: str) -> dict[str, Any]:
    return {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "BackendTable",
        "metadata": {"name": name},
        "spec": {
            "backend": "bigtable",
            "bigtable": {"table": table},
            "api": {
                "image": NODE_IMAGE,
                "image_pull_policy": "Never",
                "replicas": 2,
                "placement": {"node_selector": dict(ON_THE_NODE)},
                "env": {"BIGTABLE_EMULATOR_HOST": emulator},
            },
        },
    }


def _signed() -> list[VAA]:
    guardians = tilt_devnet_quorum()
    return [
        guardians.sign(emitter_chain=2, emitter_address=guardians.token_bridge_emitter,
                       sequence=sequence, payload=b"read plane %d" % sequence, signers=range(13))
        for sequence in SEQUENCES
    ]  # fmt: skip


CLIENT = """
import json, sys, time, urllib.request
base, paths = sys.argv[1], sys.argv[2:]
answers = {}
for attempt in range(60):  # the Service may take a moment to reach the pods from here
    try:
        for path in paths:
            with urllib.request.urlopen(base + path, timeout=5) as reply:
                answers[path] = json.loads(reply.read())
        break
    except OSError as error:
        last = error
        time.sleep(1)
else:
    sys.exit(f"no answer from {base}: {last}")
print(json.dumps(answers))
"""


def test_the_events_api_serves_through_its_service_on_the_node(
    node_cluster: NodeCluster, node_namespace: str, bigtable_emulator: str, tmp_path: Path
) -> None:
    cluster, namespace = node_cluster, node_namespace
    install_crds(cluster.kubeconfig)
    table = f"reads-{namespace}"
    located = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    operator = start_operator(cluster.kubeconfig, namespace, tmp_path / "operator.log",
                              env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    try:
        with host_relay(node_gateway(cluster), bigtable_emulator) as emulator:

            def explain() -> str:
                pods = kubectl(cluster.kubeconfig, "-n", namespace, "get", "pods", "-o", "wide",
                               check=False).stdout  # fmt: skip
                api_pods = "app.kubernetes.io/component=api"
                logs = kubectl(cluster.kubeconfig, "-n", namespace, "logs", "-l", api_pods,
                               "--tail=30", check=False)  # fmt: skip
                return f"{pods}\n{logs.stdout}{logs.stderr}\n{operator.output()[-3000:]}"

            kubectl(cluster.kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                    stdin=yaml.safe_dump(_table("events", table, emulator)))  # fmt: skip

            def tables_made() -> bool:
                found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "btable",
                                     "events")  # fmt: skip
                return bool((found.get("status") or {}).get("tables"))

            wait_explained(tables_made, what="the tables created", explain=explain)
            vaas = _signed()
            emitters = mainnet_emitters().with_dev_emitters([2, 4])
            with (
                BigtableTables(located) as tables,
                EventWriter(tables, GuardianSets.devnet(), emitters=emitters) as writer,
            ):
                for vaa in vaas:
                    writer.submit(vaa.to_bytes())

            # Both pods pass /readyz (a read of each table through the relay): 2/2.
            def serving() -> dict[str, Any] | None:
                found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "btable",
                                     "events")  # fmt: skip
                status: dict[str, Any] = found.get("status") or {}
                ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
                good = status.get("apiReady") == "2/2" and ready and ready[0]["status"] == "True"
                return status if good else None

            status = wait_explained(serving, what="apiReady 2/2", explain=explain)
            assert status["api"]["readyReplicas"] == 2
            pods = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "pods", "-l",
                                status["api"]["selector"])["items"]  # fmt: skip
            assert {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}
            assert all(c["ready"] for p in pods for c in p["status"]["containerStatuses"])

            # A client pod reads them through the Service, by its DNS name.
            emitter = vaas[0].emitter_address.hex()
            paths = [f"/api/v1/vaas/2/{emitter}/{vaa.sequence}" for vaa in vaas]
            base = f"http://events-api.{namespace}.svc.cluster.local:4401"
            logs = run_pod(cluster, namespace, "client", ["python3", "-c", CLIENT, base, *paths])
            answers = json.loads(logs.strip().splitlines()[-1])
            for vaa, path in zip(vaas, paths, strict=True):
                data = answers[path]["data"]
                assert data["id"] == f"2/{emitter}/{vaa.sequence}"
                assert base64.b64decode(data["vaa"]) == vaa.to_bytes()
    finally:
        operator.stop()
        store.drop_tables(located)


LEDGER_CLIENT = """
import json, sys, time, urllib.request
base, calls = sys.argv[1], json.loads(sys.argv[2])
answers = []
for attempt in range(60):  # the Service may take a moment to reach the pods from here
    try:
        for call in calls:
            request = urllib.request.Request(base, data=json.dumps(call).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as reply:
                answers.append(json.loads(reply.read())["result"])
        break
    except OSError as error:
        answers, last = [], error
        time.sleep(1)
else:
    sys.exit(f"no answer from {base}: {last}")
print(json.dumps(answers))
"""

LEDGER_CALLS = [
    {"method": "ledger_range", "params": [{}]},
    {"method": "ledger", "params": [{"ledger_index": FIRST + 2, "transactions": True}]},
    {"method": "ledger_data", "params": [{"ledger_index": FIRST + 2, "limit": 20}]},
]
"""What the client pod asks the ledger API (rippled's JSON-RPC)."""


def _host_answers(config: DatabaseSettings) -> list[dict[str, Any]]:
    """:data:`LEDGER_CALLS` answered by the ledger API served on the host over ``config``."""
    backend = make_backend(config.model_copy(update={"read_only": True}))
    server = ServerThread(backend)
    port = server.start()
    try:
        answers = []
        for call in LEDGER_CALLS:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", method="POST",
                                             data=json.dumps(call).encode())  # fmt: skip
            with urllib.request.urlopen(request, timeout=60) as reply:
                answers.append(json.loads(reply.read())["result"])
        return answers
    finally:
        server.stop()
        backend.close()


def test_the_ledger_api_serves_through_its_service_on_the_node(
    node_cluster: NodeCluster, node_namespace: str, cassandra_address: tuple[str, int],
    vectors_dir: Path, tmp_path: Path,
) -> None:  # fmt: skip
    cluster, namespace = node_cluster, node_namespace
    install_crds(cluster.kubeconfig)
    keyspace = f"reads_{namespace.replace('-', '_')}"
    host, port = cassandra_address
    operator = start_operator(cluster.kubeconfig, namespace, tmp_path / "operator.log")
    try:
        with host_relay(node_gateway(cluster), f"{host}:{port}") as relayed:
            relay_host, relay_port = relayed.rsplit(":", 1)

            def explain() -> str:
                pods = kubectl(cluster.kubeconfig, "-n", namespace, "get", "pods", "-o", "wide",
                               check=False).stdout  # fmt: skip
                api_pods = "app.kubernetes.io/component=api"
                logs = kubectl(cluster.kubeconfig, "-n", namespace, "logs", "-l", api_pods,
                               "--tail=30", check=False)  # fmt: skip
                return f"{pods}\n{logs.stdout}{logs.stderr}\n{operator.output()[-3000:]}"

            # The operator (on the host) and the API's pods reach Cassandra at the same address:
            # the relay on the node's IP.
            document = {
                "apiVersion": "chainloom.io/v1alpha1",
                "kind": "BackendTable",
                "metadata": {"name": "ledger"},
                "spec": {
                    "backend": "cassandra",
                    "cassandra": {"hosts": [relay_host], "port": int(relay_port),
                                  "keyspace": keyspace, "replication_factor": 1},
                    "api": {"image": NODE_IMAGE, "image_pull_policy": "Never", "replicas": 1,
                            "placement": {"node_selector": dict(ON_THE_NODE)}},
                },
            }  # fmt: skip
            kubectl(cluster.kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                    stdin=yaml.safe_dump(document))  # fmt: skip

            def status() -> dict[str, Any]:
                found = kubectl_json(cluster.kubeconfig, "-n", namespace, "get", "btable",
                                     "ledger")  # fmt: skip
                return dict(found.get("status") or {})

            wait_explained(lambda: len(status().get("tables") or ()) == len(TABLE_NAMES),
                           timeout=420, every=2, what="the keyspace's tables",
                           explain=explain)  # fmt: skip
            config = DatabaseSettings(type="cassandra", cassandra=CassandraSettings(
                hosts=(host,), port=port, keyspace=keyspace, replication_factor=1))  # fmt: skip
            load(config, make_dump(vectors_dir, tmp_path / "ledgers.jsonl"))

            def serving() -> dict[str, Any] | None:
                found = status()
                ready = [c for c in found.get("conditions", []) if c["type"] == "Ready"]
                good = found.get("apiReady") == "1/1" and ready and ready[0]["status"] == "True"
                return found if good else None

            wait_explained(serving, what="apiReady 1/1", explain=explain)
            base = f"http://ledger-api.{namespace}.svc.cluster.local:51234/"
            command = ["python3", "-c", LEDGER_CLIENT, base, json.dumps(LEDGER_CALLS)]
            logs = run_pod(cluster, namespace, "client", command)
            answers = json.loads(logs.strip().splitlines()[-1])
            assert answers[0]["ledger_index_min"] == FIRST
            assert answers[0]["ledger_index_max"] == FIRST + LEDGERS
            assert answers == _host_answers(config)
    finally:
        operator.stop()
        drop_keyspace(cassandra_address, keyspace)
