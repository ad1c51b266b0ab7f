"""``book_changes`` over real stores: a ledger of offer fills, written through the backend.

The generated histories never cross offers, so this test writes its own ledger: OfferCreate
transactions whose metadata (encoded with xrpl-py's codec) shrink resting offers, plus fills
that must not count (a created offer, a cancelled one, a fill of zero). The expected volumes and
rates are the arithmetic of the amounts written here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.requests import GenericRequest

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.hashing import sha512_half, transaction_id
from tests.integration.ledger.test_conformance import Store, make_header, store  # noqa: F401

SEQUENCE = 900
TAKER = encode_account(b"\x01" * 20)
MAKER = encode_account(b"\x02" * 20)
GATEWAY = encode_account(b"\x03" * 20)


def _usd(value: str) -> dict[str, str]:
    return {"currency": "USD", "issuer": GATEWAY, "value": value}


def _eur(value: str) -> dict[str, str]:
    return {"currency": "EUR", "issuer": GATEWAY, "value": value}


def _offer_node(kind: str, before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = {
        "LedgerEntryType": "Offer",
        "LedgerIndex": sha512_half(repr(after).encode()).hex().upper(),
        "FinalFields" if kind != "CreatedNode" else "NewFields": {
            "Account": MAKER, "Sequence": 5, "Flags": 0, "BookNode": "0", "OwnerNode": "0",
            "BookDirectory": "AB" * 32, **after,
        },
    }  # fmt: skip
    if before is not None:
        node["PreviousFields"] = before
    return {kind: node}


FILLS: list[list[dict[str, Any]]] = [
    # tx 0: 1 XRP for 2 USD, and 3 EUR bought for 1.5 USD (a pair of two issued assets)
    [
        _offer_node("ModifiedNode", {"TakerGets": _usd("10"), "TakerPays": "5000000"},
                    {"TakerGets": _usd("8"), "TakerPays": "4000000"}),
        _offer_node("DeletedNode", {"TakerGets": _eur("3"), "TakerPays": _usd("1.5")},
                    {"TakerGets": _eur("0"), "TakerPays": _usd("0")}),
    ],
    # tx 1: 3 XRP for 4 USD (a worse rate), a created offer and a cancelled one (no fills)
    [
        _offer_node("ModifiedNode", {"TakerGets": "9000000", "TakerPays": _usd("20")},
                    {"TakerGets": "6000000", "TakerPays": _usd("16")}),
        _offer_node("CreatedNode", None, {"TakerGets": "1000000", "TakerPays": _usd("1")}),
        _offer_node("DeletedNode", None, {"TakerGets": "1000000", "TakerPays": _usd("1")}),
    ],
]  # fmt: skip


def _write(backend: Any) -> None:
    header = make_header(SEQUENCE)
    backend.start_writes()
    backend.write_ledger(header, header.serialize(include_hash=True))
    for index, nodes in enumerate(FILLS):
        tx = bytes.fromhex(binarycodec.encode({
            "TransactionType": "OfferCreate", "Account": TAKER, "Fee": "12", "Sequence": index + 1,
            "TakerGets": "1", "TakerPays": _usd("1"), "SigningPubKey": "",
        }))  # fmt: skip
        meta = bytes.fromhex(binarycodec.encode({
            "TransactionIndex": index, "TransactionResult": "tesSUCCESS", "AffectedNodes": nodes,
        }))  # fmt: skip
        backend.write_transaction(transaction_id(tx), SEQUENCE, header.close_time, tx, meta)
    assert backend.finish_writes(SEQUENCE)


def test_book_changes_sum_the_fills_per_pair(store: Store) -> None:  # noqa: F811
    _write(store.open())
    reader = store.open()
    reader.hard_fetch_ledger_range()
    server = ServerThread(reader)
    port = server.start()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        result = client.request(GenericRequest(method="book_changes", ledger_index=SEQUENCE))
        empty = client.request(GenericRequest(method="book_changes", ledger_index=SEQUENCE + 1))
    finally:
        server.stop()
    assert result.is_successful(), result.result
    body = result.result
    assert (body["type"], body["ledger_index"]) == ("bookChanges", SEQUENCE)
    changes = {(c["currency_a"], c["currency_b"]): c for c in body["changes"]}
    xrp_usd = changes.pop(("XRP_drops", f"{GATEWAY}/USD"))
    rates = [Decimal(1_000_000) / Decimal(2), Decimal(3_000_000) / Decimal(4)]
    assert Decimal(xrp_usd["volume_a"]) == 4_000_000
    assert Decimal(xrp_usd["volume_b"]) == 6
    assert Decimal(xrp_usd["open"]) == rates[0]
    assert Decimal(xrp_usd["close"]) == rates[1]
    assert (Decimal(xrp_usd["low"]), Decimal(xrp_usd["high"])) == (min(rates), max(rates))
    eur_usd = changes.pop((f"{GATEWAY}/EUR", f"{GATEWAY}/USD"))
    assert (Decimal(eur_usd["volume_a"]), Decimal(eur_usd["volume_b"])) == (
        Decimal(3),
        Decimal("1.5"),
    )
    assert Decimal(eur_usd["open"]) == 2
    assert changes == {}
    assert empty.result["error"] == "lgrNotFound"
