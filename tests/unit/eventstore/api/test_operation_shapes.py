"""Rows (and the relayer's word) to operation documents: source, VAA, payload, target side."""

from __future__ import annotations

import json
from typing import Any

from chainloom.eventstore.api import shapes
from chainloom.eventstore.api.app import document
from chainloom.eventstore.api.operation_shapes import operation_doc, redemption_key
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.redemptions import Redemption
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from tests.unit.eventstore import builders
from tests.unit.eventstore.api.rows import KIT, WETH, stored_row, transfer_vaa
from tests.unit.eventstore.api.schema_check import check

PATH = "/api/v1/operations/{chain}/{emitter}/{seq}"


def _answer(key: MessageKey, row: Any, redemption: Redemption | None = None) -> Any:
    answer = json.loads(shapes.body(operation_doc(key, row, redemption)))
    check(document(), PATH, 200, answer)
    return answer


def test_a_transfer_without_a_known_redemption() -> None:
    vaa = transfer_vaa()
    key = MessageKey.parse(vaa.message_id)
    row = stored_row(vaa, tx="0xab")
    doc = _answer(key, row)
    assert doc["id"] == vaa.message_id
    assert doc["emitterAddress"]["hex"] == vaa.emitter_address.hex()
    assert doc["vaa"] == json.loads(shapes.body(shapes.vaa_doc(key, row)))
    assert doc["vaa"]["vaa"] is not None  # base64 of the signed VAA
    source = doc["sourceChain"]
    assert source == {
        "chainId": 2,
        "timestamp": "2022-04-15T05:20:00Z",
        "transaction": {"txHash": "0xab"},
        "from": None,  # payload 1 carries no sender; none was observed
        "status": "confirmed",
    }
    props = doc["content"]["standarizedProperties"]
    assert props["fromChain"] == 2
    assert (props["toChain"], props["toAddress"].lower()) == (4, "0x" + "aa" * 20)  # EIP-55
    assert (props["tokenChain"], props["tokenAddress"]) == (2, WETH.hex())
    assert (props["amount"], props["fee"], props["normalizedDecimals"]) == ("300000000", "7", 8)
    assert doc["content"]["data"] == {
        "symbol": "WETH",
        "tokenAmount": "3.00000000",
        "usdAmount": "6.000000",
    }
    target = doc["targetChain"]
    assert (target["chainId"], target["status"], target["transaction"]) == (4, "unknown", None)
    assert redemption_key(row) == (vaa.digest_hex, 4)


def test_a_completed_redemption_gives_its_transaction() -> None:
    vaa = transfer_vaa()
    key = MessageKey.parse(vaa.message_id)
    done = Redemption(
        "completed", tx_hash="0x" + "ee" * 32, timestamp="2022-04-15T06:00:00Z", outcome="confirmed"
    )
    target = _answer(key, stored_row(vaa), done)["targetChain"]
    assert target["status"] == "completed"
    assert target["transaction"] == {"txHash": "0x" + "ee" * 32}
    assert (target["timestamp"], target["outcome"], target["reason"]) == (
        "2022-04-15T06:00:00Z",
        "confirmed",
        None,
    )
    failed = _answer(key, stored_row(vaa), Redemption("failed", reason="out of gas"))
    assert failed["targetChain"]["status"] == "failed"
    assert failed["targetChain"]["reason"] == "out of gas"


def test_an_unsigned_or_non_transfer_message() -> None:
    unsigned = transfer_vaa(signers=[0])
    doc = _answer(MessageKey.parse(unsigned.message_id), stored_row(unsigned))
    assert doc["sourceChain"]["status"] == "pending"
    assert doc["vaa"]["vaa"] is None
    attestation = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=3,
        payload=builders.asset_meta(WETH, 2, 18, "WETH", "Wrapped Ether"),
        timestamp=1_650_000_000,
    )
    row = stored_row(attestation)
    doc = _answer(MessageKey.parse(attestation.message_id), row)
    assert doc["targetChain"] is None
    assert doc["content"]["standarizedProperties"] is None
    assert doc["content"]["payload"]["kind"] == "AssetMeta"
    assert redemption_key(row) is None
