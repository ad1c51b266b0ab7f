"""``chainloom events api`` against the real Bigtable emulator, with plain HTTP (urllib).

Messages are written by the real event writer: the shared mainnet vectors and VAAs signed by
the dev guardians (several emitters, sequences of 16 to 20 digits, an attested token so a
transfer carries TokenTransferDetails). Every answer, errors included, is validated against
the ``/openapi.json`` the server itself serves.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from chainloom.eventstore.api.app import EventsApi, events_app, serve
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.reads import StoreReads
from chainloom.eventstore.api.stream_reads import FeedReads
from chainloom.eventstore.backfill import GapStateRows
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.feed import VaaFeed
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.redemptions import Redemptions
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import (
    DEV_TOKEN_BRIDGE_EMITTER,
    GuardianSets,
    mainnet_emitters,
)
from chainloom.wormhole.sequences import GapBook
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from tests.unit.eventstore import builders
from tests.unit.eventstore.api.schema_check import check

KIT = DevGuardians()
EMITTERS = mainnet_emitters().with_dev_emitters([2, 4])
OTHER = bytes(31) + b"\x42"
T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
WIDE = [0, 1, 2, 9_999_999_999_999_999, 10**16, 10**16 + 1, 10**19, 2**64 - 1]
WETH = builders.evm("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")
TX = "0x" + "ab" * 32


@dataclass
class Served:
    """A running API and what was stored behind it."""

    base: str
    document: dict[str, Any]
    tables: BigtableTables


@contextlib.contextmanager
def running(
    tables: BigtableTables,
    feed: VaaFeed | None = None,
    redemptions: Redemptions | None = None,
    **settings: Any,
) -> Iterator[str]:
    """``serve`` on a free port in a thread of its own (the stream woken by ``feed``, the
    operations' redemptions from ``redemptions``); the base URL."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    bound: list[int] = []
    ready = threading.Event()
    failure: list[BaseException] = []

    def on_ready(port: int) -> None:
        bound.append(port)
        ready.set()

    def run() -> None:
        async def main() -> None:
            await serve(
                StoreReads(tables),
                EventsApiSettings(port=0, **settings),
                stop=stop,
                on_ready=on_ready,
                stream_reads=FeedReads(tables),
                feed=feed,
                redemptions=redemptions,
            )

        try:
            loop.run_until_complete(main())
        except BaseException as error:
            failure.append(error)
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(60)
    if failure:
        raise failure[0]
    try:
        yield f"http://127.0.0.1:{bound[0]}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


def _titled(items: Any) -> dict[str, str]:
    """Header names in title case (HTTP names are case-insensitive; uvicorn sends lower case)."""
    return {name.title(): value for name, value in items}


def fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one request (urllib, no proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, method=method)
    try:
        with opener.open(request, timeout=30) as reply:
            return reply.status, _titled(reply.headers.items()), reply.read()
    except urllib.error.HTTPError as refused:
        return refused.code, _titled(refused.headers.items()), refused.read()


def get(served: Served, path: str, template: str, status: int = 200) -> Any:
    """GET ``path``: its JSON, checked to have ``status`` and the documented shape."""
    code, headers, body = fetch(served.base + path)
    assert code == status, body
    assert headers["Content-Type"] == "application/json"
    data = json.loads(body)
    check(served.document, template, status, data)
    return data


def _generated() -> list[tuple[bytes, str | None]]:
    """Dev-guardian VAAs: (bytes, tx id)."""
    vaas: list[tuple[bytes, str | None]] = []
    attest = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=100,
        payload=builders.asset_meta(WETH, 2, 18, "WETH", "Wrapped Ether"),
        timestamp=T0,
    )
    vaas.append((attest.to_bytes(), None))
    transfer = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=101,
        payload=builders.transfer(5 * 10**8, WETH, 2, builders.evm("aa" * 20), 4),
        timestamp=T0 + 60,
    )
    vaas.append((transfer.to_bytes(), TX))
    for index, sequence in enumerate(WIDE):
        vaa = KIT.sign(
            emitter_chain=4,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=sequence,
            payload=b"wide %d" % sequence,
            timestamp=T0 + index * 86_400,
        )
        vaas.append((vaa.to_bytes(), TX if index == 0 else None))
    for sequence in range(7):
        vaa = KIT.sign(
            emitter_chain=4,
            emitter_address=OTHER,
            sequence=sequence,
            payload=b"other %d" % sequence,
            timestamp=T0 + 3600 * sequence,
        )
        vaas.append((vaa.to_bytes(), None))
    return vaas


