"""Test data for the relayer's ingest half (validation, listener, spy): dev-signed transfers.

Everything is signed by :class:`chainloom.wormhole.DevGuardians` and emitted by the dev token
bridge, which the policies built here declare as known.
"""

from __future__ import annotations

from typing import Any

from chainloom.relayer.validation import ValidationPolicy
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, VAA
from chainloom_dev.sim.dev_guardians import DevGuardians

GUARDIANS = DevGuardians()
SOURCE_CHAIN = 2
TARGET_CHAIN = 4
TOKEN_CHAIN = 2
TOKEN = bytes(12) + bytes.fromhex("a0b86991c6218b36c1d19d4a2e9eb0ce3606eb48")
MIN_FEE = 100


def transfer_payload(
    *,
    amount: int = 1_000_000,
    token: bytes = TOKEN,
    token_chain: int = TOKEN_CHAIN,
    to_chain: int = TARGET_CHAIN,
    fee: int = MIN_FEE,
    payload_id: int = 1,
    extra: bytes = b"",
) -> bytes:
    """A token-bridge transfer payload (1, or 3 with ``extra`` after a from-address)."""
    head = (
        bytes((payload_id,))
        + amount.to_bytes(32, "big")
        + token
        + token_chain.to_bytes(2, "big")
        + bytes(12)
        + b"\x42" * 20
        + to_chain.to_bytes(2, "big")
    )
    if payload_id == 3:
        return head + b"\x33" * 32 + extra
    return head + fee.to_bytes(32, "big")


def signed_transfer(
    sequence: int,
    *,
    emitter: bytes = DEV_TOKEN_BRIDGE_EMITTER,
    emitter_chain: int = SOURCE_CHAIN,
    signers: list[int] | None = None,
    payload: bytes | None = None,
    guardian_set_index: int = 0,
    **fields: Any,
) -> VAA:
    """A dev-signed transfer VAA (``fields`` go to :func:`transfer_payload`)."""
    return GUARDIANS.sign(
        emitter_chain=emitter_chain,
        emitter_address=emitter,
        sequence=sequence,
        payload=payload if payload is not None else transfer_payload(**fields),
        signers=signers,
        guardian_set_index=guardian_set_index,
    )


def dev_policy(*, allow_payload3: bool = False) -> ValidationPolicy:
    """Accept the dev token bridge on SOURCE_CHAIN, TOKEN with MIN_FEE, to TARGET_CHAIN."""
    return ValidationPolicy(
        known_emitters=frozenset({(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)}),
        target_chains=frozenset({TARGET_CHAIN}),
        min_fees={(TOKEN_CHAIN, TOKEN): MIN_FEE},
        allow_payload3=allow_payload3,
    )


def flip_signature_byte(vaa_bytes: bytes, signature_number: int = 0, byte: int = 10) -> bytes:
    """The VAA with one byte of one signature flipped (6 header bytes, 66 per signature)."""
    offset = 6 + 66 * signature_number + 1 + byte
    tampered = bytearray(vaa_bytes)
    tampered[offset] ^= 0xFF
    return bytes(tampered)
