"""The shared base58 codec, with Bitcoin's alphabet (Solana keys) and the XRP Ledger's."""

from __future__ import annotations

import hashlib

import pytest

from chainloom import base58
from chainloom.base58 import BITCOIN_ALPHABET, XRPL_ALPHABET
from chainloom.errors import Base58Error, ChainloomError

# A Solana public key, as tests/unit/wormhole/test_chains.py uses it.
SOLANA_KEY = "ENG1wQ7CQKH8ibAJ1hSLmJgL9Ucg6DRDbj752ZAfidLA"
# The XRPL address of AccountID bytes(range(20)), as xrpl-py writes it (the ledger codec test
# checks encode_account against xrpl-py with the same AccountID).
XRPL_ADDRESS = "rrpDp2dLMs7KyhZhg5RbReRagjWuvH7qB"


def _xrpl_payload(account_id: bytes) -> bytes:
    payload = b"\x00" + account_id
    return payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]


def test_bitcoin_alphabet_known_vectors():
    assert base58.encode(b"\x00\x00\x01") == "112"
    assert base58.decode("112") == b"\x00\x00\x01"
    assert base58.encode(b"hello world") == "StV1DL6CwTryKyV"
    key = base58.decode(SOLANA_KEY, BITCOIN_ALPHABET)
    assert len(key) == 32
    assert base58.encode(key, BITCOIN_ALPHABET) == SOLANA_KEY


def test_xrpl_alphabet_known_vectors():
    data = _xrpl_payload(bytes(range(20)))
    assert base58.encode(data, XRPL_ALPHABET) == XRPL_ADDRESS
    assert base58.decode(XRPL_ADDRESS, XRPL_ALPHABET) == data
    # The all-zero AccountID ("ACCOUNT_ZERO" in rippled): every leading zero byte is an "r".
    zero = base58.encode(_xrpl_payload(bytes(20)), XRPL_ALPHABET)
    assert zero == "rrrrrrrrrrrrrrrrrrrrrhoLvTp"


def test_leading_zero_bytes_are_the_alphabets_zero_digit():
    assert base58.encode(b"") == ""
    assert base58.decode("") == b""
    assert base58.encode(b"\x00\x00") == "11"
    assert base58.decode("11") == b"\x00\x00"
    assert base58.encode(b"\x00\x00", XRPL_ALPHABET) == "rr"
    assert base58.decode("rr", XRPL_ALPHABET) == b"\x00\x00"


@pytest.mark.parametrize("alphabet", [BITCOIN_ALPHABET, XRPL_ALPHABET])
def test_round_trip(alphabet):
    for data in (b"\x00", b"\xff" * 33, bytes(range(256)), b"\x00\x00\x07\x00"):
        assert base58.decode(base58.encode(data, alphabet), alphabet) == data


def test_the_alphabet_changes_the_digits():
    assert base58.encode(b"\x01\x02\x03", XRPL_ALPHABET) != base58.encode(b"\x01\x02\x03")


@pytest.mark.parametrize("text", ["0OIl", "11l", "abc0"])
def test_characters_outside_the_alphabet_are_named(text):
    bad = next(c for c in text if c not in BITCOIN_ALPHABET)
    with pytest.raises(Base58Error, match=f"{bad!r} is not a base58 digit") as caught:
        base58.decode(text)
    assert caught.value.character == bad
    assert isinstance(caught.value, ChainloomError)
    assert isinstance(caught.value, ValueError)


def test_the_xrpl_alphabet_has_no_zero_and_no_lowercase_l():
    with pytest.raises(Base58Error, match="'0' is not"):
        base58.decode("r0", XRPL_ALPHABET)
    with pytest.raises(Base58Error, match="'l' is not"):
        base58.decode("rl", XRPL_ALPHABET)


@pytest.mark.parametrize("alphabet", ["123", BITCOIN_ALPHABET[:-1] + "1"])
def test_an_alphabet_without_58_distinct_characters_is_refused(alphabet):
    with pytest.raises(Base58Error, match="58 distinct characters"):
        base58.encode(b"\x01", alphabet)
    with pytest.raises(Base58Error, match="58 distinct characters"):
        base58.decode("1", alphabet)
