"""Operations against the real Bigtable emulator and the stack's Redis (the relayer's tables).

The filter index tests' messages (generated VAAs plus hand-made transfers) are stored; the
relayer's tables are filled through their own adapter as a relayer would (enqueue, claim,
submit, confirm or fail); the API's operation for each transfer must tell what the tables
hold, and the operations list must hold exactly the ids of ``GET /api/v1/vaas`` for the same
filters, page after page.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.redemptions_redis import RelayRedemptions
from chainloom.relayer.model import Outcome, RelayRequest, Table
from chainloom.relayer.tables import Move, RelayTables
from chainloom.settings import BigtableSettings
from chainloom.wormhole import VAA, parse_vaa
from chainloom_dev.net import free_port
from tests.integration.eventstore.filter_dataset import inputs
from tests.integration.eventstore.test_events_api import cli_env, fetch, running
from tests.integration.eventstore.test_filter_index import store
from tests.unit.eventstore.api.schema_check import check

ONE = "/api/v1/operations/{chain}/{emitter}/{seq}"
WORKER = "1:0xwallet"
REDEEMED = "0x" + "5e" * 32
AWAITING = "0x" + "7a" * 32


def _transfers() -> list[VAA]:
    """The hand-made Ethereum -> Solana transfers (sequences 10000-10005, target chain 1)."""
    found = [parse_vaa(item.raw) for item in inputs()]
    return sorted(
        (v for v in found if v.emitter_chain == 2 and 10_000 <= v.sequence < 10_006),
        key=lambda v: v.sequence,
    )


def _request(vaa: VAA) -> RelayRequest:
    return RelayRequest(
        digest=vaa.digest_hex,
        vaa=vaa.to_bytes(),
        target_chain=1,
        emitter_chain=vaa.emitter_chain,
        sequence=vaa.sequence,
        enqueued_at=time.time(),
    )


def _relay(tables: RelayTables, completed: VAA, pending: VAA, failed: VAA) -> None:
    """What a relayer leaves: one confirmed, one awaiting finality, one failed for good."""
    for vaa in (completed, pending, failed):
        assert tables.enqueue(_request(vaa)).accepted
    assert tables.acquire_lease(WORKER, 1, "token", 60)
    claimed = {r.digest: r for r in tables.claim(WORKER, 1, "token", limit=10, lease_ttl=60)}
    assert len(claimed) == 3
    for vaa, submission in ((completed, REDEEMED), (pending, AWAITING)):
        sent = replace(claimed[vaa.digest_hex], submission_id=submission, submitted_by=WORKER)
        assert tables.move(Move(sent, Table.IN_WORK, Table.PENDING_CONFIRMATION, WORKER))
    done = tables.get(completed.digest_hex)
    assert done is not None
    assert tables.move(
        Move(done, Table.PENDING_CONFIRMATION, Table.COMPLETED, outcome=Outcome.CONFIRMED)
    )
    gave_up = replace(claimed[failed.digest_hex], retries=5, last_error="execution reverted")
    assert tables.move(Move(gave_up, Table.IN_WORK, Table.FAILED, WORKER, score=time.time()))


def _get(base: str, document: dict[str, Any], vaa: VAA) -> dict[str, Any]:
    code, _, body = fetch(f"{base}/api/v1/operations/{vaa.message_id}")
    assert code == 200, body
    answer: dict[str, Any] = json.loads(body)
    check(document, ONE, 200, answer)
    return answer


@pytest.fixture
def stored(tables: BigtableTables) -> BigtableTables:
    store(tables)
    return tables


@pytest.fixture
def relayed(redis_url: str) -> Iterator[RelayTables]:
    client = redis.Redis.from_url(redis_url)
    try:
        yield RelayTables(client)
    finally:
        client.close()


def test_an_operation_tells_what_the_relayer_did(
    stored: BigtableTables, relayed: RelayTables
) -> None:
    completed, pending, failed, untouched = _transfers()[:4]
    _relay(relayed, completed, pending, failed)
    with running(stored, redemptions=RelayRedemptions(relayed)) as base:
        _, _, raw = fetch(base + "/openapi.json")
        document = json.loads(raw)
        answer = _get(base, document, completed)
        target = answer["targetChain"]
        assert target["status"] == "completed"
        assert target["transaction"] == {"txHash": REDEEMED}
        assert (target["chainId"], target["outcome"]) == (1, "confirmed")
        assert target["timestamp"] is not None
        assert answer["sourceChain"]["chainId"] == 2
        assert answer["sourceChain"]["transaction"] == {"txHash": "0x" + "cd" * 32}
        assert answer["vaa"]["id"] == completed.message_id
        assert answer["content"]["standarizedProperties"]["amount"] == str(10**8)

        target = _get(base, document, pending)["targetChain"]
        assert (target["status"], target["transaction"]) == ("pending", {"txHash": AWAITING})
        target = _get(base, document, failed)["targetChain"]
        assert (target["status"], target["reason"]) == ("failed", "execution reverted")
        assert target["transaction"] is None
        target = _get(base, document, untouched)["targetChain"]
        assert (target["status"], target["transaction"]) == ("unknown", None)

        code, _, body = fetch(f"{base}/api/v1/operations/2/{'00' * 32}/123456")
        assert code == 404, body
        check(document, ONE, 404, json.loads(body))
    with running(stored) as base:  # without the relayer's tables nothing is known
        target = _get(base, document, completed)["targetChain"]
        assert (target["status"], target["transaction"]) == ("unknown", None)


def _walk(base: str, path: str, key: str, query: dict[str, str]) -> list[str]:
    ids: list[str] = []
    asked = dict(query)
    while True:
        code, _, body = fetch(f"{base}{path}?{urllib.parse.urlencode(asked)}")
        assert code == 200, body
        answer = json.loads(body)
        ids += [item["id"] for item in answer[key]]
        following = answer["pagination"]["next"]
        if following is None:
            return ids
        asked["cursor"] = following


@pytest.mark.parametrize(
    "query",
    [
        {"pageSize": "7"},
        {"sourceChain": "2", "targetChain": "1", "order": "asc", "pageSize": "2"},
        {"payloadType": "1,3", "pageSize": "9"},
        {"sourceChain": "ethereum", "from": "2023-11-14", "pageSize": "3"},
    ],
)
def test_the_list_holds_the_ids_of_the_vaas_list(
    stored: BigtableTables, relayed: RelayTables, query: dict[str, str]
) -> None:
    completed, pending, failed = _transfers()[:3]
    _relay(relayed, completed, pending, failed)
    with running(stored, redemptions=RelayRedemptions(relayed)) as base:
        operations = _walk(base, "/api/v1/operations", "operations", query)
        assert operations == _walk(base, "/api/v1/vaas", "data", query)
        assert operations  # every query matches something
        _, _, raw = fetch(base + "/openapi.json")
        code, _, body = fetch(f"{base}/api/v1/operations?{urllib.parse.urlencode(query)}")
        assert code == 200
        answer = json.loads(body)
        check(json.loads(raw), "/api/v1/operations", 200, answer)
        states = {
            item["id"]: item["targetChain"]["status"]
            for item in answer["operations"]
            if item["targetChain"] is not None
        }
        if completed.message_id in states:
            assert states[completed.message_id] == "completed"


def test_the_list_refuses_what_the_vaas_list_refuses(stored: BigtableTables) -> None:
    with running(stored) as base:
        code, _, body = fetch(f"{base}/api/v1/operations?sender=0x11&pageSize=2")
        assert code == 400
        assert json.loads(body)["parameter"] == "sender"
        code, _, body = fetch(f"{base}/api/v1/operations?bogus=1")
        assert code == 400
        assert json.loads(body)["parameter"] == "bogus"


def test_an_unreachable_relayer_redis_is_one_line_503(stored: BigtableTables) -> None:
    client = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=2)
    transfer = _transfers()[0]
    with running(stored, redemptions=RelayRedemptions(RelayTables(client))) as base:
        code, _, body = fetch(f"{base}/api/v1/operations/{transfer.message_id}")
        assert code == 503
        answer = json.loads(body)
        assert answer["error"] == "unavailable"
        assert "Redis at 127.0.0.1:" in answer["reason"]
        assert "\n" not in answer["reason"]
        code, _, _ = fetch(f"{base}/api/v1/vaas/{transfer.message_id}")
        assert code == 200  # the store's routes keep answering
    client.close()


def test_the_cli_reads_the_relayer_tables_api_relay_redis_names(
    stored: BigtableTables, settings: BigtableSettings, redis_url: str, relayed: RelayTables
) -> None:
    completed, pending, failed = _transfers()[:3]
    _relay(relayed, completed, pending, failed)
    env = cli_env(settings) | {
        "CHAINLOOM_BIGTABLE__INDEX_TABLE": settings.index_table,
        "CHAINLOOM_API__RELAY_REDIS__URL": redis_url,
        "CHAINLOOM_API__RELAY_REDIS__KEY_PREFIX": relayed.prefix,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "chainloom", "events", "api", "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"events api on http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        base = f"http://127.0.0.1:{found.group(1)}"
        code, _, body = fetch(f"{base}/api/v1/operations/{completed.message_id}")
        assert code == 200, body
        target = json.loads(body)["targetChain"]
        assert (target["status"], target["transaction"]) == ("completed", {"txHash": REDEEMED})
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
