"""`chainloom-dev stack` end to end, in a private run directory beside the session's stack.

Proves the command-line contract: ``up`` reuses the cache (no fetching or building the second
time), ``status`` checks every component with a round trip, ``env`` prints the exports, and
``down`` leaves no process of ours running.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from chainloom_dev.stack import _process

pytestmark = pytest.mark.last  # the Kubernetes tier: built beside the tiers by scripts/test

COMPONENTS = "redis,bigtable,cassandra,kubernetes"


def _chainloom_dev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chainloom_dev", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_up_status_env_down(tmp_path: Path) -> None:
    env = {**os.environ, "CHAINLOOM_RUN": str(tmp_path / "run"), "COLUMNS": "200"}
    for variable in ("CHAINLOOM_REDIS_PORT", "CHAINLOOM_CASSANDRA_PORT", "CHAINLOOM_ETCD_PORT"):
        env.pop(variable, None)
    up = _chainloom_dev(env, "stack", "up", "--only", COMPONENTS)
    assert up.returncode == 0, up.stderr
    for word in ("fetching", "building", "compiling", "downloading"):
        assert word not in up.stderr, f"second install step ran: {up.stderr}"
    pids: list[int] = []
    try:
        status = _chainloom_dev(env, "stack", "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        rows = {row["name"]: row for row in json.loads(status.stdout)}
        assert set(rows) == {
            "redis",
            "bigtable",
            "cassandra",
            "kubectl",
            "helm",
            "etcd",
            "kube-apiserver",
        }
        assert all(row["healthy"] for row in rows.values()), rows
        assert rows["cassandra"]["version"].startswith("5.0.")
        assert rows["kube-apiserver"]["version"].startswith("v1.")
        pids = [row["pid"] for row in rows.values() if row["pid"]]
        assert len(pids) == 5

        exports = _chainloom_dev(env, "stack", "env").stdout
        assert f"BIGTABLE_EMULATOR_HOST={rows['bigtable']['address']}" in exports
        cassandra_port = rows["cassandra"]["address"].rsplit(":", 1)[1]
        assert f"CHAINLOOM_DATABASE__CASSANDRA__PORT={cassandra_port}" in exports
        # With the exports and no flags, the ledger reaches this stack's node: the server
        # itself answers that the (never loaded) keyspace does not exist.
        exported = dict(
            shlex.split(line.removeprefix("export "))[0].split("=", 1)
            for line in exports.splitlines()
            if not line.startswith("export PATH=")
        )
        ledger = subprocess.run(
            [sys.executable, "-m", "chainloom.cli", "ledger", "range", "--backend", "cassandra"],
            env={**env, **exported},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert ledger.returncode == 2, ledger.stdout + ledger.stderr
        assert f"at 127.0.0.1:{cassandra_port}" in ledger.stderr
        assert "keyspace chainloom_ledger does not exist" in ledger.stderr
        assert "export KUBECONFIG=" in exports
        assert "export PATH=" in exports
    finally:
        down = _chainloom_dev(env, "stack", "down")
    assert down.returncode == 0, down.stderr
    assert not [pid for pid in pids if _process.alive(pid)]
    assert json.loads((tmp_path / "run" / "state.json").read_text()) == {}
    after = _chainloom_dev(env, "stack", "status")
    assert after.returncode == 1
    assert "nothing is running" in after.stdout
