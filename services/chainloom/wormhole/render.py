"""JSON-ready views of VAAs, payloads and verifications.

One rendering for every consumer (the ``chainloom vaa`` CLI, the event store's API, logs), so
a VAA looks the same everywhere: integers that may exceed 2**53 (sequences, amounts, token ids)
as decimal strings, 32-byte addresses as 64 lower-case hex digits, guardian addresses in
EIP-55 form, other bytes as hex.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from chainloom.wormhole.chains import chain_name, checksum_address, native_address
from chainloom.wormhole.payloads import (
    AssetMeta,
    GuardianSetUpgrade,
    NftTransfer,
    Payload,
    RawPayload,
    TokenTransfer,
    TokenTransferWithPayload,
)
from chainloom.wormhole.vaa import VAA
from chainloom.wormhole.verify import Verification

__all__ = ["payload_to_json", "vaa_to_json", "verification_to_json"]

_DECIMAL_FIELDS = frozenset({"amount", "fee", "token_id"})
_CHAIN_FIELDS = {"token_address": "token_chain", "to": "to_chain"}


def payload_to_json(payload: Payload) -> dict[str, Any]:
    """``{"type": ..., <fields>}`` for a decoded payload."""
    view: dict[str, Any] = {"type": payload.kind}
    if isinstance(payload, RawPayload):
        view["payload_id"] = payload.payload_id
        view["data"] = payload.data.hex()
        view["error"] = payload.error
        return view
    if isinstance(payload, (TokenTransfer, TokenTransferWithPayload, AssetMeta, NftTransfer)):
        view["payload_id"] = payload.payload_id
    if isinstance(payload, GuardianSetUpgrade):
        view["module"] = payload.module
        view["action"] = payload.action
    for item in dataclasses.fields(payload):
        value = getattr(payload, item.name)
        if item.name == "new_guardian_keys":
            view[item.name] = [checksum_address(k) for k in value]
        elif item.name in _DECIMAL_FIELDS:
            view[item.name] = str(value)
        elif isinstance(value, bytes):
            view[item.name] = value.hex()
        else:
            view[item.name] = value
    for address_field, chain_field in _CHAIN_FIELDS.items():
        if address_field in view and chain_field in view:
            address = getattr(payload, address_field)
            view[f"{address_field}_native"] = native_address(view[chain_field], address)
    return view


def verification_to_json(result: Verification) -> dict[str, Any]:
    """The ``--verify`` keys: signers, quorum, quorum_met, valid (and the reason if invalid)."""
    return {
        "signers": list(result.signers),
        "quorum": result.quorum,
        "quorum_met": result.quorum_met,
        "valid": result.valid,
        "reason": result.reason,
    }


def vaa_to_json(
    vaa: VAA, payload: Payload | None = None, verification: Verification | None = None
) -> dict[str, Any]:
    """Every header and body field, the identifiers, and optionally payload and verification."""
    view: dict[str, Any] = {
        "version": vaa.version,
        "guardian_set_index": vaa.guardian_set_index,
        "signatures": [
            {"guardian_index": s.guardian_index, "signature": s.signature.hex()}
            for s in vaa.signatures
        ],
        "timestamp": vaa.timestamp,
        "nonce": vaa.nonce,
        "emitter_chain": vaa.emitter_chain,
        "emitter_chain_name": chain_name(vaa.emitter_chain),
        "emitter_address": vaa.emitter_hex,
        "sequence": str(vaa.sequence),
        "consistency_level": vaa.consistency_level,
        "payload": vaa.payload.hex(),
        "digest": vaa.digest_hex,
        "message_id": vaa.message_id,
        "row_key": vaa.row_key,
    }
    if payload is not None:
        view["payload_decoded"] = payload_to_json(payload)
    if verification is not None:
        view.update(verification_to_json(verification))
    return view
