"""Volume rollups against the real Bigtable emulator: the routes must answer what a full scan of
the events table sums, and replays, reruns and a later price must keep each transfer counted
once."""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.prices import FilePriceSource
from chainloom.eventstore.reindex import reindex
from chainloom.eventstore.schema import Q
from chainloom.eventstore.writer import EventWriter
from tests.integration.eventstore.filter_dataset import (
    EMITTERS,
    KIT,
    T0,
    WETH,
    Input,
    index_cells,
    inputs,
)
from tests.integration.eventstore.test_events_api import fetch, running
from tests.unit.eventstore import builders
from tests.unit.eventstore.api.schema_check import check

PRICES = FilePriceSource({"WETH": [(T0, Decimal("2012.5"))]}, window=10**9)


def _inputs() -> list[Input]:
    attest = KIT.sign(
        emitter_chain=2,
        emitter_address=bytes.fromhex("00" * 12 + "0290fb167208af455bb137780163b7b7a9a10c16"),
        sequence=9_999,
        payload=builders.asset_meta(WETH, 2, 18, "WETH", "Wrapped Ether"),
        timestamp=T0 - 10,
    )
    return [Input(attest.to_bytes()), *inputs()]


def store(tables: BigtableTables, prices: FilePriceSource | None = PRICES) -> None:
    with EventWriter(tables, KIT.sets(0), emitters=EMITTERS, prices=prices) as writer:
        for item in _inputs():
            writer.submit(item.raw, initiating_tx_id=item.tx_id, sender=item.sender)


def expected(tables: BigtableTables) -> list[dict[str, Any]]:
    """Every token transfer, from a full scan: day, chains, token, notional."""
    found = []
    for _, row in tables.stream_events("", ""):
        transfer = row.get(schema.TOKEN_TRANSFER_PAYLOAD)
        publication = row.get(schema.MESSAGE_PUBLICATION, {})
        if not transfer or Q.TIMESTAMP not in publication:
            continue
        notional = row.get(schema.TOKEN_TRANSFER_DETAILS, {}).get(Q.NOTIONAL_USD)
        found.append(
            {
                "day": publication[Q.TIMESTAMP].decode()[:10],
                "hour": publication[Q.TIMESTAMP].decode()[:13],
                "source": int(publication[Q.EMITTER_CHAIN]),
                "target": int(transfer[Q.TARGET_CHAIN]),
                "token": (int(transfer[Q.ORIGIN_CHAIN]), transfer[Q.ORIGIN_ADDRESS].decode()),
                "usd": None if notional is None else Decimal(notional.decode()),
            }
        )
    return found


def _sum(items: list[dict[str, Any]]) -> dict[str, Any]:
    priced = [i["usd"] for i in items if i["usd"] is not None]
    usd = sum(priced, Decimal(0)).quantize(Decimal("0.000001"))
    return {"transfers": len(items), "pricedTransfers": len(priced), "volumeUsd": str(usd)}


def get(base: str, document: dict[str, Any], path: str, query: dict[str, str]) -> Any:
    code, _, body = fetch(f"{base}{path}?{urllib.parse.urlencode(query)}")
    answer = json.loads(body)
    check(document, path, code, answer)
    assert code == 200, answer
    return answer


@pytest.fixture
def api(tables: BigtableTables) -> Iterator[tuple[str, dict[str, Any]]]:
    with running(tables) as base:
        _, _, body = fetch(base + "/openapi.json")
        yield base, json.loads(body)


def _answers(base: str, document: dict[str, Any], first: str, last: str) -> list[Any]:
    days = {"from": first, "to": last}
    return [
        get(base, document, "/api/v1/volume/totals", days),
        get(base, document, "/api/v1/volume/totals", {**days, "by": "hour", "chain": "2"}),
        get(base, document, "/api/v1/volume/top-tokens", {**days, "limit": "100"}),
        get(base, document, "/api/v1/volume/top-corridors", {**days, "limit": "3"}),
    ]


