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
NFTOKEN_BUY_OFFERS = b"\x00h"
FEE_SETTINGS = b"\x00e"
AMENDMENTS = b"\x00f"
CHECK = b"\x00C"
ESCROW = b"\x00u"
PAYCHAN = b"\x00x"
DEPOSIT_PREAUTH = b"\x00p"
TICKET = b"\x00T"
SIGNER_LIST = b"\x00S"
AMM = b"\x00A"
ORACLE = b"\x00R"
MPTOKEN_ISSUANCE = b"\x00~"
MPTOKEN = b"\x00t"


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


def nftoken_buy_offers(token_id: bytes) -> bytes:
    """The directory of a token's buy offers."""
    return sha512_half(NFTOKEN_BUY_OFFERS + token_id)


def nftoken_page_min(account: bytes) -> bytes:
    """The lowest key an account's NFTokenPage can have."""
    return account + bytes(12)


def fee_settings() -> bytes:
    """The FeeSettings singleton."""
    return sha512_half(FEE_SETTINGS)


def amendments() -> bytes:
    """The Amendments singleton (enabled amendments and majorities)."""
    return sha512_half(AMENDMENTS)


def deposit_preauth(owner: bytes, authorized: bytes) -> bytes:
    """A DepositPreauth of ``owner`` for one ``authorized`` account."""
    return sha512_half(DEPOSIT_PREAUTH + owner + authorized)


def pay_channel(source: bytes, destination: bytes, sequence: int) -> bytes:
    """A PayChannel created by ``source`` to ``destination`` with ``sequence``."""
    return sha512_half(PAYCHAN + source + destination + sequence.to_bytes(4, "big"))


def amm(first: tuple[bytes, bytes], second: tuple[bytes, bytes]) -> bytes:
    """The AMM of two assets given as ``(currency, issuer)`` (order-independent: the smaller
    asset, by currency then issuer, comes first)."""
    low, high = sorted((first, second))
    return sha512_half(AMM + low[1] + low[0] + high[1] + high[0])


def oracle(owner: bytes, document_id: int) -> bytes:
    """A price Oracle of ``owner`` with ``OracleDocumentID``."""
    return sha512_half(ORACLE + owner + document_id.to_bytes(4, "big"))


def mpt_issuance(issuance_id: bytes) -> bytes:
    """The MPTokenIssuance of a 24-byte MPTokenIssuanceID (sequence and issuer)."""
    return sha512_half(MPTOKEN_ISSUANCE + issuance_id)


def mptoken(issuance_id: bytes, holder: bytes) -> bytes:
    """A holder's MPToken of an issuance."""
    return sha512_half(MPTOKEN + mpt_issuance(issuance_id) + holder)


def directory_page(root: bytes, index: int) -> bytes:
    """Page ``index`` of the directory rooted at ``root`` (page 0 is the root itself)."""
    if index == 0:
        return root
    return sha512_half(DIR_PAGE + root + index.to_bytes(8, "big"))