def _mainnet(vaa_vectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        v
        for v in vaa_vectors
        if v["expected"].get("quorum_met")
        and (v["expected"].get("verified_against") or "").startswith("mainnet")
    ]


@pytest.fixture
def served(tables: BigtableTables, vaa_vectors: list[dict[str, Any]]) -> Iterator[Served]:
    with EventWriter(tables, GuardianSets.mainnet(), emitters=mainnet_emitters()) as writer:
        for number, vector in enumerate(_mainnet(vaa_vectors)):
            writer.submit(bytes.fromhex(vector["hex"]), initiating_tx_id=f"0x{number:064x}")
    with EventWriter(tables, KIT.sets(0), emitters=EMITTERS) as writer:
        for data, tx in _generated():
            writer.submit(data, initiating_tx_id=tx)
    with running(tables) as base:
        code, _, body = fetch(base + "/openapi.json")
        assert code == 200
        yield Served(base, json.loads(body), tables)


def test_readiness_reads_the_store(served: Served) -> None:
    code, _, body = fetch(served.base + "/readyz")
    assert (code, json.loads(body)) == (200, {"status": "ready"})


def test_every_vector_by_id(served: Served, vaa_vectors: list[dict[str, Any]]) -> None:
    vectors = _mainnet(vaa_vectors)
    assert vectors
    for number, vector in enumerate(vectors):
        expected = vector["expected"]
        chain, emitter, sequence = expected["message_id"].split("/")
        path = f"/api/v1/vaas/{chain}/{emitter}/{sequence}"
        data = get(served, path, "/api/v1/vaas/{chain}/{emitter}/{seq}")["data"]
        assert data["id"] == expected["message_id"]
        assert base64.b64decode(data["vaa"]).hex() == vector["hex"]
        assert data["sequence"] == int(expected["sequence"])
        assert data["emitterChain"] == expected["emitter_chain"]
        assert data["guardianSetIndex"] == expected["guardian_set_index"]
        assert data["nonce"] == expected["nonce"]
        assert "0x" + data["digest"] == expected["digest"]
        assert data["txHash"] == f"0x{number:064x}"
        if expected["category"] == "token_transfer":
            assert data["payload"]["amount"] == str(int(expected["token_bridge"]["amount"]))
            assert data["payload"]["toChain"] == expected["token_bridge"]["to_chain"]


def test_enrichment_and_names(served: Served) -> None:
    emitter = DEV_TOKEN_BRIDGE_EMITTER.hex()
    template = "/api/v1/vaas/{chain}/{emitter}/{seq}"
    data = get(served, f"/api/v1/vaas/ethereum/0x{emitter.lstrip('0')}/101", template)["data"]
    assert data["payload"]["kind"] == "TokenTransfer"
    assert data["tokenTransferDetails"]["amount"] == "5.00000000"
    assert data["tokenTransferDetails"]["originSymbol"] == "WETH"
    assert data["chainDetails"]["receiverAddress"].lower() == "0x" + "aa" * 20
    attest = get(served, f"/api/v1/vaas/2/{emitter}/100", template)["data"]
    assert (attest["payload"]["kind"], attest["payload"]["symbol"]) == ("AssetMeta", "WETH")


