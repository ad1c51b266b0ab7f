"""Payload byte builders for tests (token bridge 1/2/3, NFT bridge 1), from the layouts in the
token and NFT bridge whitepapers (0003, 0006)."""

from __future__ import annotations


def pad32(text: str) -> bytes:
    return text.encode().ljust(32, b"\x00")


def transfer(
    amount: int, token_address: bytes, token_chain: int, to: bytes, to_chain: int, fee: int = 0
) -> bytes:
    return (
        b"\x01"
        + amount.to_bytes(32, "big")
        + token_address
        + token_chain.to_bytes(2, "big")
        + to
        + to_chain.to_bytes(2, "big")
        + fee.to_bytes(32, "big")
    )


def transfer_with_payload(
    amount: int,
    token_address: bytes,
    token_chain: int,
    to: bytes,
    to_chain: int,
    from_address: bytes,
    extra: bytes,
) -> bytes:
    return (
        b"\x03"
        + amount.to_bytes(32, "big")
        + token_address
        + token_chain.to_bytes(2, "big")
        + to
        + to_chain.to_bytes(2, "big")
        + from_address
        + extra
    )


def asset_meta(
    token_address: bytes, token_chain: int, decimals: int, symbol: str, name: str
) -> bytes:
    return (
        b"\x02"
        + token_address
        + token_chain.to_bytes(2, "big")
        + bytes((decimals,))
        + pad32(symbol)
        + pad32(name)
    )


def evm(address_hex: str) -> bytes:
    return bytes(12) + bytes.fromhex(address_hex.removeprefix("0x"))
