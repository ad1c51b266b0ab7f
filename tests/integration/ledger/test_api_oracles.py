"""``get_aggregate_price`` over real stores: price Oracles written through the backend, the
statistics computed here with Python's ``statistics`` module."""

from __future__ import annotations

import statistics
from decimal import Decimal
from typing import Any

from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.requests import GetAggregatePrice
from xrpl.models.requests.ledger_entry import Oracle

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.address import encode_account
from tests.integration.ledger.test_conformance import Store, store, write_ledger  # noqa: F401

SEQUENCE = 700
PRICES = [
    (b"\x01" * 20, 1, 74_450, 3, 1_000),
    (b"\x02" * 20, 7, 74_600, 3, 1_030),
    (b"\x03" * 20, 2, 7_390, 2, 1_060),
    (b"\x04" * 20, 4, 749_000, 4, 400),
]
"""(owner, document ID, AssetPrice, Scale, LastUpdateTime) of each Oracle's XRP/USD price."""


def _oracle(price: int, scale: int, updated: int) -> bytes:
    series = [
        {
            "PriceData": {
                "BaseAsset": "XRP",
                "QuoteAsset": "USD",
                "AssetPrice": format(price, "X"),
                "Scale": scale,
            }
        },
        {"PriceData": {"BaseAsset": "XRP", "QuoteAsset": "EUR", "AssetPrice": "1", "Scale": 0}},
    ]
    return bytes.fromhex(
        binarycodec.encode(
            {
                "LedgerEntryType": "Oracle",
                "Flags": 0,
                "Owner": encode_account(b"\x09" * 20),
                "Provider": "70726F7669646572",
                "AssetClass": "63757272656E6379",
                "LastUpdateTime": updated,
                "PriceDataSeries": series,
                "OwnerNode": "0",
                "PreviousTxnID": "00" * 32,
                "PreviousTxnLgrSeq": 1,
            }
        )
    )


def _serve_oracles(store: Store) -> Any:  # noqa: F811
    objects = {
        keylets.oracle(owner, document): _oracle(price, scale, updated)
        for owner, document, price, scale, updated in PRICES
    }
    assert write_ledger(store.open(), SuccessorTracker(), SEQUENCE, objects, initial=True)
    reader = store.open()
    reader.hard_fetch_ledger_range()
    return ServerThread(reader)


def test_aggregate_price_statistics(store: Store) -> None:  # noqa: F811
    server = _serve_oracles(store)
    port = server.start()
    oracles = [Oracle(account=encode_account(o), oracle_document_id=d) for o, d, *_ in PRICES]
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        whole = client.request(
            GetAggregatePrice(base_asset="XRP", quote_asset="USD", oracles=oracles, trim=25)
        )
        recent = client.request(
            GetAggregatePrice(
                base_asset="XRP", quote_asset="USD", oracles=oracles, time_threshold=100
            )
        )
        missing = client.request(
            GetAggregatePrice(base_asset="XRP", quote_asset="JPY", oracles=oracles)
        )
    finally:
        server.stop()
    prices = [Decimal(p).scaleb(-s) for _, _, p, s, _ in PRICES]
    assert whole.is_successful(), whole.result
    result = whole.result
    assert result["time"] == 1_060
    assert result["entire_set"]["size"] == 4
    assert Decimal(result["entire_set"]["mean"]) == statistics.mean(prices)
    assert abs(
        Decimal(result["entire_set"]["standard_deviation"])
        - Decimal(statistics.stdev([float(p) for p in prices]))
    ) < Decimal("1e-9")
    assert Decimal(result["median"]) == statistics.median(prices)
    trimmed = sorted(prices)[1:3]
    assert result["trimmed_set"]["size"] == 2
    assert Decimal(result["trimmed_set"]["mean"]) == statistics.mean(trimmed)
    assert recent.is_successful(), recent.result
    assert recent.result["entire_set"]["size"] == 3  # the 400 s update is too old
    assert missing.result["error"] == "objectNotFound"
