"""Fixtures shared by every tier.

* Test vectors come from ``../shared/vectors`` (or ``$CHAINLOOM_VECTORS``); tests that need them
  skip with a clear message where they are absent, and fail instead when
  ``CHAINLOOM_REQUIRE_VECTORS=1`` (as ``.ci/run`` sets, since CI has them).
* Real servers come from the local stack (:mod:`chainloom_dev.stack`). A session starts only the
  components its tests ask for, reuses any a developer already started with
  ``chainloom-dev stack up``, and stops only what it started itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainloom_dev.stack import manager
from chainloom_dev.stack._model import Running

REPO_ROOT = Path(__file__).resolve().parent.parent


SETTINGS_ENV = re.compile(r"CHAINLOOM_[A-Z0-9_]+__[A-Z0-9_]+")
"""Environment names of nested settings (``CHAINLOOM_REDIS__URL``, ...)."""


def pytest_configure(config: pytest.Config) -> None:
    """Drop settings that ``eval "$(chainloom-dev stack env)"`` exported into this shell.

    The environment outranks a settings file, so a ``CHAINLOOM_REDIS__URL`` left in the shell
    would silently redirect every command a test starts with its own settings file. Tests name
    their servers through fixtures (``redis_url``, ``bigtable_emulator``, ...) instead.
    """
    for name in [n for n in os.environ if SETTINGS_ENV.fullmatch(n)]:
        del os.environ[name]


LAST = frozenset({"kubeconfig", "evm_rpc", "solcjs"})
"""Fixtures of the stack's slowest builds (the Kubernetes control plane, geth, solcjs). The
integration tests that use one, and the tests marked ``last``, run after the other integration
and unit tests, in their own order: ``scripts/test`` builds those parts beside those tiers, and
these tests wait for them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO_ROOT / "tests").parts
        if parts and parts[0] in ("integration", "cluster"):
            item.add_marker(getattr(pytest.mark, parts[0]))
        if "node_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.node)
    items.sort(key=_runs_last)


def _runs_last(item: pytest.Item) -> bool:
    if item.get_closest_marker("last") is not None:
        return True
    if item.get_closest_marker("integration") is None:
        return False
    return not LAST.isdisjoint(getattr(item, "fixturenames", ()))


# --------------------------------------------------------------------------------------------
# Vectors


