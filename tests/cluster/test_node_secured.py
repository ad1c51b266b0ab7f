"""Secured stores used from the real node with credentials from Secrets (issue 24, "Done when").

A Cassandra that asks for a login and speaks TLS only (``cassandra-secured``) and a Redis that
serves TLS with an ACL user (both private to the test session, ``tests/secured_support.py``)
are reached by pods on the node through relays on the node's IP. In one namespace:

* a BackendTable ``ledger`` on the secured Cassandra with its ledger API (``spec.api``, the
  Cassandra login mounted from a Secret) and a feed on the secured Redis (``spec.feed``: ACL
  password and CA from Secrets);
* an IngestPipeline following the replay server (rippled's gRPC API) into that keyspace: the
  ETL logs in with the same Secret and announces each ledger on the feed;
* a batch IngestPipeline: the spark-operator runs a ``ledger-load`` SparkApplication whose
  driver and executor log in to a second keyspace (``archive``) with the Secret as files;
* a RelayerPool whose relay tables live in the secured Redis (URL, ACL password, CA).

A client pod subscribes to the ledger stream through the API's Service; the followed history
and the Spark load each equal a clean load of their input; the relayer redeems every transfer
exactly once. The Redis ``default`` user is switched off for the run, so every pod's connection
is the ACL user's; Cassandra accepts only logged-in TLS clients. Neither password appears in
any pod's log, the resources' status, the rendered children or the events.

The test certificates name 127.0.0.1, not the node's IP the pods dial, so the pods' settings
turn the host-name check off (``check_hostname: false``); the host's own clients keep it on.
The operator runs on the host and reads the same files at the same paths the Secrets are
mounted at in the pods.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import redis
import yaml

from chainloom.eventstore import bigtable as store
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import TableMissingError
from chainloom.eventstore.service import locate
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.service import make_backend
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from chainloom.settings import BigtableSettings
from chainloom.wormhole import VAA
from chainloom_dev.net import free_port
from chainloom_dev.sim.sim_chains import RedisLedgerAdapter, SimChainRules
from chainloom_operator.models import FeedRedisRef
from chainloom_spark.manifest import render_driver_access
from chainloom_spark.settings import KubernetesSettings, SparkJobSettings
from tests.cluster.node_support import (
    NODE_IMAGE,
    ON_THE_NODE,
    free_port_on,
    host_relay,
    node_gateway,
    run_pod,
    tilt_devnet_quorum,
    wait_explained,
)
from tests.cluster.spark_support import (
    INPUT_MOUNT,
    ensure_spark_operator,
    exported_emulator,
    import_spark_image,
    label_namespace,
    node_conf,
)
from tests.conftest import NodeCluster, StackForTests
from tests.integration.relayer.relay_support import transfer_payload
from tests.ledger_api_support import (
    FIRST,
    LEDGERS,
    assert_equals_clean_load,
    generate_live_dump,
    make_dump,
    start_replay,
    stop_replay,
)
from tests.operator_support import (
    install_crds_with_spark,
    kubectl,
    kubectl_json,
    start_operator,
)
from tests.secured_support import PrivateStack

FOLLOWED = 60
"""Ledgers the replay server releases, one a second (the client subscribes meanwhile)."""
STREAMED = 5
"""``ledgerClosed`` messages the client pod waits for."""
TRANSFERS = 6
"""Transfers the relayer redeems on chain 2."""
LOGIN = "cassandra-login"
"""The Secret of the Cassandra password and CA (keys ``password`` and ``ca.pem``)."""


def _redis_client(stack: PrivateStack) -> redis.Redis:
    """The secured Redis as its ACL user, from the host (host name checked)."""
    extra = stack.extra("redis")
    return redis.Redis(host="127.0.0.1", port=int(extra["tls_port"]), db=0,
                       username=extra["acl_user"], password=stack.password("redis"),
                       ssl=True, ssl_ca_certs=extra["ca_file"])  # fmt: skip


def _cassandra_spec(stack: PrivateStack, creds: Path, relayed: str, keyspace: str
                    ) -> dict[str, Any]:  # fmt: skip
    """The BackendTables' cassandra settings: the relay, the login files at ``creds``."""
    host, port = relayed.rsplit(":", 1)
    return {"hosts": [host], "port": int(port), "keyspace": keyspace,
            "replication_strategy": "NetworkTopologyStrategy",
            "datacenter_replication": {"datacenter1": 1}, "local_datacenter": "datacenter1",
            "username": stack.extra("cassandra-secured")["username"],
            "password_file": str(creds / "password"),
            "tls": {"enabled": True, "ca_file": str(creds / "ca.pem"),
                    "check_hostname": False}}  # fmt: skip


