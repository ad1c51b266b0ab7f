"""Base58: big-endian base-58 digits, one leading "zero digit" per leading zero byte.

Pure and unchecked (no checksum: base58check lives with the format that uses it, such as XRPL
addresses). The alphabet is a parameter because the formats chainloom reads disagree on it:
Bitcoin's (Solana public keys) and the XRP Ledger's (classic addresses).
"""

from __future__ import annotations

from functools import cache

from chainloom.errors import Base58Error

BITCOIN_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
"""Bitcoin's alphabet, which Solana uses for public keys."""
XRPL_ALPHABET = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"
"""The XRP Ledger's alphabet (classic addresses start with its zero digit, ``r``)."""


@cache
def _index(alphabet: str) -> dict[str, int]:
    if len(alphabet) != 58 or len(set(alphabet)) != 58:
        raise Base58Error(f"a base58 alphabet has 58 distinct characters, got {alphabet!r}")
    return {char: value for value, char in enumerate(alphabet)}


def encode(data: bytes, alphabet: str = BITCOIN_ALPHABET) -> str:
    """``data`` in base58 with ``alphabet``."""
    _index(alphabet)
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, remainder = divmod(number, 58)
        digits.append(alphabet[remainder])
    leading_zeros = len(data) - len(data.lstrip(b"\x00"))
    return alphabet[0] * leading_zeros + "".join(reversed(digits))


def decode(text: str, alphabet: str = BITCOIN_ALPHABET) -> bytes:
    """The bytes ``text`` encodes in base58 with ``alphabet``.

    Raises :class:`~chainloom.errors.Base58Error` naming the first character that is not in
    the alphabet (also in its ``character`` attribute).
    """
    index = _index(alphabet)
    number = 0
    for char in text:
        value = index.get(char)
        if value is None:
            raise Base58Error(f"{char!r} is not a base58 digit", character=char)
        number = number * 58 + value
    leading_zeros = len(text) - len(text.lstrip(alphabet[0]))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\x00" * leading_zeros + body