def _vectors_dir() -> Path:
    configured = os.environ.get("CHAINLOOM_VECTORS")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "vectors"


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """The directory of the shared test vectors (skips, or fails in CI, when absent)."""
    directory = _vectors_dir()
    if not directory.is_dir():
        message = (
            f"test vectors not found at {directory}; set CHAINLOOM_VECTORS to the directory "
            "holding vaa_vectors.json and xrpl_vectors.json"
        )
        if os.environ.get("CHAINLOOM_REQUIRE_VECTORS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return directory


def _load_vectors(directory: Path, name: str) -> Any:
    path = directory / name
    if not path.exists():
        message = f"{path} is missing"
        if os.environ.get("CHAINLOOM_REQUIRE_VECTORS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def vaa_vectors(vectors_dir: Path) -> Any:
    """The parsed ``vaa_vectors.json``."""
    return _load_vectors(vectors_dir, "vaa_vectors.json")


@pytest.fixture(scope="session")
def xrpl_vectors(vectors_dir: Path) -> Any:
    """The parsed ``xrpl_vectors.json``."""
    return _load_vectors(vectors_dir, "xrpl_vectors.json")


# --------------------------------------------------------------------------------------------
# The local stack


class StackForTests:
    """Starts stack components on demand for one pytest session."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def require(self, *names: str) -> dict[str, Running]:
        before = manager.load_state()
        running = manager.up(names)
        self.started += [n for n in running if n not in before or before[n].pid != running[n].pid]
        return running

    def close(self) -> None:
        if self.started and os.environ.get("CHAINLOOM_KEEP_STACK") != "1":
            manager.down(self.started)


@pytest.fixture(scope="session")
def local_stack() -> Iterator[StackForTests]:
    """Start components with ``local_stack.require("redis", ...)``."""
    stack = StackForTests()
    yield stack
    stack.close()


@contextlib.contextmanager
def _lease_redis_db() -> Iterator[int]:
    """An exclusive lease (across processes) on one of the databases 1..63."""
    from chainloom_dev.stack._paths import run_dir

    lock_dir = run_dir() / "redis-db-leases"
    lock_dir.mkdir(exist_ok=True)
    while True:
        for db in range(1, 64):
            handle = (lock_dir / f"{db}.lock").open("w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield db
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        time.sleep(0.1)


@pytest.fixture
def redis_url(local_stack: StackForTests) -> Iterator[str]:
    """A URL of an empty database of the real Redis server, leased to this test alone."""
    import redis

    running = local_stack.require("redis")["redis"]
    with _lease_redis_db() as db:
        url = f"redis://{running.address}/{db}"
        client = redis.Redis.from_url(url)
        client.flushdb()
        client.close()
        yield url


@pytest.fixture
def bigtable_emulator(local_stack: StackForTests, monkeypatch: pytest.MonkeyPatch) -> str:
    """The emulator's address, exported as BIGTABLE_EMULATOR_HOST for this test."""
    running = local_stack.require("bigtable")["bigtable"]
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", running.address)
    return running.address


@pytest.fixture
def bigtable_table_name(bigtable_emulator: str) -> str:
    """A table name no other test uses (the emulator keeps tables until it stops)."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def cassandra_address(local_stack: StackForTests) -> tuple[str, int]:
    """(host, port) of the real Cassandra node."""
    host, port = local_stack.require("cassandra")["cassandra"].address.rsplit(":", 1)
    return host, int(port)


@pytest.fixture
def cassandra_keyspace(cassandra_address: tuple[str, int]) -> Iterator[str]:
    """A fresh keyspace (replication factor 1), dropped after the test."""
    from cassandra.cluster import Cluster

    host, port = cassandra_address
    name = f"t_{uuid.uuid4().hex[:12]}"
    cluster = Cluster([host], port=port, protocol_version=5)
    session = cluster.connect()
    session.execute(
        f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', "
        "'replication_factor': 1}",
        timeout=120,  # schema changes can be slow on a busy 2-core machine
    )
    try:
        yield name
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=120)
        cluster.shutdown()


@pytest.fixture(scope="session")
def kubeconfig(local_stack: StackForTests) -> str:
    """Path of the kubeconfig of the real API server."""
    return local_stack.require("kubernetes")["kube-apiserver"].extra["kubeconfig"]


@pytest.fixture
def kube_namespace(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh namespace on the real API server, KUBECONFIG exported for the test."""
    from lightkube import Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import Namespace

    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    name = f"t-{uuid.uuid4().hex[:10]}"
    with Client(KubeConfig.from_file(kubeconfig)) as client:
        client.create(Namespace(metadata=ObjectMeta(name=name)))
        try:
            yield name
        finally:
            client.delete(Namespace, name)


# --------------------------------------------------------------------------------------------
# The real node


class NodeCluster:
    """A stack with a real node (``stack up --node``): its kubeconfig and run directory."""

    def __init__(self, run_dir: Path, state: dict[str, Running]) -> None:
        self.run_dir = run_dir
        self.kubeconfig = state["kube-apiserver"].extra["kubeconfig"]
        self.kubectl = state["kubectl"].address

    def kubectl_run(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        """Run kubectl against the node's API server; fail the test on a non-zero exit."""
        import subprocess

        result = subprocess.run(
            [self.kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout


def _state_of(run_dir: Path) -> dict[str, Running]:
    path = run_dir / "state.json"
    if not path.exists():
        return {}
    return {name: Running(**entry) for name, entry in json.loads(path.read_text()).items()}


def _current_image(state: dict[str, Running]) -> None:
    """A running node's ``chainloom:dev`` rebuilt and imported when this checkout's sources
    differ from the ones it was built from (a shared stack keeps the image of whichever
    checkout last built it); nothing is done when they are the same."""
    from chainloom_dev.stack.components.image import PLAIN_RECIPE, source_root

    built = state.get(PLAIN_RECIPE.name)
    if built is not None and built.extra.get("inputs") != PLAIN_RECIPE.input_hash(source_root()):
        manager.refresh(PLAIN_RECIPE.name)


@pytest.fixture(scope="session")
def node_cluster() -> Iterator[NodeCluster]:
    """A stack whose pods run real containers on a real node.

    Uses the node of the current run directory when ``chainloom-dev stack up --node`` started it;
    else, with ``CHAINLOOM_NODE=1`` (``.ci/run`` sets it), starts one in a private run
    directory (its own control plane: the node's host-wide parts must not meet another
    stack's) and takes it down afterwards, failing if anything of it is left on the machine.
    Otherwise the node tests skip.
    """
    import shutil
    import subprocess
    import sys
    import tempfile

    from chainloom_dev.stack._paths import run_dir
    from chainloom_dev.stack.components.node import leftovers

    state = manager.load_state()
    if "kubelet" in state and manager.status(["kubelet"])[0].healthy:
        _current_image(state)
        yield NodeCluster(run_dir(), manager.load_state())
        return
    if os.environ.get("CHAINLOOM_NODE") != "1":
        pytest.skip("no node is up: run 'chainloom-dev stack up --node' or set CHAINLOOM_NODE=1")
    if os.geteuid() != 0:
        pytest.skip("the node needs root (containerd, network namespaces, iptables)")
    private = Path(tempfile.mkdtemp(prefix="chainloom-node-"))
    env = {**os.environ, "CHAINLOOM_RUN": str(private)}
    command = [sys.executable, "-m", "chainloom_dev", "stack"]
    started = subprocess.run(
        [*command, "up", "--only", "node"], env=env, capture_output=True, text=True, check=False
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield NodeCluster(private, _state_of(private))
    finally:
        stopped = subprocess.run(
            [*command, "down"], env=env, capture_output=True, text=True, check=False
        )
        left = leftovers(private)
        shutil.rmtree(private, ignore_errors=True)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert left == [], f"stack down left these behind: {left}"


@pytest.fixture
def node_namespace(node_cluster: NodeCluster) -> Iterator[str]:
    """A fresh namespace on the node's API server, deleted (with its pods) after the test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    node_cluster.kubectl_run("create", "namespace", name)
    try:
        yield name
    finally:
        node_cluster.kubectl_run("delete", "namespace", name, "--wait=false")


# --------------------------------------------------------------------------------------------
# Spark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession (local[2]) for the whole run: starting Spark costs seconds.

    Jobs run in-process find it as the active session and leave it running. Skips when
    pyspark (the ``chainloom[spark]`` extra, part of ``dev``) is not installed.
    """
    import sys

    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("chainloom-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# --------------------------------------------------------------------------------------------
# Secured stores (private run directories: the shared stack is never reconfigured)


@pytest.fixture(scope="session")
def secured_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Redis serving TLS (the stack's test CA) with the ACL user ``chainloom``."""
    from tests.secured_support import private_stack

    with private_stack(tmp_path_factory.mktemp("secured-redis") / "run", "redis") as stack:
        yield stack


@pytest.fixture(scope="session")
def secured_cassandra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Cassandra with PasswordAuthenticator and TLS-only clients (``cassandra-secured``)."""
    from tests.secured_support import private_stack

    run = tmp_path_factory.mktemp("secured-cassandra") / "run"
    with private_stack(run, "cassandra-secured") as stack:
        yield stack
