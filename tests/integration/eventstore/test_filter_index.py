"""Filtered lists from the filter index rows, against the real Bigtable emulator.

Every filter and combination, in both orders and walked a page at a time, must return exactly
what a full scan of the events table filtered in Python returns (:mod:`.filter_dataset`
computes it from the cells, not from the product's index code). Storing the same VAAs again
must leave every index cell as it was, and ``reindex`` must rebuild the filter rows of
messages stored before them cell for cell.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.cloud.bigtable.data import RowMutationEntry
from google.cloud.bigtable.data.mutations import DeleteAllFromRow

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.reindex import reindex
from chainloom.eventstore.writer import EventWriter
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from tests.integration.eventstore.filter_dataset import (
    ALICE_EIP55,
    ALICE_HEX,
    BOB,
    BOB_BASE58,
    EMITTERS,
    KIT,
    T0,
    TX,
    WETH,
    Scanned,
    index_cells,
    inputs,
    scanned,
)
from tests.integration.eventstore.test_events_api import fetch, running
from tests.unit.eventstore.api.schema_check import check


def store(tables: BigtableTables) -> None:
    with EventWriter(tables, KIT.sets(0), emitters=EMITTERS) as writer:
        for item in inputs():
            writer.submit(item.raw, initiating_tx_id=item.tx_id, sender=item.sender)


@dataclass
class Served:
    base: str
    document: dict[str, Any]
    messages: list[Scanned]


@pytest.fixture
def served(tables: BigtableTables) -> Iterator[Served]:
    store(tables)
    with running(tables) as base:
        _, _, body = fetch(base + "/openapi.json")
        yield Served(base, json.loads(body), scanned(tables))


def walk(served: Served, path: str, query: dict[str, str], size: int) -> list[str]:
    """Every id of a list, following the cursors; each page checked against the document."""
    template = "/api/v1/vaas" if path == "/api/v1/vaas" else "/api/v1/addresses/{chain}/{address}"
    ids: list[str] = []
    cursor = None
    for _ in range(500):
        asked = {**query, "pageSize": str(size)} | ({"cursor": cursor} if cursor else {})
        code, _, body = fetch(f"{served.base}{path}?{urllib.parse.urlencode(asked)}")
        assert code == 200, body
        page = json.loads(body)
        check(served.document, template, 200, page)
        assert len(page["data"]) <= size
        ids += [item["id"] for item in page["data"]]
        cursor = page["pagination"]["next"]
        if cursor is None:
            assert len(ids) == len(set(ids)), "a message was listed twice"
            return ids
    raise AssertionError("the walk did not end")


Where = Callable[[Scanned], bool]
TOKEN = f"2/{WETH.hex()}"
BOB_NATIVE = BOB_BASE58


def _filters() -> list[tuple[dict[str, str], Where]]:
    dev = DEV_TOKEN_BRIDGE_EMITTER.hex()
    return [
        ({}, lambda m: True),
        ({"sourceChain": "2"}, lambda m: m.source_chain == 2),
        ({"sourceChain": "bsc"}, lambda m: m.source_chain == 4),
        ({"targetChain": "solana"}, lambda m: m.target_chain == 1),
        ({"targetChain": "6"}, lambda m: m.target_chain == 6),
        ({"emitter": "0x" + dev.lstrip("0")}, lambda m: m.emitter == dev),
        ({"payloadType": "1"}, lambda m: m.payload_type == 1),
        ({"payloadType": "3,2"}, lambda m: m.payload_type in {2, 3}),
        ({"tokenChain": "ethereum", "tokenAddress": WETH.hex()[24:]}, lambda m: m.token == TOKEN),
        (
            {"sourceChain": "2", "sender": ALICE_EIP55.upper().replace("0X", "0x")},
            lambda m: m.source_chain == 2 and m.sender == "0x" + ALICE_HEX,
        ),
        (
            {"sourceChain": "4", "sender": "0x" + "00" * 12 + ALICE_HEX},
            lambda m: m.source_chain == 4 and m.sender == "0x" + ALICE_HEX,
        ),
        (
            {"targetChain": "1", "recipient": BOB_NATIVE},
            lambda m: m.target_chain == 1 and m.recipient == BOB_NATIVE,
        ),
        (
            {"targetChain": "1", "recipient": BOB.hex()},
            lambda m: m.target_chain == 1 and m.recipient == BOB_NATIVE,
        ),
        ({"txHash": TX.upper().replace("0X", "0x")}, lambda m: m.tx_hash == TX),
        (
            {"from": "2023-11-14T22:30:00Z", "to": "2023-11-14T23:00:00+00:00"},
            lambda m: T0 + 1000 <= m.timestamp < T0 + 2800,
        ),
        ({"from": "2023-11-15"}, lambda m: m.timestamp >= 1_700_006_400),
        (
            {"sourceChain": "2", "payloadType": "3", "targetChain": "1"},
            lambda m: (m.source_chain, m.payload_type, m.target_chain) == (2, 3, 1),
        ),
        (
            {"emitter": dev, "from": "2023-11-14", "to": "2023-11-14T22:40Z"},
            lambda m: m.emitter == dev and m.timestamp < T0 + 1600,
        ),
        (
            {"tokenChain": "2", "tokenAddress": WETH.hex(), "targetChain": "ethereum"},
            lambda m: m.token == TOKEN and m.target_chain == 2,
        ),
        ({"txHash": TX, "sourceChain": "2", "payloadType": "3"}, lambda m: m.tx_hash == TX),
        (
            {"sourceChain": "30", "payloadType": "2"},
            lambda m: m.source_chain == 30 and m.payload_type == 2,
        ),
    ]


def test_every_filter_matches_a_full_scan_in_both_orders(served: Served) -> None:
    nonempty = 0
    for query, where in _filters():
        expected = [m.id for m in served.messages if where(m)]
        nonempty += bool(expected)
        for size in (7, 1000):
            ascending = walk(served, "/api/v1/vaas", {**query, "order": "asc"}, size)
            assert ascending == expected, query
            descending = walk(served, "/api/v1/vaas", query, size)  # desc is the default
            assert descending == expected[::-1], query
    assert nonempty >= len(_filters()) - 1  # the filters are not vacuous


def test_address_history_covers_both_roles_once(served: Served) -> None:
    alice = [m.id for m in served.messages
             if (m.source_chain, m.sender) == (2, "0x" + ALICE_HEX)
             or (m.target_chain, m.recipient) == (2, "0x" + ALICE_HEX)]  # fmt: skip
    assert len(alice) == 6 + 6 + 1  # sent 6, received 6, one to herself
    for form in (ALICE_EIP55, ALICE_HEX.upper(), "00" * 12 + ALICE_HEX):
        assert walk(served, f"/api/v1/addresses/ethereum/{form}", {"order": "asc"}, 4) == alice
    assert walk(served, f"/api/v1/addresses/2/{ALICE_EIP55}", {}, 5) == alice[::-1]
    bob = [m.id for m in served.messages if (m.target_chain, m.recipient) == (1, BOB_NATIVE)]
    assert len(bob) == 6
    for form in (BOB_BASE58, BOB.hex(), "0x" + BOB.hex()):
        assert walk(served, f"/api/v1/addresses/solana/{form}", {"order": "asc"}, 4) == bob
    transfers = walk(served, f"/api/v1/addresses/1/{BOB_BASE58}", {"payloadType": "1"}, 4)
    assert transfers == []
    code, _, body = fetch(f"{served.base}/api/v1/addresses/2/{ALICE_HEX}?pageSize=2")
    document = json.loads(body)
    assert code == 200
    assert (document["address"], document["chain"]) == (ALICE_EIP55, 2)


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("pagesize=5", "pagesize"),
        ("appId=PORTAL", "appId"),
        ("order=newest", "order"),
        ("payloadType=1,x", "payloadType"),
        ("sender=0x11", "sender"),
        ("targetChain=1&recipient=", "recipient"),
        ("tokenChain=2", "tokenAddress"),
        ("from=2023-11-15&to=2023-11-14", "to"),
        ("from=yesterday", "from"),
        ("cursor=abc", "cursor"),
        ("pageSize=0", "pageSize"),
    ],
)
def test_bad_parameters_are_named(served: Served, query: str, parameter: str) -> None:
    code, _, body = fetch(f"{served.base}/api/v1/vaas?{query}")
    assert code == 400, body
    document = json.loads(body)
    check(served.document, "/api/v1/vaas", 400, document)
    assert document["parameter"] == parameter


def test_a_cursor_is_bound_to_its_filters_and_order(served: Served) -> None:
    code, _, body = fetch(f"{served.base}/api/v1/vaas?sourceChain=2&pageSize=2")
    cursor = json.loads(body)["pagination"]["next"]
    assert code == 200
    assert cursor
    for other in ("sourceChain=4", "sourceChain=2&order=asc", "sourceChain=2&payloadType=1"):
        code, _, body = fetch(f"{served.base}/api/v1/vaas?{other}&cursor={cursor}")
        assert (code, json.loads(body)["parameter"]) == (400, "cursor"), other
    code, _, _ = fetch(f"{served.base}/api/v1/vaas?sourceChain=2&cursor={cursor}")
    assert code == 200


def _filter_rows(tables: BigtableTables) -> list[tuple[Any, ...]]:
    return list(index_cells(tables, "fa:", "fe"))


def test_a_replay_leaves_every_index_cell_as_it_was(tables: BigtableTables) -> None:
    store(tables)
    before = list(index_cells(tables))
    filter_rows = _filter_rows(tables)
    assert len(filter_rows) > 2 * 4 * len(scanned(tables))  # at least all, src, em + one
    store(tables)
    assert list(index_cells(tables)) == before


def test_reindex_rebuilds_the_filter_rows_cell_for_cell(tables: BigtableTables) -> None:
    store(tables)
    written = _filter_rows(tables)
    keys = sorted({cell[0] for cell in written})
    tables.index.bulk_mutate_rows([RowMutationEntry(k, [DeleteAllFromRow()]) for k in keys])
    assert _filter_rows(tables) == []
    summary = reindex(tables, batch_rows=50)
    assert summary.indexed == len(scanned(tables))
    assert summary.index_rows >= len(keys)  # and the volume rollup rows, rewritten as they were
    assert _filter_rows(tables) == written
    again = reindex(tables, chain=2)
    assert again.index_rows > 0
    assert _filter_rows(tables) == written