def _reader(stack: PrivateStack, creds: Path, keyspace: str) -> BackendInterface:
    """The keyspace read from the host, straight to the server (host name checked)."""
    host, port = stack.address("cassandra-secured")
    return make_backend({"type": "cassandra", "read_only": True, "cassandra": {
        "hosts": [host], "port": port, "keyspace": keyspace, "local_datacenter": "datacenter1",
        "username": stack.extra("cassandra-secured")["username"],
        "password_file": str(creds / "password"),
        "tls": {"enabled": True, "ca_file": str(creds / "ca.pem")}}})  # fmt: skip


def _redis_access(relayed: str) -> dict[str, Any]:
    """A RedisAccess of the secured Redis through its relay: ACL password and CA from Secrets."""
    return {"url": f"rediss://{relayed}/0", "username": "chainloom",
            "password_ref": {"name": "redis-login", "key": "password"},
            "tls": {"ca_ref": {"name": "redis-ca", "key": "ca.pem"},
                    "check_hostname": False}}  # fmt: skip


@dataclass(frozen=True)
class Placed:
    """Where the resources' pods find what they use (addresses as pods dial them)."""

    namespace: str
    cassandra: Callable[[str], dict[str, Any]]
    """The cassandra settings of a keyspace (through the relay, the login files)."""
    creds_dir: str
    """Where the login files are (on the host) and the Secret is mounted (in the pods)."""
    redis_relay: str
    emulator_relay: str
    events_table: str
    rippled: str
    spy: str
    spark_image: str
    input_dir: Path


def _documents(placed: Placed) -> list[dict[str, Any]]:
    """The three BackendTables, the two IngestPipelines and the RelayerPool."""
    namespace, cassandra, redis_relay = placed.namespace, placed.cassandra, placed.redis_relay
    mounts = [{"secret": LOGIN, "mount_path": placed.creds_dir}]
    creds_dir = placed.creds_dir
    events = {"backend": "bigtable", "bigtable": {"table": placed.events_table},
              "api": {"image": NODE_IMAGE, "image_pull_policy": "Never", "replicas": 1,
                      "placement": {"node_selector": dict(ON_THE_NODE)},
                      "env": {"BIGTABLE_EMULATOR_HOST": placed.emulator_relay}},
              "feed": _redis_access(redis_relay)}  # fmt: skip
    ledger = {"backend": "cassandra", "deletion_policy": "Retain",
              "cassandra": cassandra(f"follow_{namespace[2:]}"),
              "api": {"image": NODE_IMAGE, "image_pull_policy": "Never", "replicas": 1,
                      "placement": {"node_selector": dict(ON_THE_NODE)},
                      "secret_mounts": mounts},
              "feed": _redis_access(redis_relay)}  # fmt: skip
    archive = {"backend": "cassandra", "deletion_policy": "Retain",
               "cassandra": cassandra(f"archive_{namespace[2:]}")}  # fmt: skip
    follow = {"mode": "streaming", "sink": "ledger",
              "ledger": {"grpc": placed.rippled, "start": FIRST, "replicas": 1,
                         "poll_interval": 0.2, "image": NODE_IMAGE, "image_pull_policy": "Never",
                         "secret_mounts": mounts,
                         "placement": {"node_selector": dict(ON_THE_NODE)}}}  # fmt: skip
    conf = node_conf(placed.input_dir)
    load = {"mode": "batch", "sink": "archive",
            "batch": {"job": "ledger-load", "input": f"{INPUT_MOUNT}/ledgers.jsonl",
                      "arguments": ["--batch", "2"],
                      "spark": {"shuffle_partitions": 2, "conf": conf},
                      "secrets": {"files": [{"name": LOGIN, "path": creds_dir}]},
                      "resources": {"image": placed.spark_image, "image_pull_policy": "Never",
                                    "driver_memory": "768m", "executor_instances": 1,
                                    "executor_cores": 1, "executor_memory": "768m"}}}  # fmt: skip
    pool = {"image": NODE_IMAGE, "image_pull_policy": "Never", "spy_address": placed.spy,
            "redis": _redis_access(redis_relay),
            "validation": {"guardian_sets": {"source": "devnet"}, "known_emitters": ["devnet"],
                           "tokens": [{"chain": "*", "address": "*", "min_fee": 0}]},
            "listener": {"replicas": 1, "rest": {"port": 4201}},
            "worker": {"adapter": "redis-sim", "batch": 4, "lease_ttl": 5, "reap_every": 2,
                       "recheck": 0.5},
            "placement": {"node_selector": dict(ON_THE_NODE)},
            "chains": [{"chain": 2, "wallets": [{"name": "hot",
                                                 "secret_ref": {"name": "wallet"}}]}]}  # fmt: skip

    def document(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "chainloom.io/v1alpha1", "kind": kind,
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}  # fmt: skip

    return [document("BackendTable", "events", events),
            document("BackendTable", "ledger", ledger),
            document("BackendTable", "archive", archive),
            document("IngestPipeline", "follow", follow),
            document("IngestPipeline", "load", load),
            document("RelayerPool", "secured", pool)]  # fmt: skip


