"""Every shared vector decodes to its expected fields, and the signed ones verify."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom.wormhole import (
    AssetMeta,
    ContractUpgrade,
    GovernanceMessage,
    GuardianSet,
    GuardianSets,
    GuardianSetUpgrade,
    NftTransfer,
    RegisterChain,
    TokenTransfer,
    TokenTransferWithPayload,
    chain_name,
    checksum_address,
    decode_payload,
    devnet_emitters,
    format_amount,
    mainnet_emitters,
    native_address,
    parse_vaa,
    parse_vaa_text,
    verify_vaa,
)

VECTOR_COUNT = 32


def _ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [f"{i}-{v['expected']['category']}" for i, v in enumerate(vectors)]


@pytest.fixture(scope="module")
def known_emitters():
    mainnet = mainnet_emitters()
    return devnet_emitters().with_extra(
        token_bridge=mainnet.token_bridge, nft_bridge=mainnet.nft_bridge
    )


def _sets_for(expected: dict[str, Any]) -> GuardianSets:
    against = expected["verified_against"] or ""
    if against.startswith("mainnet"):
        return GuardianSets.mainnet()
    devnet = GuardianSets.devnet()
    # Devnet fixtures name set 0 or 1; both are the same 19 Tilt guardians.
    return devnet.with_set(GuardianSet(index=1, addresses=devnet.get(0).addresses))


def test_every_vector_is_checked(vaa_vectors):
    assert len(vaa_vectors) == VECTOR_COUNT


def test_header_body_and_identifiers(vaa_vectors):
    for position, vector in enumerate(vaa_vectors):
        expected = vector["expected"]
        raw = bytes.fromhex(vector["hex"])
        vaa = parse_vaa(raw)
        where = f"vector {position}"
        assert vaa.to_bytes() == raw, where
        assert vaa.version == expected["version"], where
        assert vaa.guardian_set_index == expected["guardian_set_index"], where
        assert len(vaa.signatures) == expected["num_signatures"], where
        assert list(vaa.guardian_indices) == expected["signature_guardian_indices"], where
        assert vaa.timestamp == expected["timestamp"], where
        assert vaa.nonce == expected["nonce"], where
        assert vaa.emitter_chain == expected["emitter_chain"], where
        assert chain_name(vaa.emitter_chain) == expected["emitter_chain_name"], where
        assert vaa.emitter_hex == expected["emitter_address"], where
        assert str(vaa.sequence) == expected["sequence"], where
        assert vaa.consistency_level == expected["consistency_level"], where
        assert len(vaa.payload) == expected["payload_len"], where
        if "payload_hex" in expected:
            assert vaa.payload.hex() == expected["payload_hex"], where
        assert vaa.digest_hex == expected["digest"], where
        assert vaa.message_id == expected["message_id"], where
        assert vaa.row_key == expected["bigtable_row_key"], where


def test_signed_vectors_verify_against_their_stated_sets(vaa_vectors):
    verified = 0
    for position, vector in enumerate(vaa_vectors):
        expected = vector["expected"]
        vaa = parse_vaa(bytes.fromhex(vector["hex"]))
        result = verify_vaa(vaa, _sets_for(expected))
        where = f"vector {position}"
        assert list(result.signers) == expected["recovered_signers"], where
        if expected["verified_against"] is None:
            assert not result.valid, where
            assert result.reason == "no signatures", where
            continue
        assert result.quorum == expected["quorum"], where
        assert result.quorum_met == expected["quorum_met"], where
        assert result.valid == expected["quorum_met"], (where, result.reason)
        verified += 1
    assert verified == VECTOR_COUNT - 1


def test_text_forms_parse_to_the_same_vaa(vaa_vectors):
    import base64

    for vector in vaa_vectors:
        raw = bytes.fromhex(vector["hex"])
        assert parse_vaa_text(vector["hex"]).to_bytes() == raw
        assert parse_vaa_text("0x" + vector["hex"].upper()).to_bytes() == raw
        assert parse_vaa_text(base64.b64encode(raw).decode()).to_bytes() == raw


def _native_matches(chain: int, address: bytes, expected: str | None) -> None:
    if expected is None:
        return
    rendered = native_address(chain, address)
    if expected.startswith("0x"):
        assert rendered.lower() == expected
        assert rendered == checksum_address(bytes.fromhex(expected[2:]))
    else:
        assert rendered == expected


def _check_token_bridge(payload: Any, expected: dict[str, Any]) -> None:
    if expected["payload_id"] == 2:
        assert isinstance(payload, AssetMeta)
        assert payload.token_address.hex() == expected["token_address"]
        assert payload.token_chain == expected["token_chain"]
        assert payload.decimals == expected["decimals"]
        assert payload.symbol == expected["symbol"]
        assert payload.name == expected["name"]
        assert payload.symbol_raw.hex() == expected["symbol_hex"]
        assert payload.name_raw.hex() == expected["name_hex"]
        _native_matches(
            payload.token_chain, payload.token_address, expected["token_address_native"]
        )
        return
    cls = TokenTransfer if expected["payload_id"] == 1 else TokenTransferWithPayload
    assert isinstance(payload, cls)
    assert str(payload.amount) == expected["amount"]
    assert payload.token_address.hex() == expected["token_address"]
    assert payload.token_chain == expected["token_chain"]
    assert payload.to.hex() == expected["to"]
    assert payload.to_chain == expected["to_chain"]
    if isinstance(payload, TokenTransfer):
        assert str(payload.fee) == expected["fee"]
    else:
        assert payload.from_address.hex() == expected["from_address"]
        assert payload.payload.hex() == expected["transfer_payload"]
    _native_matches(payload.token_chain, payload.token_address, expected["token_address_native"])
    _native_matches(payload.to_chain, payload.to, expected["to_native"])
    display = expected.get("display")
    if display:
        shown = format_amount(payload.amount, display["token_decimals"])
        # The reference wrote amounts below one token without the leading zero (".00000100").
        reference = shown[1:] if shown.startswith("0.") else shown
        assert reference == display["amount_string_like_event_database"]


def _check_nft(payload: Any, expected: dict[str, Any]) -> None:
    assert isinstance(payload, NftTransfer)
    assert payload.token_address.hex() == expected["token_address"]
    assert payload.token_chain == expected["token_chain"]
    assert payload.symbol == expected["symbol"]
    assert payload.name == expected["name"]
    assert payload.symbol_raw.hex() == expected["symbol_hex"]
    assert payload.name_raw.hex() == expected["name_hex"]
    assert str(payload.token_id) == expected["token_id"]
    assert len(payload.uri_raw) == expected["uri_length"]
    assert payload.uri_raw.decode() == expected["uri"]
    assert payload.uri == expected["uri"].rstrip("\x00")
    assert payload.to.hex() == expected["to"]
    assert payload.to_chain == expected["to_chain"]
    _native_matches(payload.token_chain, payload.token_address, expected["token_address_native"])
    _native_matches(payload.to_chain, payload.to, expected["to_native"])
    if "solana_mint_from_token_id" in expected:
        mint = native_address(1, payload.token_id.to_bytes(32, "big"))
        assert mint == expected["solana_mint_from_token_id"]


def _check_governance(payload: Any, expected: dict[str, Any]) -> None:
    module, action = expected["module"], expected["action"]
    if module == "Core" and action == 2:
        assert isinstance(payload, GuardianSetUpgrade)
        assert payload.new_guardian_set_index == expected["new_guardian_set_index"]
        keys = [checksum_address(k) for k in payload.new_guardian_keys]
        assert keys == expected["new_guardian_keys"]
    elif action == 1 and module in ("TokenBridge", "NFTBridge"):
        assert isinstance(payload, RegisterChain)
        assert payload.module == module
        assert payload.emitter_chain == expected["emitter_chain_id"]
        assert payload.emitter_address.hex() == expected["emitter_address"]
    elif action == 2:
        assert isinstance(payload, ContractUpgrade)
        assert payload.module == module
        assert payload.new_contract.hex() == expected["new_contract"]
    else:
        assert isinstance(payload, GovernanceMessage)
        assert payload.module == module
        assert payload.action == action
        assert payload.body.hex() == expected["rest"]
    assert payload.target_chain == expected["chain"]


def test_payloads_decode_to_expected_fields(vaa_vectors, known_emitters):
    seen = set()
    for position, vector in enumerate(vaa_vectors):
        expected = vector["expected"]
        payload = decode_payload(parse_vaa(bytes.fromhex(vector["hex"])), emitters=known_emitters)
        try:
            if "token_bridge" in expected:
                _check_token_bridge(payload, expected["token_bridge"])
            elif "nft_bridge" in expected:
                _check_nft(payload, expected["nft_bridge"])
            else:
                _check_governance(payload, expected["governance"])
        except AssertionError as error:
            raise AssertionError(f"vector {position}: {payload!r}") from error
        seen.add(type(payload).__name__)
    assert seen == {
        "TokenTransfer",
        "TokenTransferWithPayload",
        "AssetMeta",
        "NftTransfer",
        "GuardianSetUpgrade",
        "RegisterChain",
        "ContractUpgrade",
        "GovernanceMessage",
    }


def test_payloads_classify_without_devnet_emitters(vaa_vectors):
    """Unknown emitters fall back to the payload's shape and still decode the fixtures."""
    for vector in vaa_vectors:
        expected = vector["expected"]
        payload = decode_payload(parse_vaa(bytes.fromhex(vector["hex"])))
        if "token_bridge" in expected:
            assert isinstance(payload, (TokenTransfer, TokenTransferWithPayload, AssetMeta))
        elif "nft_bridge" in expected:
            assert isinstance(payload, NftTransfer)


def test_spy_relayer_redis_key_fields(vaa_vectors):
    vector = next(v for v in vaa_vectors if "redis_key" in v["expected"].get("source_expected", {}))
    vaa = parse_vaa(bytes.fromhex(vector["hex"]))
    import json

    key = json.loads(vector["expected"]["source_expected"]["redis_key"])
    assert key == {
        "chain_id": vaa.emitter_chain,
        "emitter_address": vaa.emitter_hex,
        "sequence": vaa.sequence,
    }


def test_event_database_guardians_that_signed(vaa_vectors):
    checked = 0
    for vector in vaa_vectors:
        source = vector["expected"].get("source_expected", {})
        if "GuardiansThatSigned" not in source:
            continue
        vaa = parse_vaa(bytes.fromhex(vector["hex"]))
        result = verify_vaa(vaa, _sets_for(vector["expected"]))
        assert list(result.signers) == source["GuardiansThatSigned"]
        assert source["EmitterChain"] == chain_name(vaa.emitter_chain)
        assert source["Sequence"] == str(vaa.sequence)
        checked += 1
    assert checked > 0
