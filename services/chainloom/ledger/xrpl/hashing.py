"""SHA512Half with the XRPL hash prefixes, and the SHAMap root hash.

The SHAMap root lets the ETL check a ledger's ``transaction_hash`` (and the generator produce a
correct ``account_hash``) without rippled: a 16-way radix tree over the keys' nibbles, where a
subtree holding one item is that item's leaf and an inner node hashes its 16 children.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from chainloom.ledger.xrpl.binary import vl_prefix

PREFIX_TRANSACTION_ID = b"TXN\x00"
PREFIX_LEDGER = b"LWR\x00"  # HashPrefix::ledgerMaster
PREFIX_STATE_LEAF = b"MLN\x00"
PREFIX_TX_LEAF = b"SND\x00"
PREFIX_INNER = b"MIN\x00"

ZERO_HASH = b"\x00" * 32


def sha512_half(data: bytes) -> bytes:
    """The first 32 bytes of SHA-512: the XRP Ledger's hash function (``SHA512Half``)."""
    return hashlib.sha512(data).digest()[:32]


def transaction_id(transaction: bytes) -> bytes:
    """The hash (ID) of a signed transaction blob."""
    return sha512_half(PREFIX_TRANSACTION_ID + transaction)


def state_leaf_hash(key: bytes, blob: bytes) -> bytes:
    """The SHAMap leaf hash of a ledger object."""
    return sha512_half(PREFIX_STATE_LEAF + blob + key)


def transaction_leaf_hash(tx_id: bytes, transaction: bytes, metadata: bytes) -> bytes:
    """The SHAMap leaf hash of a transaction with its metadata."""
    data = (
        PREFIX_TX_LEAF
        + vl_prefix(len(transaction))
        + transaction
        + vl_prefix(len(metadata))
        + metadata
        + tx_id
    )
    return sha512_half(data)


def shamap_root(leaves: Sequence[tuple[bytes, bytes]]) -> bytes:
    """Root hash of a SHAMap given ``(key, leaf hash)`` pairs sorted by key (no duplicates)."""
    if not leaves:
        return ZERO_HASH
    return _subtree(leaves, 0, len(leaves), 0)


def _subtree(leaves: Sequence[tuple[bytes, bytes]], lo: int, hi: int, depth: int) -> bytes:
    if hi - lo == 1 and depth > 0:  # the root is always an inner node
        return leaves[lo][1]
    children = [ZERO_HASH] * 16
    start = lo
    byte_index, high_nibble = divmod(depth, 2)
    while start < hi:
        byte = leaves[start][0][byte_index]
        nibble = byte & 0x0F if high_nibble else byte >> 4
        end = start + 1
        while end < hi:
            other = leaves[end][0][byte_index]
            if (other & 0x0F if high_nibble else other >> 4) != nibble:
                break
            end += 1
        children[nibble] = _subtree(leaves, start, end, depth + 1)
        start = end
    return sha512_half(PREFIX_INNER + b"".join(children))


def state_root(objects: Sequence[tuple[bytes, bytes]]) -> bytes:
    """The ``account_hash`` of a full state given ``(key, blob)`` pairs (any order)."""
    ordered = sorted(objects)
    return shamap_root([(key, state_leaf_hash(key, blob)) for key, blob in ordered])


def transaction_root(transactions: Sequence[tuple[bytes, bytes]]) -> bytes:
    """The ``transaction_hash`` of a ledger given its ``(transaction, metadata)`` blobs."""
    leaves = []
    for transaction, metadata in transactions:
        tx_id = transaction_id(transaction)
        leaves.append((tx_id, transaction_leaf_hash(tx_id, transaction, metadata)))
    leaves.sort()
    return shamap_root(leaves)
