"""Payload decoders: layouts, strictness, classification by (chain, emitter), helpers."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainloom.wormhole import (
    NFT_BRIDGE_EMITTERS,
    TOKEN_BRIDGE_EMITTERS,
    AssetMeta,
    GovernanceMessage,
    NftTransfer,
    Payload,
    RawPayload,
    TokenTransfer,
    TokenTransferWithPayload,
    decode_padded_string,
    decode_payload,
    denormalize_amount,
    encode_payload,
    format_amount,
    mainnet_emitters,
    normalize_amount,
)
from chainloom.wormhole.errors import PayloadParseError
from chainloom.wormhole.payloads import (
    decode_governance_payload,
    decode_nft_bridge_payload,
    decode_token_bridge_payload,
)
from chainloom.wormhole.render import payload_to_json
from chainloom_dev.sim.dev_guardians import DevGuardians

KIT = DevGuardians(count=1, seed=b"payloads")
ADDR = bytes(12) + bytes(range(1, 21))

TRANSFER = TokenTransfer(
    amount=123_456_789, token_address=ADDR, token_chain=2, to=ADDR[::-1], to_chain=4, fee=7
)
NFT = NftTransfer(
    token_address=ADDR,
    token_chain=2,
    symbol="APE",
    name="Apes",
    token_id=2**200 + 5,
    uri="ipfs://x",
    to=ADDR,
    to_chain=1,
    symbol_raw=b"APE".ljust(32, b"\x00"),
    name_raw=b"Apes".ljust(32, b"\x00"),
    uri_raw=b"ipfs://x",
)


def _vaa(chain: int, emitter: bytes, payload: bytes):
    return KIT.sign(emitter_chain=chain, emitter_address=emitter, sequence=1, payload=payload)


def test_one_address_two_bridges_is_classified_by_chain():
    shared = TOKEN_BRIDGE_EMITTERS[5]
    assert NFT_BRIDGE_EMITTERS[4] == shared
    nft_bytes = encode_payload(NFT)
    # a 133-byte payload id 1 from the BSC NFT bridge is an NFT transfer attempt, not a transfer
    as_polygon = decode_payload(_vaa(5, shared, encode_payload(TRANSFER)))
    assert as_polygon == TRANSFER
    from_bsc_nft = decode_payload(_vaa(4, shared, nft_bytes))
    assert from_bsc_nft == NFT
    wrong = decode_payload(_vaa(4, shared, encode_payload(TRANSFER)))
    assert isinstance(wrong, RawPayload)
    assert wrong.error is not None
    assert wrong.error.startswith("nft transfer:")


def test_known_emitter_with_malformed_payload_is_raw_with_reason():
    bad = encode_payload(TRANSFER) + b"\x00"
    result = decode_payload(_vaa(2, TOKEN_BRIDGE_EMITTERS[2], bad))
    assert result == RawPayload(bad, error="token transfer: 1 trailing bytes after byte 133")
    assert result.payload_id == 1
    unknown_type = decode_payload(_vaa(2, TOKEN_BRIDGE_EMITTERS[2], b"\x09abc"))
    assert isinstance(unknown_type, RawPayload)
    assert unknown_type.error == "token bridge: unsupported payload type 9"


def test_unknown_emitter_unknown_shape_stays_raw():
    result = decode_payload(_vaa(2, bytes(32), b"\x01" + bytes(50)))
    assert result == RawPayload(b"\x01" + bytes(50))
    assert result.error is None
    assert decode_payload(_vaa(2, bytes(32), b"")) == RawPayload(b"")


def test_dev_emitters_need_opting_in():
    transfer = encode_payload(TRANSFER)
    bad = transfer[:-1]
    from_dev = _vaa(2, KIT.token_bridge_emitter, bad)
    assert decode_payload(from_dev) == RawPayload(bad)  # mainnet tables: unknown emitter
    opted = mainnet_emitters().with_dev_emitters([2])
    result = decode_payload(from_dev, emitters=opted)
    assert isinstance(result, RawPayload)
    assert result.error == "token transfer: truncated at byte 132 (needs 133 bytes)"


@settings(max_examples=150, deadline=None)
@given(
    amount=st.integers(0, 2**256 - 1),
    chains=st.tuples(st.integers(0, 65535), st.integers(0, 65535)),
    extra=st.binary(max_size=300),
    text=st.text(max_size=8),
    uri=st.binary(max_size=200),
)
def test_typed_payloads_round_trip(amount, chains, extra, text, uri):
    symbol_raw = text.encode()[:32].ljust(32, b"\x00")
    payloads: list[Payload] = [
        dataclasses.replace(TRANSFER, amount=amount, token_chain=chains[0], to_chain=chains[1]),
        TokenTransferWithPayload(
            amount=amount,
            token_address=ADDR,
            token_chain=chains[0],
            to=ADDR,
            to_chain=chains[1],
            from_address=ADDR,
            payload=extra,
        ),
        AssetMeta(
            token_address=ADDR,
            token_chain=chains[0],
            decimals=18,
            symbol=decode_padded_string(symbol_raw),
            name="",
            symbol_raw=symbol_raw,
            name_raw=bytes(32),
        ),
    ]
    for payload in payloads:
        assert decode_token_bridge_payload(encode_payload(payload)) == payload
    nft = dataclasses.replace(
        NFT, token_id=amount, uri_raw=uri, uri=decode_padded_string(uri), to_chain=chains[1]
    )
    assert decode_nft_bridge_payload(encode_payload(nft)) == nft


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"", "token bridge: empty payload"),
        (b"\x01" + bytes(100), "token transfer: truncated at byte 101 (needs 133 bytes)"),
        (b"\x02" + bytes(98), "asset meta: truncated at byte 99 (needs 100 bytes)"),
        (b"\x02" + bytes(100), "asset meta: 1 trailing bytes after byte 100"),
        (b"\x03" + bytes(131), "token transfer with payload: truncated at byte 132"),
    ],
)
def test_token_bridge_strict_errors(payload, message):
    with pytest.raises(PayloadParseError, match=re.escape(message)):
        decode_token_bridge_payload(payload)


def test_nft_strict_errors():
    raw = encode_payload(NFT)
    with pytest.raises(PayloadParseError, match="uri length 201 exceeds 200"):
        decode_nft_bridge_payload(raw[:131] + bytes((201,)) + raw[132:])
    lying = raw[:131] + bytes((200,)) + raw[132:]  # declares 200, carries 8: no big buffer
    with pytest.raises(PayloadParseError, match="truncated at byte 174 \\(needs 366 bytes\\)"):
        decode_nft_bridge_payload(lying)
    with pytest.raises(PayloadParseError, match="unsupported payload type 2"):
        decode_nft_bridge_payload(b"\x02" + raw[1:])
    with pytest.raises(PayloadParseError, match="trailing"):
        decode_nft_bridge_payload(raw + b"\x00")


def test_governance_errors_and_generic_messages():
    with pytest.raises(PayloadParseError, match="governance: truncated"):
        decode_governance_payload(b"Core")
    with pytest.raises(PayloadParseError, match="not left-padded ASCII"):
        decode_governance_payload(bytes(32) + b"\x01\x00\x00")
    core_header = b"Core".rjust(32, b"\x00") + b"\x02\x00\x00"
    with pytest.raises(PayloadParseError, match="guardian set upgrade"):
        decode_governance_payload(core_header + b"\x00\x00\x00\x01\x13" + bytes(20))
    fee = decode_governance_payload(b"Core".rjust(32, b"\x00") + b"\x03\x00\x02" + bytes(32))
    assert fee == GovernanceMessage(module="Core", action=3, target_chain=2, body=bytes(32))
    assert encode_payload(fee) == b"Core".rjust(32, b"\x00") + b"\x03\x00\x02" + bytes(32)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"WETH".ljust(32, b"\x00"), "WETH"),
        (b"WETH".rjust(32, b"\x00"), "WETH"),
        ("PUNK🎸".encode().ljust(32, b"\x00"), "PUNK🎸"),
        ("ab🎸".encode()[:-1].ljust(32, b"\x00"), "ab"),  # EVM cut a sequence in half
        (bytes(32), ""),
    ],
)
def test_padded_strings(raw, text):
    assert decode_padded_string(raw) == text


def test_amount_helpers():
    assert normalize_amount(1_234_567_890_123_456_789, 18) == 123_456_789
    assert normalize_amount(5_000_000, 6) == 5_000_000
    assert denormalize_amount(123_456_789, 18) == 1_234_567_890_000_000_000
    assert denormalize_amount(7, 8) == 7
    assert format_amount(40_006_106, 6) == "40.006106"
    assert format_amount(100, 18) == "0.00000100"
    assert format_amount(0, 8) == "0.00000000"
    assert format_amount(2**256 - 1, 18) == f"{(2**256 - 1) // 10**8}.{(2**256 - 1) % 10**8:08d}"
    assert format_amount(20_000_000_000, 18) == "200.00000000"
    assert format_amount(5, 0) == "5"


def test_json_view_of_a_transfer():
    view = payload_to_json(TRANSFER)
    assert view["type"] == "token_transfer"
    assert view["payload_id"] == 1
    assert view["amount"] == "123456789"
    assert view["fee"] == "7"
    assert view["token_address"] == ADDR.hex()
    assert view["token_address_native"] == "0x0102030405060708090a0B0c0d0e0f1011121314"
    nft = payload_to_json(NFT)
    assert nft["token_id"] == str(2**200 + 5)
    raw = payload_to_json(RawPayload(b"\x05\x06", error="x"))
    assert raw == {"type": "raw", "payload_id": 5, "data": "0506", "error": "x"}
