"""Chain registry and native addresses."""

from __future__ import annotations

import pytest

from chainloom.wormhole import chain_id, chain_name, native_address
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


@pytest.mark.parametrize("text", ["\u0662", "\uff12", " 2", "2 ", "\u00b2", "\u0968"])
def test_chain_ids_are_ascii_digits_only(text: str) -> None:
    # Arabic-Indic, fullwidth, padded, superscript and Devanagari 2 are not chain 2.
    with pytest.raises(UnknownChainError):
        chain_id(text)


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
