"""``chainloom relayer work | queues | failed`` against the real Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
import redis
from click.testing import CliRunner

from chainloom.cli import main
from chainloom.relayer.model import Table
from chainloom.relayer.tables import Move, RelayTables
from chainloom_dev.sim.sim_chains import RedisLedgerAdapter
from tests.integration.relayer.relay_support import requests

KEY = "6c8f5a3e1b2d4c7a9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"


@pytest.fixture
def tables(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield RelayTables(client)
    client.close()


@pytest.fixture(scope="module")
def transfers():
    return requests(6, target_chain=4, start=500)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["relayer", *args])
    return result.exit_code, result.output


def fail_two(tables: RelayTables, transfers) -> None:
    tables.acquire_lease("4:0xw", 4, "t", 10)
    for request in tables.claim("4:0xw", 4, "t", limit=2, lease_ttl=10):
        gave_up = replace(request, retries=11, last_error="SubmitError: insufficient funds")
        tables.move(Move(gave_up, Table.IN_WORK, Table.FAILED, worker_id="4:0xw", score=1.0))


def test_queues_reports_depth_per_table_and_chain(redis_url, tables, transfers):
    tables.enqueue_many(transfers)
    fail_two(tables, transfers)
    code, out = run("queues", "--json", "--redis-url", redis_url)
    assert code == 0, out
    data = json.loads(out)
    assert data["tables"]["incoming"] == {"4": 4}
    assert data["tables"]["failed"] == {"4": 2}
    assert data["tables"]["in_work"] == {"4": 0}
    assert data["workers"] == {"4:0xw": 4}
    code, out = run("queues", "--redis-url", redis_url)
    assert code == 0
    assert "incoming" in out
    assert "│ 4 " in out or "4 " in out


def test_failed_list_retry_and_drop(redis_url, tables, transfers):
    tables.enqueue_many(transfers)
    fail_two(tables, transfers)
    code, out = run("failed", "list", "--json", "--redis-url", redis_url)
    assert code == 0, out
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2
    assert {r["last_error"] for r in rows} == {"SubmitError: insufficient funds"}
    first, second = rows[0]["digest"], rows[1]["digest"]
    code, out = run("failed", "retry", first, "--redis-url", redis_url)
    assert (code, out.strip()) == (0, "retried 1 request(s)")
    assert tables.locate(first) is Table.INCOMING
    code, out = run("failed", "drop", second.upper().replace("0X", "0x"), "--redis-url", redis_url)
    assert code == 0, out
    assert tables.locate(second) is Table.COMPLETED
    code, out = run("failed", "drop", first, "--redis-url", redis_url)
    assert code == 1
    assert f"not in Failed: {first}" in out


def test_bad_input_exits_2_naming_it(redis_url, tmp_path):
    code, out = run("failed", "retry", "0x1234", "--redis-url", redis_url)
    assert code == 2
    assert "digest must be" in out
    code, out = run("queues", "--redis-url", "redis://:hunter2@127.0.0.1:1/0")
    assert code == 4  # Redis unreachable: docs/exit-codes.md
    assert "Redis at 127.0.0.1:1/0" in out  # names the server, never the password
    assert "hunter2" not in out
    bad = tmp_path / "wallet"
    bad.write_text(KEY[:40])
    code, out = run("work", "--chain", "2", "--wallet-file", str(bad), "--redis-url", redis_url)
    assert code == 2
    assert str(bad) in out
    assert KEY[:40] not in out
    code, out = run("work", "--chain", "atlantis", "--wallet-file", str(bad))
    assert code == 2
    assert "unknown chain 'atlantis'" in out


def test_work_relays_queued_transfers_and_stops_when_idle(redis_url, tables, transfers, tmp_path):
    wallet = tmp_path / "secret" / "key"
    wallet.parent.mkdir()
    wallet.write_text(KEY + "\n")
    tables.enqueue_many(transfers)
    command = [
        sys.executable, "-m", "chainloom.cli", "relayer", "work",
        "--chain", "4", "--wallet-file", str(wallet),
        "--redis-url", redis_url, "--adapter", "redis-sim",
        "--recheck", "0.05", "--idle-sleep", "0.02", "--stop-when-idle", "1",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert "started" in done.stderr
    chain = RedisLedgerAdapter(tables.client, 4)
    assert set(chain.submission_counts()) == {r.digest for r in transfers}
    assert set(chain.submission_counts().values()) == {1}
    depths = tables.depths()
    assert depths[Table.COMPLETED] == {4: 6}
    assert depths[Table.INCOMING] == {4: 0}
    assert (
        tables.client.exists(
            tables.key("lease", f"4:{next(iter(chain.submissions().values())).wallet}")
        )
        == 0
    )