def _walk(served: Served, path: str, template: str, size: int) -> list[str]:
    ids: list[str] = []
    cursor = None
    for _ in range(1000):
        query = f"?pageSize={size}" + (f"&cursor={cursor}" if cursor else "")
        page = get(served, path + query, template)
        assert len(page["data"]) <= size
        ids += [item["id"] for item in page["data"]]
        cursor = page["pagination"]["next"]
        if cursor is None:
            return ids
    raise AssertionError("the walk did not end")


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_pagination_returns_every_vaa_exactly_once(served: Served, size: int) -> None:
    reader = EventReader(served.tables)
    emitter = DEV_TOKEN_BRIDGE_EMITTER.hex()
    in_order = _walk(served, f"/api/v1/vaas/4/{emitter}", "/api/v1/vaas/{chain}/{emitter}", size)
    assert in_order == [f"4/{emitter}/{s}" for s in sorted(WIDE)]  # numeric, across widths
    whole_chain = _walk(served, "/api/v1/vaas/4", "/api/v1/vaas/{chain}", size)
    assert len(whole_chain) == len(set(whole_chain))
    assert sorted(whole_chain) == sorted(m.key.message_id for m in reader.scan(4))
    assert len(whole_chain) == len(WIDE) + 7
    for chain in ("1", "2"):
        ids = _walk(served, f"/api/v1/vaas/{chain}", "/api/v1/vaas/{chain}", size)
        assert sorted(ids) == sorted(m.key.message_id for m in reader.scan(int(chain)))


def test_a_cursor_is_bound_to_its_list(served: Served) -> None:
    page = get(served, "/api/v1/vaas/4?pageSize=1", "/api/v1/vaas/{chain}")
    cursor = page["pagination"]["next"]
    refused = get(served, f"/api/v1/vaas/2?cursor={cursor}", "/api/v1/vaas/{chain}", 400)
    assert refused["parameter"] == "cursor"


def test_transactions_through_the_index(served: Served) -> None:
    template = "/api/v1/transactions/{tx_id}"
    found = get(served, "/api/v1/transactions/" + TX.upper().replace("0X", "0x"), template)
    assert found["txHash"] == TX
    emitter = DEV_TOKEN_BRIDGE_EMITTER.hex()
    assert [m["id"] for m in found["data"]] == sorted([f"2/{emitter}/101", f"4/{emitter}/0"])
    missing = get(served, "/api/v1/transactions/0x" + "cd" * 32, template, 404)
    assert "0x" + "cd" * 32 in missing["reason"]


def test_daily_stats_equal_the_index_counts(served: Served) -> None:
    stats = get(served, "/api/v1/stats/daily?from=2023-11-14&to=2023-11-30", "/api/v1/stats/daily")
    reader = EventReader(served.tables)
    expected = reader.count_per_day(dt.date(2023, 11, 14), dt.date(2023, 11, 30))
    assert {(d["chain"], d["date"]): d["messages"] for d in stats["data"]} == expected
    assert stats["total"] == sum(expected.values())
    # chain 4 on 2023-11-14 (from 22:13:20): OTHER's sequences 0 and 1 (an hour apart) and
    # the first of the wide ones (one per day)
    four = get(
        served, "/api/v1/stats/daily?from=2023-11-14&to=2023-11-14&chain=4", "/api/v1/stats/daily"
    )
    assert four["data"] == [
        {"date": "2023-11-14", "chain": 4, "chainName": "bsc", "messages": 3},
    ]


def test_gaps_from_the_saved_state(served: Served) -> None:
    empty = get(served, "/api/v1/gaps", "/api/v1/gaps")
    assert empty == {"emitters": 0, "missing": 0, "unreadable": [], "data": []}
    book = GapBook()
    emitter = OTHER.hex()
    for sequence in (0, 1, 5):
        book.see(4, emitter, sequence, at=1000.0)
    book.failed((4, emitter, 3), "not_found", "every endpoint: NotFound", at=1100.0)
    GapStateRows(served.tables).save([book.emitter_json(4, emitter)])
    gaps = get(served, f"/api/v1/gaps?chain=4&emitter={emitter}", "/api/v1/gaps")
    assert gaps["emitters"] == 1
    assert gaps["missing"] == 3
    (gap,) = gaps["data"]
    assert (gap["first"], gap["last"], gap["attempts"]) == (2, 4, 1)
    assert get(served, "/api/v1/gaps?chain=2", "/api/v1/gaps")["data"] == []


