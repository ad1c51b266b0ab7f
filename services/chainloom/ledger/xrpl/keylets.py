"""Keys (``keylet``\\ s) of ledger objects: SHA512Half of a two-byte space and the identifying
fields. Used by the workload generator to place objects where rippled would, and checked in
tests against the keys of ledger 38129's real objects."""

from __future__ import annotations

from chainloom.ledger.xrpl.hashing import sha512_half

ACCOUNT = b"\x00a"
OWNER_DIR = b"\x00O"
OFFER = b"\x00o"
RIPPLE_STATE = b"\x00r"
BOOK = b"\x00B"
DIR_PAGE = b"\x00d"  # page n > 0 of a directory: SHA512Half(DIR_PAGE || root || uint64 n)
SKIP_LIST = b"\x00s"
NFTOKEN_OFFER = b"\x00q"
NFTOKEN_SELL_OFFERS = b"\x00i"


def account_root(account: bytes) -> bytes:
    """AccountRoot of a 20-byte AccountID."""
    return sha512_half(ACCOUNT + account)


def owner_directory(account: bytes) -> bytes:
    """Root page of an account's owner directory."""
    return sha512_half(OWNER_DIR + account)


def offer(account: bytes, sequence: int) -> bytes:
    """An Offer created by ``account`` with ``sequence``."""
    return sha512_half(OFFER + account + sequence.to_bytes(4, "big"))


def ripple_state(first: bytes, second: bytes, currency: bytes) -> bytes:
    """The trust line between two accounts (order-independent) for a 20-byte currency."""
    low, high = sorted((first, second))
    return sha512_half(RIPPLE_STATE + low + high + currency)


def book(
    pays_currency: bytes, pays_issuer: bytes, gets_currency: bytes, gets_issuer: bytes
) -> bytes:
    """The base key of the order book for an asset pair (rippled ``keylet::book``).

    Its directories are the base with a quality in the low 64 bits; going the other way, from
    a directory's key to its book's base, is :func:`chainloom.ledger.xrpl.parse.book_base`.
    """
    digest = sha512_half(BOOK + pays_currency + gets_currency + pays_issuer + gets_issuer)
    return digest[:24] + b"\x00" * 8


def book_directory(base: bytes, quality: int) -> bytes:
    """The directory of one quality level of a book."""
    return base[:24] + quality.to_bytes(8, "big")


def skip_list() -> bytes:
    """The LedgerHashes object holding the last 256 ledger hashes."""
    return sha512_half(SKIP_LIST)


def nftoken_page_max(account: bytes) -> bytes:
    """The last NFTokenPage of an account (where a single page lives)."""
    return account + b"\xff" * 12


def nftoken_offer(account: bytes, sequence: int) -> bytes:
    """An NFTokenOffer created by ``account`` with ``sequence``."""
    return sha512_half(NFTOKEN_OFFER + account + sequence.to_bytes(4, "big"))


def nftoken_sell_offers(token_id: bytes) -> bytes:
    """The directory of a token's sell offers."""
    return sha512_half(NFTOKEN_SELL_OFFERS + token_id)
