"""Classic XRPL addresses (``r...``): base58check of a 20-byte AccountID with the XRPL alphabet.

The store keeps raw 20-byte AccountIDs; addresses exist only at the edges (the CLI, tests against
the vectors), so this is a plain implementation without caching.
"""

from __future__ import annotations

import hashlib

from chainloom.ledger.xrpl.errors import XrplBinaryError

ALPHABET = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"
_INDEX = {c: i for i, c in enumerate(ALPHABET)}
_ACCOUNT_PREFIX = b"\x00"


def _checksum(payload: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]


def encode_account(account_id: bytes) -> str:
    """The classic address of a 20-byte AccountID."""
    if len(account_id) != 20:
        raise XrplBinaryError(f"an AccountID is 20 bytes, got {len(account_id)}")
    payload = _ACCOUNT_PREFIX + account_id
    data = payload + _checksum(payload)
    number = int.from_bytes(data, "big")
    chars: list[str] = []
    while number:
        number, digit = divmod(number, 58)
        chars.append(ALPHABET[digit])
    leading = len(data) - len(data.lstrip(b"\x00"))
    return ALPHABET[0] * leading + "".join(reversed(chars))


def decode_account(address: str) -> bytes:
    """The 20-byte AccountID of a classic address; a clear error for anything else."""
    number = 0
    for char in address:
        digit = _INDEX.get(char)
        if digit is None:
            raise XrplBinaryError(f"{address!r} is not an XRPL address (bad character {char!r})")
        number = number * 58 + digit
    leading = len(address) - len(address.lstrip(ALPHABET[0]))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    data = b"\x00" * leading + body
    if len(data) != 25 or data[:1] != _ACCOUNT_PREFIX or _checksum(data[:21]) != data[21:]:
        raise XrplBinaryError(f"{address!r} is not a valid XRPL classic address")
    return data[1:21]
