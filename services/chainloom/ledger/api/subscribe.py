"""The parameters of ``subscribe`` and ``unsubscribe``, pure, with rippled's errors.

rippled's ``doSubscribe`` checks, in order: ``streams`` an array (``invalidParams``) of known
stream names (``malformedStream``); ``accounts`` an array (``invalidParams``) of valid addresses,
not empty (``actMalformed``); ``books`` an array of objects with ``taker_pays`` and
``taker_gets`` (``invalidParams``) whose currencies and issuers parse (``srcCurMalformed``,
``srcIsrMalformed`` for ``taker_pays``; ``dstAmtMalformed``, ``dstIsrMalformed`` for
``taker_gets``), that are not the same asset (``badMarket``), with a valid ``taker``
(``badIssuer``). The streams rippled has and a store of validated ledgers cannot feed
(``server``, ``manifests``, ``validations``, ``consensus``, ``peer_status``, proposed
transactions) are ``notSupported``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.api.readers import read_account, read_currency
from chainloom.ledger.api.streams import XRP_ISSUE, Book, Issue, subscribed_book
from chainloom.ledger.xrpl.address import decode_account
from chainloom.ledger.xrpl.errors import XrplBinaryError

STREAMS = ("ledger", "transactions", "book_changes")
"""The streams this server publishes."""

UNSERVED_STREAMS = frozenset(
    {"server", "manifests", "validations", "consensus", "peer_status", "transactions_proposed",
     "rt_transactions"}
)  # fmt: skip
"""rippled's streams that need a live server (``notSupported`` here)."""

_NO_ACCOUNT = bytes(19) + b"\x01"
"""rippled's ``noAccount()`` (``rrrrrrrrrrrrrrrrrrrrBZbvji``), never a valid issuer."""


@dataclass(frozen=True, slots=True)
class BookRequest:
    """One entry of ``books``."""

    book: Book
    """The book listened to (``taker_pays`` in, ``taker_gets`` out)."""
    taker_gets: Mapping[str, Any]
    """The ``taker_gets`` object as given (for the snapshot's ``book_offers``)."""
    taker_pays: Mapping[str, Any]
    """The ``taker_pays`` object as given."""
    both: bool = False
    """Also the reversed book (``both``, or the deprecated ``both_sides``)."""
    snapshot: bool = False
    """Answer the book's offers now (``snapshot``, or the deprecated ``state_now``)."""

    def books(self) -> tuple[Book, ...]:
        """The book and, with ``both``, its reverse."""
        reverse = (self.book[1], self.book[0])
        return (self.book, reverse) if self.both else (self.book,)


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What one ``subscribe`` or ``unsubscribe`` names."""

    streams: frozenset[str] = frozenset()
    """Of :data:`STREAMS`."""
    accounts: frozenset[bytes] = frozenset()
    """Account IDs (20 bytes) whose transactions are wanted."""
    books: tuple[BookRequest, ...] = ()
    """Books whose offers' transactions are wanted."""


def parse_stream_request(params: Mapping[str, Any]) -> StreamRequest:
    """``streams``, ``accounts``, ``books`` of ``subscribe`` / ``unsubscribe``, or rippled's
    error."""
    if "url" in params:
        raise RpcError("noPermission", "url callbacks are admin-only and not served here")
    streams = _streams(params)
    if "accounts_proposed" in params or "rt_accounts" in params:
        raise RpcError("notSupported", "accounts_proposed needs a live rippled")
    accounts = _accounts(params) if "accounts" in params else frozenset()
    books = _books(params) if "books" in params else ()
    return StreamRequest(streams=streams, accounts=accounts, books=books)


def _streams(params: Mapping[str, Any]) -> frozenset[str]:
    if "streams" not in params:
        return frozenset()
    names = params["streams"]
    if not isinstance(names, list):
        raise invalid_params("streams requires an array.")
    found = set()
    for name in names:
        if not isinstance(name, str):
            raise RpcError("malformedStream")
        if name in UNSERVED_STREAMS:
            raise RpcError("notSupported", f"the {name} stream needs a live rippled")
        if name not in STREAMS:
            raise RpcError("malformedStream")
        found.add(name)
    return frozenset(found)


def _accounts(params: Mapping[str, Any]) -> frozenset[bytes]:
    values = params["accounts"]
    if not isinstance(values, list):
        raise invalid_params("accounts requires an array.")
    if not values:
        raise RpcError("actMalformed")
    return frozenset(read_account(value, "accounts") for value in values)


def _books(params: Mapping[str, Any]) -> tuple[BookRequest, ...]:
    entries = params["books"]
    if not isinstance(entries, list):
        raise invalid_params("books requires an array.")
    return tuple(_book(entry) for entry in entries)


def _book(entry: Any) -> BookRequest:
    if not isinstance(entry, dict) or "taker_pays" not in entry or "taker_gets" not in entry:
        raise invalid_params("a book needs taker_pays and taker_gets objects.")
    pays, gets = entry["taker_pays"], entry["taker_gets"]
    if not isinstance(pays, dict) or not isinstance(gets, dict):
        raise invalid_params("taker_pays and taker_gets must be objects.")
    pays_issue = _issue(pays, "srcCurMalformed", "srcIsrMalformed")
    gets_issue = _issue(gets, "dstAmtMalformed", "dstIsrMalformed")
    if pays_issue == gets_issue:
        raise RpcError("badMarket")
    if "taker" in entry:
        read_account(entry["taker"], "taker", error="badIssuer")
    return BookRequest(
        book=subscribed_book(pays_issue, gets_issue),
        taker_gets=gets,
        taker_pays=pays,
        both=_flag(entry, "both") or _flag(entry, "both_sides"),
        snapshot=_flag(entry, "snapshot") or _flag(entry, "state_now"),
    )


def _flag(entry: Mapping[str, Any], name: str) -> bool:
    value = entry.get(name, False)
    if not isinstance(value, bool):
        raise invalid_params(f"Invalid field '{name}', not bool.")
    return value


def _issue(value: Mapping[str, Any], currency_error: str, issuer_error: str) -> Issue:
    """A currency and optional issuer; XRP has no issuer, any other currency needs one."""
    try:
        currency = read_currency(value.get("currency"), "currency")
    except RpcError:
        raise RpcError(currency_error) from None
    issuer = bytes(20)
    if "issuer" in value:
        text = value["issuer"]
        if not isinstance(text, str):
            raise RpcError(issuer_error)
        try:
            issuer = decode_account(text)
        except XrplBinaryError:
            raise RpcError(issuer_error) from None
    if any(currency) != any(issuer) or issuer == _NO_ACCOUNT:
        raise RpcError(issuer_error)
    return XRP_ISSUE if not any(currency) else (currency, issuer)
