"""The subscription streams' messages and filters are pure: built from a stored ledger.

Transactions and metadata are written with xrpl-py's encoder, so the blobs are what rippled
stores; the messages are compared with rippled's shapes (``pubLedger``,
``pubValidatedTransaction``) and the routing with its rules (affected accounts, book listeners).
"""

from __future__ import annotations

from typing import Any

import orjson
from xrpl.core import binarycodec

from chainloom.ledger.api.streams import (
    XRP_ISSUE,
    Fees,
    StoredTransaction,
    fees_of,
    ledger_closed,
    ledger_messages,
    result_message,
    subscribed_book,
    transaction_message,
)
from chainloom.ledger.types import LedgerHeader, TransactionAndMetadata
from chainloom.ledger.xrpl.address import decode_account

MAKER = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
ISSUER = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"
OTHER = "rLHzPsX6oXkzU2qL12kHCH8G8cnZv1rBJh"
USD = "0000000000000000000000005553440000000000"

HEADER = LedgerHeader(
    sequence=38130,
    total_drops=99999999999996300,
    parent_hash=b"\x01" * 32,
    transaction_hash=b"\x02" * 32,
    account_hash=b"\x03" * 32,
    parent_close_time=410410200,
    close_time=410410210,
    close_time_resolution=10,
    close_flags=0,
    hash=b"\xcd" * 32,
)


def _offer_create(index: int, result: str = "tesSUCCESS") -> StoredTransaction:
    """An OfferCreate selling USD for XRP whose metadata creates the offer."""
    tx = {
        "TransactionType": "OfferCreate",
        "Account": MAKER,
        "Sequence": 7 + index,
        "Fee": "10",
        "Flags": 0,
        "TakerGets": {"currency": "USD", "issuer": ISSUER, "value": "5"},
        "TakerPays": "1000000",
        "SigningPubKey": "",
    }
    meta = {
        "TransactionIndex": index,
        "TransactionResult": result,
        "AffectedNodes": [
            {
                "CreatedNode": {
                    "LedgerEntryType": "Offer",
                    "LedgerIndex": f"{index:064X}",
                    "NewFields": {
                        "Account": MAKER,
                        "Sequence": 7 + index,
                        "TakerGets": {"currency": "USD", "issuer": ISSUER, "value": "5"},
                        "TakerPays": "1000000",
                        "BookDirectory": "AB" * 32,
                    },
                }
            },
        ],
    }
    blob = bytes.fromhex(binarycodec.encode(tx))
    return StoredTransaction(
        hash=bytes([index]) * 32,
        stored=TransactionAndMetadata(
            transaction=blob,
            metadata=bytes.fromhex(binarycodec.encode(meta)),
            ledger_sequence=HEADER.sequence,
            date=HEADER.close_time,
        ),
    )


def _payment(index: int) -> StoredTransaction:
    tx = {
        "TransactionType": "Payment",
        "Account": OTHER,
        "Destination": ISSUER,
        "Amount": "25",
        "Sequence": 3,
        "Fee": "10",
        "SigningPubKey": "",
    }
    meta = {
        "TransactionIndex": index,
        "TransactionResult": "tesSUCCESS",
        "AffectedNodes": [
            {
                "ModifiedNode": {
                    "LedgerEntryType": "AccountRoot",
                    "LedgerIndex": "11" * 32,
                    "FinalFields": {"Account": OTHER, "Balance": "975", "Flags": 0,
                                    "OwnerCount": 0, "Sequence": 4},
                    "PreviousFields": {"Balance": "1000"},
                }
            }
        ],
    }  # fmt: skip
    return StoredTransaction(
        hash=bytes([0xF0 + index]) * 32,
        stored=TransactionAndMetadata(
            transaction=bytes.fromhex(binarycodec.encode(tx)),
            metadata=bytes.fromhex(binarycodec.encode(meta)),
            ledger_sequence=HEADER.sequence,
            date=HEADER.close_time,
        ),
    )