CLIENT = """
import json, sys, time
from websockets.sync.client import connect
url, wanted = sys.argv[1], int(sys.argv[2])
for attempt in range(90):  # the Service may take a moment to reach the pod from here
    try:
        socket = connect(url, open_timeout=5)
        break
    except Exception as error:
        last = error
        time.sleep(1)
else:
    sys.exit(f"no answer from {url}: {last!r}")
with socket:
    socket.send(json.dumps({"id": 1, "command": "subscribe", "streams": ["ledger"]}))
    answer = json.loads(socket.recv(timeout=30))
    closed = []
    while len(closed) < wanted:
        message = json.loads(socket.recv(timeout=60))
        if message.get("type") == "ledgerClosed":
            closed.append(message["ledger_index"])
print(json.dumps({"answer": answer, "closed": closed}))
"""


CHANNEL = f"{FeedRedisRef.model_fields['key_prefix'].default}:ledger:committed"
"""The ledger feed's channel (the default prefix)."""
EVENTS_CHANNEL = f"{FeedRedisRef.model_fields['key_prefix'].default}:eventstore:vaas"
"""The events feed's channel."""


def _feed_listener(client: redis.Redis, heard: list[bytes]) -> threading.Thread:
    """Collect what is published on the ledger feed's channel (from the host, as the ACL
    user) until the client is closed."""
    channel = CHANNEL
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(channel)

    def listen() -> None:
        try:
            for message in pubsub.listen():
                heard.append(message["data"])
        except (redis.ConnectionError, ValueError, AttributeError):  # closed under it
            return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    return thread


def _transfers() -> list[VAA]:
    guardians = tilt_devnet_quorum()
    return [guardians.sign(emitter_chain=4, emitter_address=guardians.token_bridge_emitter,
                           sequence=2000 + i, payload=transfer_payload(target_chain=2),
                           signers=range(13))
            for i in range(TRANSFERS)]  # fmt: skip


def _everything_shown(kubeconfig: str, namespace: str, operator_log: str) -> str:
    """Every pod's log (all containers, previous runs too), the resources and their rendered
    children as YAML, and the namespace's events."""
    parts = [operator_log]
    pods = kubectl_json(kubeconfig, "-n", namespace, "get", "pods")["items"]
    for pod in pods:
        name = pod["metadata"]["name"]
        for flag in ("", "--previous"):
            found = kubectl(kubeconfig, "-n", namespace, "logs", name, "--all-containers",
                            *([flag] if flag else []), check=False)  # fmt: skip
            parts.append(found.stdout)
    kinds = ("btable,ipl,rpool,deployments,statefulsets,services,configmaps,"
             "sparkapplications,pods,events")  # fmt: skip
    parts.append(kubectl(kubeconfig, "-n", namespace, "get", kinds, "-o", "yaml").stdout)
    return "\n".join(parts)


