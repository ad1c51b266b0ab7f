"""``chainloom ledger follow`` on the real Cassandra: two replicas against a replay server that
releases ledgers like a live network; SIGKILL the writer mid-run, the standby takes over, and the
history equals a clean load of the same dump, every ledger committed exactly once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

import pytest

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.service import make_backend
from chainloom_dev.net import free_port
from tests.ledger_api_support import (
    FIRST,
    assert_equals_clean_load,
    generate_live_dump,
    start_replay,
    stop_replay,
)

LEDGERS = 40
LAST = FIRST + LEDGERS
_COMMITTED = re.compile(r"follower: committed ledger (\d+)")


def _wait(what: str, check: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _committed(log: Path) -> list[int]:
    return [int(m.group(1)) for m in _COMMITTED.finditer(log.read_text())]


def _status(port: int) -> dict[str, object]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as answer:
        found: dict[str, object] = json.loads(answer.read())
        return found


def _stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_the_standby_takes_over_from_a_killed_writer_and_the_history_equals_a_clean_load(
    vectors_dir: Path,
    tmp_path: Path,
    cassandra_address: tuple[str, int],
    cassandra_keyspace: str,
) -> None:
    dump = generate_live_dump(vectors_dir, tmp_path / "live.jsonl", LEDGERS, seed=9)
    host, port = cassandra_address
    grpc_port = free_port()
    replay = start_replay(dump, grpc_port, 0.4, subprocess.PIPE)
    command = [
        sys.executable, "-m", "chainloom.cli", "ledger", "follow",
        "--grpc", f"127.0.0.1:{grpc_port}", "--start", str(FIRST),
        "--fallback-seconds", "2", "--poll-interval", "0.1",
        "--backend", "cassandra", "--cassandra-hosts", f"{host}:{port}",
        "--keyspace", cassandra_keyspace, "--replication-factor", "1",
    ]  # fmt: skip
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    probes = {name: free_port() for name in ("a", "b")}
    files: list[IO[bytes]] = []
    processes: dict[str, subprocess.Popen[bytes]] = {}
    reader: BackendInterface | None = None

    def start(name: str) -> subprocess.Popen[bytes]:
        out = logs[name].open("wb")
        files.append(out)
        processes[name] = subprocess.Popen(
            [*command, "--probes", f"127.0.0.1:{probes[name]}"], env=dict(os.environ), stderr=out
        )
        return processes[name]

    def stored_max() -> int | None:
        assert reader is not None
        found = reader.hard_fetch_ledger_range()
        return None if found is None else found.max_sequence

    try:
        assert replay.stderr is not None
        assert b"replaying" in replay.stderr.readline()
        writer = start("a")
        _wait("a to write", lambda: "role writer" in logs["a"].read_text())
        _wait("the first commit", lambda: _committed(logs["a"]))
        reader = make_backend(
            {
                "type": "cassandra",
                "cassandra": {"hosts": [host], "port": port, "keyspace": cassandra_keyspace},
                "read_only": True,
            }
        )
        standby = start("b")
        _wait("b to stand by", lambda: "role standby" in logs["b"].read_text())
        _wait("ledgers to flow", lambda: (stored_max() or 0) >= FIRST + 10)
        assert writer.poll() is None
        assert standby.poll() is None
        assert _status(probes["a"])["role"] == "writer"
        assert _status(probes["b"]) == {
            "role": "standby",
            "committed": 0,
            "last_committed": None,
            "takeovers": 0,
            "conflicts": 0,
        }

        writer.send_signal(signal.SIGKILL)
        writer.wait()
        killed_at = stored_max()
        assert killed_at is not None
        assert killed_at < LAST, "the writer finished before the kill"

        _wait("b to take over", lambda: "role writer" in logs["b"].read_text(), timeout=60)
        _wait("the end of the dump", lambda: stored_max() == LAST, timeout=180)
        taken_over = _status(probes["b"])
        assert taken_over["role"] == "writer"
        assert taken_over["takeovers"] == 1
        assert taken_over["last_committed"] == LAST
        assert _stop(standby) == 0
        b_log = logs["b"].read_text()
        assert "ledger range stuck at" in b_log
        assert "follower: stopped as writer" in b_log

        # Every ledger committed exactly once: a's lines (its last may be lost with the kill)
        # and b's lines meet without overlap and without a hole.
        by_a, by_b = _committed(logs["a"]), _committed(logs["b"])
        assert by_a == list(range(FIRST, by_a[-1] + 1))
        assert by_a[-1] in (killed_at, killed_at - 1)
        assert by_b == list(range(killed_at + 1, LAST + 1))

        assert_equals_clean_load(reader, dump, tmp_path, FIRST, LAST)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for out in files:
            out.close()
        stop_replay(replay)
        if reader is not None:
            reader.close()