def test_errors_name_what_was_wrong(served: Served) -> None:
    emitter = DEV_TOKEN_BRIDGE_EMITTER.hex()
    single = "/api/v1/vaas/{chain}/{emitter}/{seq}"
    missing = get(served, f"/api/v1/vaas/2/{emitter}/999", single, 404)
    assert missing["reason"] == f"no message 2/{emitter}/999 is stored"
    assert get(served, f"/api/v1/vaas/2/{emitter}/x", single, 400)["parameter"] == "seq"
    listing = "/api/v1/vaas/{chain}/{emitter}"
    too_big = get(served, f"/api/v1/vaas/2/{emitter}?pageSize=1001", listing, 400)
    assert too_big["parameter"] == "pageSize"
    code, headers, body = fetch(served.base + "/api/v1/gaps", method="POST")
    assert code == 405
    assert headers["Allow"] == "GET, HEAD"
    check(served.document, "/api/v1/gaps", "default", json.loads(body))
    code, _, body = fetch(served.base + "/api/v1/gaps", method="HEAD")
    assert (code, body) == (200, b"")


def test_an_unreachable_store_is_a_503_in_one_line(
    settings: BigtableSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = free_port()
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{closed}")
    away = settings.model_copy(update={"operation_timeout": 1.0})
    with BigtableTables(away) as tables:
        api = EventsApi(StoreReads(tables), EventsApiSettings())

        async def ask() -> httpx.Response:
            transport = httpx.ASGITransport(app=events_app(api))
            async with httpx.AsyncClient(transport=transport, base_url="http://events") as client:
                return await client.get("/api/v1/vaas/2/" + "0" * 64 + "/1")

        answer = asyncio.run(ask())
        api.close()
        ready_api = EventsApi(StoreReads(tables), EventsApiSettings())

        async def ask_ready() -> httpx.Response:
            transport = httpx.ASGITransport(app=events_app(ready_api))
            async with httpx.AsyncClient(transport=transport, base_url="http://events") as client:
                return await client.get("/readyz")

        unready = asyncio.run(ask_ready())
        ready_api.close()
    assert unready.status_code == 503  # readiness is a round trip to the store
    assert unready.json()["error"] == "unavailable"
    assert answer.status_code == 503
    body = answer.json()
    assert body["error"] == "unavailable"
    assert body["reason"].startswith(f"Bigtable unavailable at emulator 127.0.0.1:{closed}: ")
    assert "\n" not in body["reason"]


def cli_env(settings: BigtableSettings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_BIGTABLE")}
    env |= {
        "CHAINLOOM_BIGTABLE__PROJECT": settings.project or "",
        "CHAINLOOM_BIGTABLE__INSTANCE": settings.instance or "",
        "CHAINLOOM_BIGTABLE__TABLE": settings.table,
    }
    return env


def test_the_cli_serves_until_sigterm(settings: BigtableSettings) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "chainloom", "events", "api", "--port", "0"],
        env=cli_env(settings),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"events api on http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        code, _, body = fetch(f"http://127.0.0.1:{found.group(1)}/openapi.json")
        assert code == 200
        assert json.loads(body)["openapi"] == "3.1.0"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_the_cli_refuses_missing_tables(settings: BigtableSettings) -> None:
    env = cli_env(settings) | {"CHAINLOOM_BIGTABLE__TABLE": "no-such-table"}
    done = subprocess.run(
        [sys.executable, "-m", "chainloom", "events", "api", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: Bigtable table 'no-such-table' does not exist; create it with "
        "`chainloom events init`"
    ]
