"""``chainloom ledger`` end to end: generate a dump, load it, read it back; and the crash test:
SIGKILL the loader mid-ledger against real Cassandra, check what readers see, restart."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chainloom.cli.ledger import ledger
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.mpt import holder_rows
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpFile, state_at
from chainloom.ledger.types import MPTHolderData
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.parse import parse_metadata
from chainloom_dev.cli.ledger import ledger as dev_ledger
from chainloom_dev.net import free_port
from tests.ledger_api_support import walk_state

FIRST = 38129


def run(*args: str) -> Any:
    group = dev_ledger if args[:1] in (("generate",), ("replay",)) else ledger
    result = CliRunner().invoke(group, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "ledgers.jsonl"
    out = run(
        "generate",
        "--from-state", "38129",
        "--ledgers", "6",
        "--txs-per-ledger", "30",
        "--seed", "4",
        "--vectors", str(vectors_dir),
        "--out", str(path),
        "--json",
    )  # fmt: skip
    assert out["first"] == FIRST
    assert out["last"] == FIRST + 6
    assert out["transactions"] == 180
    return path


def test_load_then_read_every_command(dump: Path, tmp_path: Path) -> None:
    db = ["--sqlite-path", str(tmp_path / "c.db"), "--json"]
    loaded = run("load", str(dump), "--quiet", *db)
    assert loaded["last_committed"] == FIRST + 6
    assert loaded["ledgers"] == 7
    assert run("range", *db) == {"min": FIRST, "max": FIRST + 6}
    header = run("header", str(FIRST), *db)
    assert header["hash"] == "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E"
    assert header["account_hash"].startswith("2C23D15B")
    # A ledger page walk with a cursor returns the 261 objects of 38129 in key order.
    keys: list[str] = []
    cursor: list[str] = []
    while True:
        page = run("objects", "--at", str(FIRST), "--limit", "100", *cursor, *db)
        keys += [o["key"] for o in page["objects"]]
        if page["cursor"] is None:
            break
        cursor = ["--cursor", page["cursor"]]
    assert len(keys) == 261
    assert keys == sorted(keys)
    # account-tx pages with markers cover the account's history exactly once, newest first.
    source = DumpFile(dump)
    rows: dict[str, list[tuple[int, int]]] = {}
    for sequence, record in source:
        for _, metadata in record.transactions:
            meta = parse_metadata(metadata)
            for affected in meta.affected_accounts:
                rows.setdefault(encode_account(affected), []).append(
                    (sequence, meta.transaction_index)
                )
    account = max(rows, key=lambda a: len(rows[a]))
    seen: list[tuple[int, int]] = []
    marker: list[str] = []
    while True:
        page = run("account-tx", account, "--limit", "3", *marker, *db)
        seen += [(t["ledger_index"], t["transaction_index"]) for t in page["transactions"]]
        if page["marker"] is None:
            break
        marker = ["--marker", page["marker"]]
    assert seen == sorted(rows[account], reverse=True)
    forward = run("account-tx", account, "--forward", "--limit", "1000", *db)
    assert [(t["ledger_index"], t["transaction_index"]) for t in forward["transactions"]] == sorted(
        rows[account]
    )
    # nft: a token minted in the dump is found, with its owner.
    state = state_at(source, FIRST + 6)
    page_key, page_blob = next((k, b) for k, b in state.items() if b[:3] == b"\x11\x00\x50")
    from chainloom.ledger.nft import nfts_from_object

    token = nfts_from_object(page_key, page_blob, FIRST + 6)[0]
    nft = run("nft", token.token_id.hex(), *db)
    assert nft["owner"] == encode_account(page_key[:20])
    assert nft["is_burned"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["header", "99"], "ledger 99 is not in the stored range"),
        (["objects", "--at", str(FIRST), "--cursor", "zz"], "cursor 'zz' is not hex"),
        (["account-tx", "rNotAnAddress"], "not a valid XRPL classic address"),
        (["account-tx", "r3kmLJN5D28dHuH8vZNUZpMC43pEHpaocV", "--marker", "x"], "LEDGER:INDEX"),
        (["nft", "00" * 31], "token ID"),
    ],
)
def test_bad_input_exits_2_naming_it(
    dump: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    db = ["--sqlite-path", str(tmp_path / "e.db")]
    run("load", str(dump), "--quiet", "--json", *db)
    result = CliRunner().invoke(ledger, [*args, *db])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_missing_dump_and_a_missing_database_are_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        ledger, ["load", str(tmp_path / "none.jsonl"), "--sqlite-path", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 2
    assert f"DUMP {tmp_path / 'none.jsonl'}: does not exist" in result.stderr
    result = CliRunner().invoke(ledger, ["range", "--sqlite-path", str(tmp_path / "nope.db")])
    assert result.exit_code == 2
    assert "nope.db does not exist" in result.stderr


@pytest.mark.parametrize("command", ["load", "api"])
def test_a_malformed_feed_url_exits_2_without_its_password(command: str, tmp_path: Path) -> None:
    url = "redis://user:s3cret@127.0.0.1:notaport/0"
    result = CliRunner().invoke(
        ledger, [command, "--feed-redis", url, "--sqlite-path", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 2
    assert "command line: feed.redis.url" in result.stderr
    assert "s3cret" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------
# Crash test


def _raw_rows_at(host: str, port: int, keyspace: str, sequence: int) -> int:
    """Rows already written for ``sequence`` (invisible to readers), straight from CQL."""
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=5)
    session = cluster.connect(keyspace)
    try:
        total = 0
        for table, column in (("objects", "sequence"), ("successor", "seq"), ("diff", "seq")):
            query = f"SELECT COUNT(*) FROM {table} WHERE {column} = %s ALLOW FILTERING"
            total += session.execute(query, (sequence,)).one()[0]
        return int(total)
    finally:
        cluster.shutdown()


@pytest.mark.slow
def test_sigkill_mid_ledger_is_invisible_and_a_restart_completes_it(
    vectors_dir: Path,
    tmp_path: Path,
    cassandra_address: tuple[str, int],
    cassandra_keyspace: str,
) -> None:
    path = tmp_path / "crash.jsonl"
    ledgers = 40
    run(
        "generate", "--ledgers", str(ledgers), "--txs-per-ledger", "80", "--seed", "21",
        "--vectors", str(vectors_dir), "--out", str(path), "--json",
    )  # fmt: skip
    host, port = cassandra_address
    command = [
        sys.executable, "-m", "chainloom.cli", "ledger", "load", str(path), "--quiet",
        "--backend", "cassandra", "--cassandra-hosts", f"{host}:{port}",
        "--keyspace", cassandra_keyspace, "--replication-factor", "1",
    ]  # fmt: skip
    config = {
        "type": "cassandra",
        "cassandra": {"hosts": [host], "port": port, "keyspace": cassandra_keyspace},
        "read_only": True,
    }
    dump = DumpFile(path)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    killed_at: list[int] = []
    mid_ledger = 0
    reader: BackendInterface | None = None
    try:
        # Kill until two kills landed mid-ledger (rows of the next ledger already written).
        for _ in range(6):
            if mid_ledger == 2:
                break
            process = subprocess.Popen(command, env=dict(os.environ), stderr=subprocess.PIPE)
            # Wait until it commits at least one more ledger, then kill it at a random moment.
            target = (killed_at[-1] if killed_at else FIRST) + 2
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "the loader made no progress"
                if reader is None:
                    try:
                        reader = make_backend(config)
                    except Exception:
                        time.sleep(0.2)
                        continue
                found = reader.hard_fetch_ledger_range()
                if found is not None and found.max_sequence >= target:
                    break
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.25))
            process.send_signal(signal.SIGKILL)
            process.wait()
            if process.stderr:
                process.stderr.close()
            assert reader is not None
            found = reader.hard_fetch_ledger_range()
            assert found is not None
            committed = found.max_sequence
            assert committed < FIRST + ledgers, f"the loader finished before the kill (seed {seed})"
            killed_at.append(committed)
            # Readers see exactly the committed ledgers: the state at the max is complete and
            # the ledger being written is not visible at all.
            assert walk_state(reader, committed) == state_at(dump, committed), f"seed {seed}"
            assert not reader.is_visible(committed + 1)
            assert reader.fetch_ledger_by_sequence(committed + 1) is None
            if _raw_rows_at(host, port, cassandra_keyspace, committed + 1):
                mid_ledger += 1
        assert mid_ledger == 2, f"no kill landed in the middle of a ledger (seed {seed})"
        finished = subprocess.run(command, capture_output=True, timeout=300, check=False)
        assert finished.returncode == 0, finished.stderr.decode()
        assert reader is not None
        found = reader.hard_fetch_ledger_range()
        assert found is not None
        assert (found.min_sequence, found.max_sequence) == (FIRST, FIRST + ledgers)
        for sequence in (*[k + 1 for k in killed_at], FIRST + ledgers):
            assert walk_state(reader, sequence) == state_at(dump, sequence), f"seed {seed}"
            record = dump.read(sequence)
            assert record is not None
            diff = {o.key: o.blob for o in reader.fetch_ledger_diff(sequence)}
            assert diff == {o.key: o.blob for o in record.objects}
    finally:
        if reader is not None:
            reader.close()


def test_replay_command_serves_a_dump_that_load_grpc_copies(dump: Path, tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "chainloom_dev", "ledger", "replay", str(dump),
         "--listen", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        assert "replaying" in server.stderr.readline()
        db = ["--sqlite-path", str(tmp_path / "r.db"), "--json"]
        loaded = run("load", "--grpc", f"127.0.0.1:{port}", "--start", str(FIRST), "--quiet", *db)
        assert (loaded["first_committed"], loaded["last_committed"]) == (FIRST, FIRST + 6)
        from_file = tmp_path / "f.db"
        run("load", str(dump), "--quiet", "--json", "--sqlite-path", str(from_file))
        for sequence in (FIRST, FIRST + 6):
            over_grpc = run("header", str(sequence), *db)
            assert over_grpc == run(
                "header", str(sequence), "--json", "--sqlite-path", str(from_file)
            )
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            assert server.wait(timeout=30) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            if server.stderr:
                server.stderr.close()


def test_backfill_mpt_holders_counts_every_holder_the_history_had(
    vectors_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "mpt.jsonl"
    run(
        "generate", "--mpt", "--ledgers", "6", "--txs-per-ledger", "30", "--seed", "2",
        "--vectors", str(vectors_dir), "--out", str(path), "--json",
    )  # fmt: skip
    db = ["--sqlite-path", str(tmp_path / "m.db"), "--json"]
    run("load", str(path), "--quiet", *db)
    holders: set[MPTHolderData] = set()
    dump_file = DumpFile(path)
    try:
        for _, ledger_record in dump_file:
            holders.update(holder_rows(ledger_record.objects))
    finally:
        dump_file.close()
    assert holders
    assert run("backfill-mpt-holders", *db) == {"holders": len(holders)}