@pytest.fixture(scope="module")
def emulator(local_stack: StackForTests) -> Iterator[str]:
    with exported_emulator(local_stack) as address:
        yield address


@pytest.fixture(scope="module")
def run(
    node_cluster: NodeCluster, secured_cassandra: PrivateStack, secured_redis: PrivateStack,
    emulator: str, vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Everything above applied in a namespace of its own and followed to its end."""
    kubeconfig = node_cluster.kubeconfig
    spark_image = import_spark_image(node_cluster)
    ensure_spark_operator(node_cluster)
    install_crds_with_spark(kubeconfig)
    namespace = f"s-{uuid.uuid4().hex[:10]}"
    node_cluster.kubectl_run("create", "namespace", namespace)
    label_namespace(kubeconfig, namespace)
    work = tmp_path_factory.mktemp("secured-node")
    # The login files: the operator (on the host) reads them here; the pods read the Secret
    # made of them, mounted at the same directory.
    creds = Path(tempfile.mkdtemp(prefix="chainloom-secured-")) / "cassandra"
    creds.mkdir()
    cassandra_extra = secured_cassandra.extra("cassandra-secured")
    shutil.copy(cassandra_extra["password_file"], creds / "password")
    shutil.copy(cassandra_extra["ca_file"], creds / "ca.pem")
    redis_extra = secured_redis.extra("redis")
    cassandra_password = secured_cassandra.password("cassandra-secured")
    redis_password = secured_redis.password("redis")
    wallet_key = os.urandom(32).hex()
    for secret in (
        [LOGIN, f"--from-file=password={creds / 'password'}",
         f"--from-file=ca.pem={creds / 'ca.pem'}"],
        ["redis-login", f"--from-file=password={redis_extra['password_file']}"],
        ["redis-ca", f"--from-file=ca.pem={redis_extra['ca_file']}"],
        ["wallet", f"--from-literal=key={wallet_key}"],
    ):  # fmt: skip
        kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", *secret)
    # The Spark job's input, readable by the image's user through a hostPath volume.
    input_dir = Path(tempfile.mkdtemp(prefix="chainloom-secured-input-"))
    loaded = make_dump(vectors_dir, input_dir / "ledgers.jsonl")
    input_dir.chmod(0o755)
    loaded.chmod(0o644)
    followed = generate_live_dump(vectors_dir, work / "live.jsonl", FOLLOWED, seed=24)

    host_redis = _redis_client(secured_redis)
    host_redis.acl_setuser("default", enabled=False)  # every pod must log in as the ACL user
    heard: list[bytes] = []
    feed_client = _redis_client(secured_redis)  # kept: closing it would end the listener
    listener = _feed_listener(feed_client, heard)
    gateway = node_gateway(node_cluster)
    grpc_port, spy_port = free_port(), free_port_on(gateway)
    replay: subprocess.Popen[bytes] | None = None
    spy: subprocess.Popen[bytes] | None = None
    events_table = f"secured-{namespace}"
    located = locate(EventStoreSettings(bigtable=BigtableSettings(table=events_table)))
    operator = start_operator(kubeconfig, namespace, work / "operator.log",
                              env={"BIGTABLE_EMULATOR_HOST": emulator})  # fmt: skip
    try:
        with (
            host_relay(gateway, ":".join(map(str, secured_cassandra.address(
                "cassandra-secured")))) as cassandra_relay,
            host_relay(gateway, f"127.0.0.1:{redis_extra['tls_port']}") as redis_relay,
            host_relay(gateway, f"127.0.0.1:{grpc_port}") as rippled,
            host_relay(gateway, emulator) as emulator_relay,
        ):  # fmt: skip
            driver_access = render_driver_access(SparkJobSettings(
                kubernetes=KubernetesSettings(namespace=namespace)))  # fmt: skip
            documents = _documents(Placed(
                namespace, lambda keyspace: _cassandra_spec(secured_cassandra, creds,
                                                            cassandra_relay, keyspace),
                str(creds), redis_relay, emulator_relay, events_table, rippled,
                f"{gateway}:{spy_port}", spark_image, input_dir,
            ))  # fmt: skip
            kubectl(kubeconfig, "apply", "--server-side", "-f", "-",
                    stdin=yaml.safe_dump_all([*driver_access, *documents]))  # fmt: skip
            RedisLedgerAdapter.install(host_redis, 2, SimChainRules(confirm_after=0.5))
            tables = RelayTables(host_redis)

            def explain() -> str:
                listed = kubectl(kubeconfig, "-n", namespace, "get", "pods", "-o", "wide",
                                 check=False).stdout  # fmt: skip
                logs = kubectl(kubeconfig, "-n", namespace, "logs", "-l",
                               "app.kubernetes.io/name=chainloom", "--tail=15", "--prefix",
                               "--all-containers", check=False)  # fmt: skip
                statuses = kubectl(kubeconfig, "-n", namespace, "get", "btable,ipl,rpool", "-o",
                                   "jsonpath={range .items[*]}{.kind}/{.metadata.name}: "
                                   "{.status}{'\\n'}{end}", check=False).stdout  # fmt: skip
                return (f"{listed}\n{statuses}\n{logs.stdout}{logs.stderr}\n"
                        f"operator:\n{operator.output()[-3000:]}")  # fmt: skip

            def status(kind: str, name: str) -> dict[str, Any]:
                found = kubectl_json(kubeconfig, "-n", namespace, "get", kind, name)
                return dict(found.get("status") or {})

            def ready(kind: str, name: str) -> bool:
                conditions = status(kind, name).get("conditions") or []
                return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

            def apis_ready() -> bool:
                return all(status("btable", name).get("apiReady") == "1/1"
                           for name in ("ledger", "events"))  # fmt: skip

            wait_explained(apis_ready, timeout=600, every=2, what="both APIs ready",
                           explain=explain)  # fmt: skip
            wait_explained(lambda: ready("rpool", "secured"), timeout=300, every=2,
                           what="the RelayerPool Ready", explain=explain)  # fmt: skip

            # rippled and the spy start now: the client below subscribes while ledgers flow.
            replay = start_replay(followed, grpc_port, 1.0, subprocess.DEVNULL)
            env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
            spy = subprocess.Popen(
                [sys.executable, "-m", "chainloom_dev", "spy", "serve", "--listen",
                 f"{gateway}:{spy_port}", "--stdin", "--lossless", "--wait-for-subscribers",
                 "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=env,
            )  # fmt: skip
            assert spy.stdin is not None
            transfers = _transfers()
            spy.stdin.write(b"".join(v.to_bytes().hex().encode() + b"\n" for v in transfers))
            spy.stdin.flush()

            url = f"ws://ledger-api.{namespace}.svc.cluster.local:51234/"
            logs = run_pod(node_cluster, namespace, "client",
                           ["python3", "-c", CLIENT, url, str(STREAMED)])  # fmt: skip
            streamed = json.loads(logs.strip().splitlines()[-1])

            def clean(name: str) -> Path:
                directory = work / name
                directory.mkdir()
                return directory

            reader = _reader(secured_cassandra, creds, f"follow_{namespace[2:]}")

            def stored_max() -> int:
                found = reader.hard_fetch_ledger_range()
                return 0 if found is None else found.max_sequence

            try:
                wait_explained(lambda: stored_max() == FIRST + FOLLOWED, timeout=300, every=2,
                               what="the ETL at the dump's end", explain=explain)  # fmt: skip
                assert_equals_clean_load(reader, followed, clean("followed"), FIRST,
                                         FIRST + FOLLOWED)  # fmt: skip
            finally:
                reader.close()

            def completed() -> int:
                return int(tables.depths()[Table.COMPLETED].get(2, 0))

            wait_explained(lambda: completed() == TRANSFERS, timeout=300, every=1,
                           what="every transfer redeemed", explain=explain)  # fmt: skip
            wait_explained(lambda: status("ipl", "load").get("state") in ("COMPLETED", "FAILED"),
                           timeout=900, every=2, what="the Spark job to end",
                           explain=explain)  # fmt: skip
            archive = _reader(secured_cassandra, creds, f"archive_{namespace[2:]}")
            try:
                load_status = status("ipl", "load")
                assert load_status["state"] == "COMPLETED", explain()
                assert_equals_clean_load(archive, loaded, clean("archive"), FIRST,
                                         FIRST + LEDGERS)  # fmt: skip
            finally:
                archive.close()
            chain_state = RedisLedgerAdapter(host_redis, 2)
            yield {
                "namespace": namespace,
                "streamed": streamed,
                "heard": list(heard),
                "listening": dict(cast(list[Any], host_redis.pubsub_numsub(
                    CHANNEL, EVENTS_CHANNEL))),
                "submissions": chain_state.submission_counts(),
                "duplicates": chain_state.duplicate_attempts(),
                "expected": {vaa.digest_hex for vaa in transfers},
                "depths": tables.depths(),
                "load": load_status,
                "users": [c.get("user") for c in cast(list[Any], host_redis.client_list())],
                "shown": _everything_shown(kubeconfig, namespace, operator.output()),
                "secrets": (cassandra_password, redis_password, wallet_key),
            }  # fmt: skip
    finally:
        operator.stop()
        if replay is not None:
            stop_replay(replay)
        if spy is not None:
            assert spy.stdin is not None
            spy.stdin.close()
            spy.terminate()
            spy.wait(timeout=30)
        host_redis.acl_setuser("default", enabled=True)
        host_redis.close()
        feed_client.close()
        listener.join(timeout=5)
        node_cluster.kubectl_run("delete", "namespace", namespace, "--wait=false")
        shutil.rmtree(input_dir, ignore_errors=True)
        shutil.rmtree(creds.parent, ignore_errors=True)
        with contextlib.suppress(TableMissingError):
            store.drop_tables(located)


def test_a_client_pod_is_streamed_the_followed_ledgers_through_the_apis_service(
    run: dict[str, Any],
) -> None:
    closed = run["streamed"]["closed"]
    assert len(closed) == STREAMED
    assert closed == list(range(closed[0], closed[0] + STREAMED)), closed  # in order, each once
    assert closed[0] >= FIRST
    assert closed[-1] <= FIRST + FOLLOWED
    assert run["streamed"]["answer"]["status"] == "success", run["streamed"]["answer"]


def test_the_etl_announced_every_ledger_on_the_secured_feed(run: dict[str, Any]) -> None:
    # The feed announces the newest committed ledger (announcements that pile up coalesce).
    announced = [int(data) for data in run["heard"]]
    assert announced, "nothing was published on the feed"
    # Listening on the secured feed: the ledger API's pod and this test; the events API's pod.
    assert run["listening"] == {CHANNEL.encode(): 2, EVENTS_CHANNEL.encode(): 1}
    assert announced == sorted(set(announced))
    assert announced[0] >= FIRST
    assert announced[-1] == FIRST + FOLLOWED


def test_the_relayer_redeemed_every_transfer_once_through_the_secured_redis(
    run: dict[str, Any],
) -> None:
    assert run["submissions"] == dict.fromkeys(run["expected"], 1)
    assert run["duplicates"] == 0
    left = (Table.INCOMING, Table.IN_WORK, Table.FAILED)
    assert not any(run["depths"][table].get(2) for table in left), run["depths"]


def test_the_spark_job_logged_in_from_its_driver_and_executor(run: dict[str, Any]) -> None:
    # The archive keyspace equals a clean load (checked in the fixture); the job's counts.
    assert run["load"]["summary"]["ledgers"] == LEDGERS + 1, run["load"]
    assert run["load"]["executionAttempts"] == 1


def test_every_redis_connection_is_the_acl_users_and_no_secret_is_shown(
    run: dict[str, Any],
) -> None:
    assert set(run["users"]) == {"chainloom"}, run["users"]
    shown = run["shown"]
    assert "password_file: " in shown  # the ConfigMaps were read: they name the files only
    for secret in run["secrets"]:
        assert secret not in shown
