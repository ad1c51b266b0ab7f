"""Chain registry and native addresses; the workload generator's shape and determinism."""

from __future__ import annotations

from collections import Counter

import pytest

from chainloom.wormhole import (
    DEFAULT_MIX,
    DevGuardians,
    Mix,
    RawPayload,
    SignatureCache,
    chain_id,
    chain_name,
    decode_payload,
    generate_vaas,
    mainnet_emitters,
    native_address,
    parse_vaa,
    verify_vaa,
)
from chainloom.wormhole.chains import base58_decode, base58_encode, bech32_encode
from chainloom.wormhole.errors import UnknownChainError


@pytest.mark.parametrize(
    ("number", "name"),
    [
        (1, "solana"),
        (2, "ethereum"),
        (4, "bsc"),
        (26, "pythnet"),
        (3104, "wormchain"),
        (10002, "sepolia"),
    ],
)
def test_chain_names_both_ways(number, name):
    assert chain_name(number) == name
    assert chain_id(name) == number
    assert chain_id(name.upper()) == number
    assert chain_id(str(number)) == number


def test_unknown_chains():
    assert chain_name(9999) == "unknown-9999"
    assert chain_id("unknown-9999") == 9999
    with pytest.raises(UnknownChainError, match="unknown chain 'narnia'"):
        chain_id("narnia")
    with pytest.raises(UnknownChainError):
        chain_id("70000")


def test_native_addresses():
    evm = bytes(12) + bytes.fromhex("90f8bf6a479f320ead074411a4b0e7944ea8c9c1")
    assert native_address(2, evm) == "0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1"
    assert native_address(30, evm) == "0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1"
    not_evm_shaped = b"\x01" + evm[1:]
    assert native_address(2, not_evm_shaped) == "0x" + not_evm_shaped.hex()
    assert native_address(21, evm) == "0x" + evm.hex()  # Sui: 32-byte hex
    solana = base58_decode("ENG1wQ7CQKH8ibAJ1hSLmJgL9Ucg6DRDbj752ZAfidLA", length=32)
    assert native_address(1, solana) == "ENG1wQ7CQKH8ibAJ1hSLmJgL9Ucg6DRDbj752ZAfidLA"
    assert native_address(
        3, bytes(12) + bytes.fromhex("7cf7b764e38a0a5e967972c1df77d432510564e2")
    ) == ("terra10nmmwe8r3g99a9newtqa7a75xfgs2e8z87r2sf")
    assert native_address(3, b"\x01" + b"uusd".rjust(31, b"\x00")) == "uusd"
    with pytest.raises(ValueError, match="32 bytes"):
        native_address(2, b"\x00" * 20)


def test_base58_and_bech32():
    assert base58_encode(b"\x00\x00\x01") == "112"
    assert base58_decode("112") == b"\x00\x00\x01"
    with pytest.raises(ValueError, match="not a base58 digit"):
        base58_decode("0OIl")
    # the Terra classic mainnet token bridge contract, as Terra writes it
    program = bytes.fromhex("7cf7b764e38a0a5e967972c1df77d432510564e2")
    assert bech32_encode("terra", program) == "terra10nmmwe8r3g99a9newtqa7a75xfgs2e8z87r2sf"


# --------------------------------------------------------------------------------------------
# Workload

KIT = DevGuardians(count=7, seed=b"workload")


def test_generate_is_deterministic_and_every_line_verifies():
    first = list(generate_vaas(200, seed=11, guardians=KIT))
    assert first == list(generate_vaas(200, seed=11, guardians=KIT))
    assert first != list(generate_vaas(200, seed=12, guardians=KIT))
    sets = KIT.sets(0)
    cache = SignatureCache()
    vaas = [parse_vaa(raw) for raw in first]
    assert all(verify_vaa(v, sets, cache=cache).valid for v in vaas)
    assert cache.hits > 0  # duplicates share signatures


def test_generated_stream_has_the_mainnet_like_shape():
    vaas = [parse_vaa(raw) for raw in generate_vaas(600, seed=3, guardians=KIT)]
    known = mainnet_emitters().with_dev_emitters(range(1, 40))
    kinds = Counter(decode_payload(v, emitters=known).kind for v in vaas)
    assert kinds["token_transfer"] > kinds["token_transfer_with_payload"] > 0
    assert kinds["asset_meta"] > 0
    assert kinds["nft_transfer"] > 0
    assert kinds["raw"] > 0
    assert all(
        isinstance(p, RawPayload) and p.error is None
        for p in (decode_payload(v, emitters=known) for v in vaas)
        if p.kind == "raw"
    )
    by_digest = Counter(v.digest for v in vaas)
    duplicates = sum(n - 1 for n in by_digest.values())
    assert 0.1 * len(vaas) < duplicates < 0.35 * len(vaas)
    copies = [v for v in vaas if by_digest[v.digest] > 1]
    assert len({v.to_bytes() for v in copies}) > len({v.digest for v in copies})  # other subsets
    digests_per_id: dict[str, set[bytes]] = {}
    for v in vaas:
        digests_per_id.setdefault(v.message_id, set()).add(v.digest)
    conflicts = [m for m, d in digests_per_id.items() if len(d) > 1]
    assert conflicts  # a few message ids with two different VAAs
    assert len(conflicts) < 0.05 * len(digests_per_id)


def test_mix_parsing():
    mix = Mix.parse("token_transfer=3,nft_transfer=1,duplicate=0.5,conflict=0")
    assert dict(mix.weights) == {"token_transfer": 3.0, "nft_transfer": 1.0}
    assert (mix.duplicate, mix.conflict) == (0.5, 0.0)
    only = list(generate_vaas(30, seed=1, guardians=KIT, mix=Mix.parse("asset_meta=1,duplicate=0")))
    assert {decode_payload(parse_vaa(v)).kind for v in only} == {"asset_meta"}
    assert Mix.parse("").weights == DEFAULT_MIX.weights


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus=1", "unknown message kinds"),
        ("token_transfer", "expected name=value"),
        ("token_transfer=x", "is not a number"),
        ("duplicate=1.5", "duplicate rate"),
        ("token_transfer=0", "positive sum"),
        ("duplicate=0.6,conflict=0.5", "below 1"),
    ],
)
def test_bad_mixes(text, message):
    with pytest.raises(ValueError, match=message):
        Mix.parse(text)