def test_ledger_closed_has_rippleds_fields() -> None:
    message = ledger_closed(HEADER, Fees(10, 20_000_000, 5_000_000, 10), 38129, 3)
    assert message == {
        "type": "ledgerClosed",
        "ledger_index": 38130,
        "ledger_hash": "CD" * 32,
        "ledger_time": 410410210,
        "fee_ref": 10,
        "fee_base": 10,
        "reserve_base": 20_000_000,
        "reserve_inc": 5_000_000,
        "validated_ledgers": "38129-38130",
        "txn_count": 3,
    }
    without_fees = ledger_closed(HEADER, None, 38129, 0)
    assert "fee_base" not in without_fees


def test_fees_come_from_either_form_of_fee_settings() -> None:
    old = {
        "LedgerEntryType": "FeeSettings",
        "Flags": 0,
        "BaseFee": "A",
        "ReferenceFeeUnits": 10,
        "ReserveBase": 20000000,
        "ReserveIncrement": 5000000,
    }
    new = {"LedgerEntryType": "FeeSettings", "Flags": 0, "BaseFeeDrops": "10",
           "ReserveBaseDrops": "1000000", "ReserveIncrementDrops": "200000"}  # fmt: skip
    assert fees_of(bytes.fromhex(binarycodec.encode(old))) == Fees(10, 20000000, 5000000, 10)
    assert fees_of(bytes.fromhex(binarycodec.encode(new))) == Fees(10, 1000000, 200000, None)
    assert fees_of(None) is None


def test_transaction_message_per_api_version() -> None:
    tx = _offer_create(0)
    v1 = transaction_message(HEADER, tx, 1)
    v2 = transaction_message(HEADER, tx, 2)
    common = {
        "type": "transaction",
        "validated": True,
        "status": "closed",
        "ledger_index": 38130,
        "ledger_hash": "CD" * 32,
        "close_time_iso": "2013-01-02T02:50:10Z",
        "engine_result": "tesSUCCESS",
        "engine_result_code": 0,
        "engine_result_message": "The transaction was applied. Only final in a validated ledger.",
    }
    for message in (v1, v2):
        assert {key: message[key] for key in common} == common
        assert message["meta"]["TransactionIndex"] == 0
    assert v1["transaction"]["hash"] == "00" * 32
    assert v1["transaction"]["date"] == 410410210
    assert "hash" not in v1
    assert v2["hash"] == "00" * 32
    assert "hash" not in v2["tx_json"]
    assert v2["tx_json"]["TakerGets"] == {"currency": "USD", "issuer": ISSUER, "value": "5"}


def test_a_failed_transaction_carries_its_tec_result() -> None:
    message = transaction_message(HEADER, _offer_create(0, "tecUNFUNDED_OFFER"), 2)
    assert message["engine_result"] == "tecUNFUNDED_OFFER"
    assert message["engine_result_code"] == 103
    assert message["engine_result_message"] == "Insufficient balance to fund created offer."
    assert result_message("terQUEUED") == "-"  # never in a validated ledger


def test_ledger_messages_order_route_and_serialize_once() -> None:
    messages = ledger_messages(HEADER, [_payment(1), _offer_create(0)], None, 38129)
    assert orjson.loads(messages.ledger_closed)["txn_count"] == 2
    assert orjson.loads(messages.book_changes)["type"] == "bookChanges"
    first, second = messages.transactions
    decoded: list[dict[str, Any]] = [orjson.loads(tx.text(2)) for tx in messages.transactions]
    assert [m["meta"]["TransactionIndex"] for m in decoded] == [0, 1]
    assert "transaction" in orjson.loads(first.text(1))
    assert first.text(3) == first.text(2)
    assert decode_account(MAKER) in first.accounts
    assert decode_account(ISSUER) in first.accounts  # the issuer of TakerGets
    assert second.accounts == {decode_account(OTHER)}
    usd = (bytes.fromhex(USD), decode_account(ISSUER))
    # rippled keys an offer's listeners by (TakerGets, TakerPays): the offer selling USD for
    # XRP reaches a subscription whose taker_pays is USD and taker_gets XRP.
    assert first.books == {subscribed_book(taker_pays=usd, taker_gets=XRP_ISSUE)}
    assert second.books == frozenset()