def test_rollups_answer_what_a_full_scan_sums(
    tables: BigtableTables, api: tuple[str, dict[str, Any]]
) -> None:
    base, document = api
    store(tables)
    transfers = expected(tables)
    assert len([t for t in transfers if t["usd"] is not None]) == 13  # the WETH transfers
    first = min(t["day"] for t in transfers)
    last = max(t["day"] for t in transfers)
    totals, hourly, tokens, corridors = _answers(base, document, first, last)

    assert {k: totals["total"][k] for k in ("transfers", "pricedTransfers", "volumeUsd")} == _sum(
        transfers
    )
    by_day: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for t in transfers:
        by_day[(t["day"], t["source"])].append(t)
    assert [
        (row["period"], row["chain"], row["transfers"], row["pricedTransfers"], row["volumeUsd"])
        for row in totals["data"]
    ] == [(day, chain, *_sum(items).values()) for (day, chain), items in sorted(by_day.items())]
    by_hour: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in transfers:
        if t["source"] == 2:
            by_hour[t["hour"]].append(t)
    assert [(row["period"], row["transfers"], row["volumeUsd"]) for row in hourly["data"]] == [
        (hour, len(items), _sum(items)["volumeUsd"]) for hour, items in sorted(by_hour.items())
    ]

    by_token: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for t in transfers:
        by_token[t["token"]].append(t)
    assert len(tokens["data"]) == min(100, len(by_token))
    top = tokens["data"][0]
    assert (top["tokenChain"], top["tokenAddress"]) == (2, WETH.hex())
    assert top["tokenNativeAddress"] == "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"
    for row in tokens["data"]:
        items = by_token[(row["tokenChain"], row["tokenAddress"])]
        assert (row["transfers"], row["volumeUsd"]) == (len(items), _sum(items)["volumeUsd"])
    by_corridor: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for t in transfers:
        by_corridor[(t["source"], t["target"])].append(t)
    ranked = sorted(
        by_corridor.items(),
        key=lambda i: (
            -Decimal(_sum(i[1])["volumeUsd"]),
            -len(i[1]),
            f"{i[0][0]:05d}:{i[0][1]:05d}",
        ),
    )[:3]
    assert [
        (row["sourceChain"], row["targetChain"], row["transfers"], row["volumeUsd"])
        for row in corridors["data"]
    ] == [(s, t, len(items), _sum(items)["volumeUsd"]) for (s, t), items in ranked]


def test_replays_reruns_and_late_prices_count_each_transfer_once(
    tables: BigtableTables, api: tuple[str, dict[str, Any]]
) -> None:
    base, document = api
    store(tables, prices=None)  # stored before any price was known
    unpriced = list(index_cells(tables, "vol:", "vol;"))
    assert unpriced
    assert {cell[3] for cell in unpriced} == {b""}
    store(tables)  # the same VAAs again, now with prices: notional written, nothing added
    priced = list(index_cells(tables, "vol:", "vol;"))
    assert [cell[:3] for cell in priced] == [cell[:3] for cell in unpriced]
    assert len({cell[3] for cell in priced}) > 1
    first = dt.datetime.fromtimestamp(T0 - 86_400, dt.UTC).date().isoformat()
    last = dt.datetime.fromtimestamp(T0 + 86_400 * 3, dt.UTC).date().isoformat()
    before = _answers(base, document, first, last)
    store(tables)
    reindex(tables)
    assert list(index_cells(tables, "vol:", "vol;")) == priced
    assert _answers(base, document, first, last) == before


@pytest.mark.parametrize(
    ("path", "query", "parameter"),
    [
        ("/api/v1/volume/totals", "from=2023-11-14", "to"),
        ("/api/v1/volume/totals", "from=2023-11-14&to=2023-11-14&by=week", "by"),
        ("/api/v1/volume/totals", "from=2023-11-14&to=2023-11-14&chain=mars", "chain"),
        ("/api/v1/volume/top-tokens", "from=2023-11-14&to=2023-11-14&limit=0", "limit"),
        ("/api/v1/volume/top-corridors", "from=2023-11-14&to=2023-11-14&top=3", "top"),
        ("/api/v1/volume/top-corridors", "from=2020-01-01&to=2023-11-14", "to"),
    ],
)
def test_bad_volume_parameters_are_named(
    api: tuple[str, dict[str, Any]], path: str, query: str, parameter: str
) -> None:
    base, document = api
    code, _, body = fetch(f"{base}{path}?{query}")
    answer = json.loads(body)
    assert code == 400
    check(document, path, 400, answer)
    assert answer["parameter"] == parameter
