"""A component that crashed comes back, with ``chainloom-dev stack up``, where its clients
expect it.

In a private run directory (never the session's stack): Redis and the Bigtable emulator are
started, killed with SIGKILL, and started again. Each must listen on the port it had (clients
configured with the old address reconnect), and Redis must still hold what it acknowledged
before the kill (its append-only file lives in the run directory) and keep its fsync policy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from chainloom_dev.stack import _process


def _chainloom_dev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chainloom_dev", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _state(run: Path) -> dict[str, dict[str, object]]:
    state: dict[str, dict[str, object]] = json.loads((run / "state.json").read_text())
    return state


def _sigkill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _process.alive(pid)


def test_a_crashed_component_restarts_on_its_port_and_redis_keeps_its_data(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    env = {**os.environ, "CHAINLOOM_RUN": str(run)}
    for variable in ("CHAINLOOM_REDIS_PORT", "CHAINLOOM_BIGTABLE_PORT", "CHAINLOOM_REDIS_FSYNC"):
        env.pop(variable, None)
    up = _chainloom_dev(env, "stack", "up", "--only", "redis,bigtable", "--redis-fsync", "always")
    assert up.returncode == 0, up.stderr
    try:
        before = _state(run)
        extra = before["redis"]["extra"]
        assert isinstance(extra, dict)
        assert (extra["appendfsync"], extra["data"]) == ("always", str(run / "redis"))
        client = redis.Redis.from_url(f"redis://{before['redis']['address']}/3")
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        client.mset({f"transfer:{i}": i for i in range(500)})
        client.close()

        for name in ("redis", "bigtable"):
            pid = before[name]["pid"]
            assert isinstance(pid, int)
            _sigkill(pid)
        down = _chainloom_dev(env, "stack", "status", "--json")
        assert down.returncode == 1
        details = {row["name"]: row["detail"] for row in json.loads(down.stdout)}
        assert details == dict.fromkeys(("redis", "bigtable"), "process is not running")

        again = _chainloom_dev(env, "stack", "up", "--only", "redis,bigtable")
        assert again.returncode == 0, again.stderr
        after = _state(run)
        for name in ("redis", "bigtable"):
            assert after[name]["address"] == before[name]["address"], name
            assert after[name]["pid"] != before[name]["pid"], name
        assert after["redis"]["extra"]["appendfsync"] == "always"  # type: ignore[index]
        # The TLS port comes back too, with the same test CA and ACL password.
        assert after["redis"]["extra"] == before["redis"]["extra"]
        client = redis.Redis.from_url(f"redis://{after['redis']['address']}/3")
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        assert client.dbsize() == 500
        assert client.get("transfer:499") == b"499"
        client.close()
        assert _chainloom_dev(env, "stack", "status").returncode == 0
    finally:
        stopped = _chainloom_dev(env, "stack", "down")
    assert stopped.returncode == 0, stopped.stderr


@pytest.mark.last  # etcd: built beside the tiers by scripts/test
def test_cassandra_and_etcd_restart_on_their_ports_with_their_data(tmp_path: Path) -> None:
    """The stores that keep data for other components come back with it after a SIGKILL: a
    keyspace in Cassandra, a key in etcd (the API server's objects)."""
    import base64

    import httpx
    from cassandra.cluster import Cluster

    run = tmp_path / "run"
    env = {**os.environ, "CHAINLOOM_RUN": str(run)}
    for variable in ("CHAINLOOM_CASSANDRA_PORT", "CHAINLOOM_ETCD_PORT"):
        env.pop(variable, None)
    up = _chainloom_dev(env, "stack", "up", "--only", "cassandra,etcd")
    assert up.returncode == 0, up.stderr

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    def cql(address: object, statement: str) -> list[tuple[object, ...]]:
        host, port = str(address).rsplit(":", 1)
        with Cluster([host], port=int(port)) as cluster, cluster.connect() as session:
            return list(session.execute(statement))

    try:
        before = _state(run)
        cql(
            before["cassandra"]["address"],
            "CREATE KEYSPACE kept WITH replication = {'class': 'SimpleStrategy', "
            "'replication_factor': 1}",
        )
        etcd = before["etcd"]["extra"]["url"]  # type: ignore[index]
        put = httpx.post(f"{etcd}/v3/kv/put", json={"key": b64("kept"), "value": b64("yes")})
        assert put.status_code == 200, put.text

        for name in ("cassandra", "etcd"):
            pid = before[name]["pid"]
            assert isinstance(pid, int)
            _sigkill(pid)
        again = _chainloom_dev(env, "stack", "up", "--only", "cassandra,etcd")
        assert again.returncode == 0, again.stderr
        after = _state(run)
        for name in ("cassandra", "etcd"):
            assert after[name]["address"] == before[name]["address"], name
            assert after[name]["extra"] == before[name]["extra"], name
        rows = cql(
            after["cassandra"]["address"],
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'kept'",
        )
        assert len(rows) == 1
        got = httpx.post(f"{etcd}/v3/kv/range", json={"key": b64("kept")}).json()
        assert [base64.b64decode(kv["value"]) for kv in got["kvs"]] == [b"yes"]
    finally:
        stopped = _chainloom_dev(env, "stack", "down")
    assert stopped.returncode == 0, stopped.stderr
