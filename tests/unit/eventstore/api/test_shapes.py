"""Rows to answers: decoded fields, the signed VAA as base64, enrichment; all in the document."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

from chainloom.eventstore import schema
from chainloom.eventstore.api import models, shapes
from chainloom.eventstore.api.app import document
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.schema import Q
from chainloom.wormhole.sequences import GapBook
from tests.unit.eventstore.api.rows import stored_row, transfer_vaa
from tests.unit.eventstore.api.schema_check import check

VAA_PATH = "/api/v1/vaas/{chain}/{emitter}/{seq}"


def _answer(model: models.ApiModel) -> Any:
    return json.loads(shapes.body(model))


def test_a_signed_enriched_transfer() -> None:
    vaa = transfer_vaa()
    key = MessageKey.parse(vaa.message_id)
    doc = _answer(models.VaaResponse(data=shapes.vaa_doc(key, stored_row(vaa, tx="0xAB"))))
    check(document(), VAA_PATH, 200, doc)
    data = doc["data"]
    assert isinstance(data, dict)
    assert data["id"] == vaa.message_id
    assert data["sequence"] == 9
    assert data["emitterChain"] == 2
    assert data["emitterAddr"] == vaa.emitter_address.hex()
    assert data["emitterNativeAddr"].startswith("0x")
    assert (data["version"], data["nonce"], data["guardianSetIndex"]) == (1, 5, 0)
    assert data["timestamp"] == "2022-04-15T05:20:00Z"
    assert data["txHash"] == "0xAB"
    assert data["digest"] == vaa.digest.hex()
    assert base64.b64decode(data["vaa"]) == vaa.to_bytes()
    assert data["isDuplicated"] is False
    assert data["payload"] == {
        "payloadType": 1,
        "kind": "TokenTransfer",
        "amount": str(3 * 10**8),
        "fee": "7",
        "tokenAddress": "00" * 12 + "c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2",
        "tokenChain": 2,
        "toAddress": "00" * 12 + "aa" * 20,
        "toChain": 4,
        "fromAddress": None,
        "payload": None,
        "decimals": None,
        "symbol": None,
        "name": None,
        "tokenId": None,
        "uri": None,
    }
    details = data["tokenTransferDetails"]
    assert details["amount"] == "3.00000000"
    assert details["originSymbol"] == "WETH"
    assert details["notionalUsd"] == "6.000000"
    assert data["chainDetails"]["receiverAddress"].lower() == "0x" + "aa" * 20


def test_a_row_without_quorum_or_enrichment_has_nulls_not_missing_keys() -> None:
    vaa = transfer_vaa(signers=[0])
    row = stored_row(vaa, enrich=False)
    doc = shapes.vaa_doc(MessageKey.parse(vaa.message_id), row)
    assert doc.vaa is None
    assert doc.token_transfer_details is None
    assert doc.tx_hash is None
    answer = _answer(models.VaaResponse(data=doc))
    check(document(), VAA_PATH, 200, answer)
    assert set(answer["data"]) == set(models.VaaDoc.model_json_schema(by_alias=True)["required"])


def test_conflicts_show_as_duplicated() -> None:
    vaa = transfer_vaa()
    row = stored_row(vaa)
    row[schema.QUORUM_STATE][Q.CONFLICT_PREFIX + "ab" * 32] = b"other"
    assert shapes.vaa_doc(MessageKey.parse(vaa.message_id), row).is_duplicated


def test_daily_stats_by_day_then_chain() -> None:
    counts = {(4, "2024-01-02"): 3, (2, "2024-01-02"): 1, (30, "2024-01-01"): 5}
    stats = shapes.daily_stats(counts, dt.date(2024, 1, 1), dt.date(2024, 1, 3), None)
    answer = _answer(stats)
    check(document(), "/api/v1/stats/daily", 200, answer)
    assert answer["from"] == "2024-01-01"
    assert answer["total"] == 9
    assert [(d["date"], d["chain"]) for d in answer["data"]] == [
        ("2024-01-01", 30),
        ("2024-01-02", 2),
        ("2024-01-02", 4),
    ]
    assert answer["data"][1]["chainName"] == "ethereum"


def test_gaps_keep_the_failures() -> None:
    book = GapBook()
    emitter = "ab" * 32
    for sequence in (1, 2, 6, 9):
        book.see(2, emitter, sequence, at=100.0)
    book.failed((2, emitter, 4), "not_found", "every endpoint: NotFound", at=160.0)
    answer = _answer(shapes.gaps_response(book.open_gaps(), 1, []))
    check(document(), "/api/v1/gaps", 200, answer)
    assert answer["missing"] == 5
    first, second = answer["data"]
    assert (first["first"], first["last"], first["attempts"]) == (3, 5, 1)
    assert first["lastError"] == "not_found: every endpoint: NotFound"
    assert first["failures"][0]["sequence"] == 4
    assert (second["first"], second["last"], second["failures"]) == (7, 8, [])


def test_error_bodies() -> None:
    body = json.loads(shapes.error_body("bad_request", "pageSize: no", "pageSize"))
    check(document(), VAA_PATH, 400, body)
    assert body == {"error": "bad_request", "reason": "pageSize: no", "parameter": "pageSize"}
