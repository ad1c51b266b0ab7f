"""What every method shares: the :class:`Context` and the reads through the newest-ledger cache.

Which ledger a request sees is decided once, from the range the backend last saw (the server
refreshes it), so a reader never sees a ledger that is not fully written. Object reads go
through :func:`read_objects`, which answers from the cache of the newest ledger when it holds the
ledger asked for and from the database otherwise; methods never call
``fetch_ledger_objects`` themselves.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.readers import LedgerSelector
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.cache import LedgerCache
from chainloom.ledger.types import LedgerHeader, LedgerObject, LedgerRange
from chainloom.ledger.xrpl.directory import ReadObjects

JSON = dict[str, Any]


@dataclass(frozen=True)
class Context:
    """What every method may use: the backend, the cache and facts about this server."""

    backend: BackendInterface
    """The ledger history store."""
    version: str = "0"
    """The server's version (``server_info.build_version``)."""
    started: float = field(default_factory=time.monotonic)
    """When the server started (for ``uptime``)."""
    cache: LedgerCache | None = field(default_factory=LedgerCache)
    """The newest ledger's objects in memory (``None``: always read the database)."""


def stored_range(ctx: Context) -> LedgerRange:
    """The committed range; ``lgrNotFound`` when nothing is stored yet."""
    found = ctx.backend.fetch_ledger_range()
    if found is None:
        raise RpcError("lgrNotFound", "ledgerNotFound (no ledgers stored)")
    return found


def resolve_ledger(ctx: Context, selector: LedgerSelector) -> LedgerHeader:
    """The header a selector names; ``lgrNotFound`` outside the stored range."""
    header: LedgerHeader | None
    cached = ctx.cache.header if ctx.cache is not None else None
    if (
        cached is not None
        and selector.ledger_hash is None
        and selector.sequence in (None, cached.sequence)
        and cached.sequence == stored_range(ctx).max_sequence
    ):
        return cached  # the newest ledger, as the cache holds it: no database read
    if selector.ledger_hash is not None:
        header = ctx.backend.fetch_ledger_by_hash(selector.ledger_hash)
    else:
        sequence = selector.sequence
        if sequence is None:
            sequence = stored_range(ctx).max_sequence
        header = ctx.backend.fetch_ledger_by_sequence(sequence)
    if header is None:
        raise RpcError("lgrNotFound")
    return header


def ledger_result(header: LedgerHeader) -> JSON:
    """The ``ledger_hash`` / ``ledger_index`` / ``validated`` fields of a result."""
    return {
        "ledger_hash": shapes.hex_upper(header.hash),
        "ledger_index": header.sequence,
        "validated": True,
    }


def read_objects(ctx: Context, keys: Sequence[bytes], sequence: int) -> list[bytes]:
    """Objects at ``sequence`` (``b""`` where absent): from the cache when it holds that
    ledger, else from the database."""
    cache = ctx.cache
    if cache is not None:
        cache.follow(ctx.backend)
        found = cache.read(keys, sequence)
        if found is not None:
            return found
    return ctx.backend.fetch_ledger_objects(keys, sequence)


def book_offers(ctx: Context, book: bytes, sequence: int, limit: int) -> list[LedgerObject]:
    """The first ``limit`` offers of a book at ``sequence``: from the cache's index of book
    directories when it holds that ledger, else walking the database's successor list (the
    same walk, :mod:`chainloom.ledger.books`)."""
    cache = ctx.cache
    if cache is not None:
        cache.follow(ctx.backend)
        found = cache.book_offers(book, sequence, limit)
        if found is not None:
            return found
    return list(ctx.backend.fetch_book_offers(book, sequence, limit).offers)


def read_object(ctx: Context, key: bytes, sequence: int) -> bytes | None:
    """One object at ``sequence`` (``None`` when absent)."""
    return read_objects(ctx, [key], sequence)[0] or None


def reader(ctx: Context, sequence: int) -> ReadObjects:
    """:func:`read_objects` bound to one ledger, for the directory walks."""

    def read(keys: Sequence[bytes]) -> list[bytes]:
        return read_objects(ctx, keys, sequence)

    return read
