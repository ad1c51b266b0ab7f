"""Response shapes are pure: rippled's JSON for headers, transactions, NFTs and errors."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from xrpl.core import binarycodec

from chainloom.ledger.api.errors import ERRORS, RpcError
from chainloom.ledger.api.shapes import (
    close_time_human,
    close_time_iso,
    decoded_transaction,
    error_body,
    header_json,
    ledger_transaction_json,
    nft_json,
    quality_text,
    success,
    transaction_json,
    websocket_body,
)
from chainloom.ledger.types import NFT, LedgerHeader, TransactionAndMetadata, nft_taxon

HEADER = LedgerHeader(
    sequence=38129,
    total_drops=99999999999996310,
    parent_hash=b"\x01" * 32,
    transaction_hash=b"\x02" * 32,
    account_hash=b"\x03" * 32,
    parent_close_time=410410190,
    close_time=410410200,
    close_time_resolution=10,
    close_flags=0,
    hash=b"\xab" * 32,
)


def test_close_times_count_from_the_ripple_epoch() -> None:
    assert close_time_iso(0) == "2000-01-01T00:00:00Z"
    assert close_time_iso(410410200) == "2013-01-02T02:50:00Z"
    assert close_time_human(410410200) == "2013-Jan-02 02:50:00.000000000 UTC"


def test_header_shapes_per_api_version() -> None:
    v1 = header_json(HEADER, 1)
    v2 = header_json(HEADER, 2)
    assert v1["ledger_index"] == "38129"
    assert v2["ledger_index"] == 38129
    assert v1["ledger_hash"] == "AB" * 32
    assert v1["total_coins"] == "99999999999996310"
    assert v1["closed"] is True
    assert v1["parent_hash"] == "01" * 32


def test_success_and_error_objects() -> None:
    assert success({"a": 1}) == {"result": {"a": 1, "status": "success"}}
    refused = RpcError("txnNotFound", extra={"searched_all": False})
    body = error_body(refused, "tx", {"transaction": "AB"})
    assert body == {
        "result": {
            "error": "txnNotFound",
            "error_code": 29,
            "error_message": "Transaction not found.",
            "request": {"transaction": "AB", "command": "tx"},
            "status": "error",
            "searched_all": False,
        }
    }
    assert refused.http_status == 404


def test_rippled_error_numbers_and_statuses() -> None:
    expected = {
        "lgrNotFound": (21, 404),
        "txnNotFound": (29, 404),
        "actNotFound": (19, 200),
        "invalidParams": (31, 400),
        "unknownCmd": (32, 405),
        "objectNotFound": (92, 404),
        "entryNotFound": (98, 400),
    }
    for token, (code, status) in expected.items():
        assert (ERRORS[token].code, ERRORS[token].http_status) == (code, status)


def test_nft_fields_come_from_the_token_id() -> None:
    token = bytes.fromhex(
        "000827100000000000000000000000000000000000000001" + "1E2D3C4B" + "00000007"
    )
    nft = NFT(token, 38130, b"\x05" * 20, b"ipfs://x", False)
    shaped = nft_json(nft, 38131)
    assert shaped["flags"] == 8
    assert shaped["transfer_fee"] == 10000
    assert shaped["nft_serial"] == 7
    assert shaped["nft_taxon"] == nft_taxon(token)
    assert shaped["uri"] == b"ipfs://x".hex().upper()
    assert shaped["ledger_index"] == 38131
    assert shaped["is_burned"] is False


def test_offer_quality_from_the_book_directory() -> None:
    # exponent byte 0x5D = 93 -> 10^-7; mantissa 2 * 10^15
    quality = (0x5D << 56) | 2_000_000_000_000_000
    assert quality_text(b"\x00" * 24 + quality.to_bytes(8, "big")) == "200000000"
    assert quality_text(b"\x00" * 32) == "0"


def test_websocket_answers_carry_the_id() -> None:
    ok = websocket_body("a", {"ledger_index": 5, "status": "success"})
    assert ok == {"id": "a", "result": {"ledger_index": 5}, "status": "success", "type": "response"}
    refused = error_body(RpcError("lgrNotFound"), "ledger", {})["result"]
    answer = websocket_body(3, refused)
    assert (answer["id"], answer["error"], answer["type"]) == (3, "lgrNotFound", "response")


def _payment() -> TransactionAndMetadata:
    account = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
    tx = {
        "TransactionType": "Payment",
        "Account": account,
        "Destination": account,
        "Amount": {"currency": "USD", "issuer": account, "value": "1.5"},
        "Sequence": 3,
        "Fee": "10",
        "SigningPubKey": "",
        "Memos": [{"Memo": {"MemoData": "AB"}}],
    }
    meta = {"TransactionIndex": 0, "TransactionResult": "tesSUCCESS", "AffectedNodes": []}
    return TransactionAndMetadata(
        transaction=bytes.fromhex(binarycodec.encode(tx)),
        metadata=bytes.fromhex(binarycodec.encode(meta)),
        ledger_sequence=HEADER.sequence,
        date=HEADER.close_time,
    )  # fmt: skip


def test_a_remembered_transaction_is_shaped_as_a_fresh_one_whatever_was_asked_before() -> None:
    tx, tx_hash = _payment(), b"\xcd" * 32
    shapes: list[Callable[[], dict[str, Any]]] = [
        lambda: transaction_json(tx, tx_hash, api_version=1, binary_output=False,
                                 ledger_hash=None, nested=False),
        lambda: transaction_json(tx, tx_hash, api_version=2, binary_output=False,
                                 ledger_hash=HEADER.hash, nested=True),
        lambda: transaction_json(tx, tx_hash, api_version=1, binary_output=False,
                                 ledger_hash=None, nested=True),
        lambda: ledger_transaction_json(tx, tx_hash, api_version=1, binary_output=False),
        lambda: ledger_transaction_json(tx, tx_hash, api_version=2, binary_output=False),
    ]  # fmt: skip
    decoded_transaction.cache_clear()
    fresh = []
    for shape in shapes:  # each from an empty memo
        decoded_transaction.cache_clear()
        fresh.append(copy.deepcopy(shape()))
    remembered = [shape() for shape in shapes] + [shape() for shape in reversed(shapes)]
    assert remembered == fresh + fresh[::-1]
    assert decoded_transaction.cache_info().misses == 1  # decoded once, shaped ten times
    v2 = remembered[1]
    assert "hash" not in v2["tx_json"]  # version 1's hash never leaks into the shared fields
    assert v2["tx_json"]["Memos"] == [{"Memo": {"MemoData": "AB"}}]
