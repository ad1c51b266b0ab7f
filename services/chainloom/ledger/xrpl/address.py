"""Classic XRPL addresses (``r...``): base58check of a 20-byte AccountID with the XRPL alphabet.

The store keeps raw 20-byte AccountIDs; addresses exist only at the edges (the CLI, tests against
the vectors), so this is a plain implementation without caching.
"""

from __future__ import annotations

import hashlib

from chainloom import base58
from chainloom.errors import Base58Error
from chainloom.ledger.xrpl.errors import XrplBinaryError

ALPHABET = base58.XRPL_ALPHABET
_ACCOUNT_PREFIX = b"\x00"


def _checksum(payload: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]


def encode_account(account_id: bytes) -> str:
    """The classic address of a 20-byte AccountID."""
    if len(account_id) != 20:
        raise XrplBinaryError(f"an AccountID is 20 bytes, got {len(account_id)}")
    payload = _ACCOUNT_PREFIX + account_id
    return base58.encode(payload + _checksum(payload), ALPHABET)


def decode_account(address: str) -> bytes:
    """The 20-byte AccountID of a classic address; a clear error for anything else."""
    try:
        data = base58.decode(address, ALPHABET)
    except Base58Error as error:
        raise XrplBinaryError(
            f"{address!r} is not an XRPL address (bad character {error.character!r})"
        ) from None
    if len(data) != 25 or data[:1] != _ACCOUNT_PREFIX or _checksum(data[:21]) != data[21:]:
        raise XrplBinaryError(f"{address!r} is not a valid XRPL classic address")
    return data[1:21]
