"""``book_offers`` on the newest ledger from the cache's index of book directories, against the
same method walking the database, for every book of the generated history (ledger 38129's real
state and eight generated ledgers of offers) in SQLite and in Cassandra."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from xrpl.core.addresscodec import encode_classic_address

from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.methods import Context, answer
from chainloom.ledger.cache import LedgerCache
from chainloom.ledger.errors import LedgerError
from chainloom.ledger.service import make_backend
from chainloom.ledger.xrpl import keylets
from tests.ledger_api_support import Served, post

LIMITS = (1, 2, 3, 7, 60, 100, 500)
"""Limits cutting inside a directory page, across pages and qualities, the default and the
largest (500 is clamped to 100)."""


def _asset(currency: str, issuer: str) -> dict[str, str]:
    if set(currency) == {"0"}:
        return {"currency": "XRP"}
    return {"currency": currency, "issuer": encode_classic_address(bytes.fromhex(issuer))}


def _books(served: Served) -> list[dict[str, Any]]:
    """Every book with a directory at the newest ledger, as ``book_offers`` parameters."""
    books: dict[str, dict[str, Any]] = {}
    for key, node in served.state.of_type("DirectoryNode").items():
        if "Owner" in node:
            continue
        base = key[:48] + "0" * 16
        books[base] = {
            "taker_pays": _asset(node["TakerPaysCurrency"], node["TakerPaysIssuer"]),
            "taker_gets": _asset(node["TakerGetsCurrency"], node["TakerGetsIssuer"]),
        }
    return [books[base] for base in sorted(books)]


def _answer(context: Context, params: dict[str, Any]) -> dict[str, Any]:
    parsed = rq.parse_book_offers(params)
    result: dict[str, Any] = orjson.loads(orjson.dumps(answer(context, "book_offers", parsed, 2)))
    return result


@pytest.fixture
def cached(history: Served) -> Iterator[Context]:
    cache = LedgerCache()
    cache.update(history.backend)
    assert cache.sequence == history.last
    yield Context(backend=history.backend, cache=cache)
    cache.close()


def test_every_book_is_answered_the_same_with_and_without_the_cache(
    history: Served, cached: Context
) -> None:
    books = _books(history)
    assert len(books) >= 5, "the generated ledgers hold offers in several books"
    uncached = Context(backend=history.backend, cache=None)
    deepest = 0
    for book in books:
        for limit in LIMITS:
            params = {**book, "limit": limit, "ledger_index": "validated"}
            expected = _answer(uncached, params)
            assert _answer(cached, params) == expected
            assert len(expected["offers"]) <= min(limit, 100)
            # rippled takes a marker and ignores it: both paths must too.
            assert _answer(cached, {**params, "marker": "anything"}) == expected
            status, served = post(history, "book_offers", params)
            assert status == 200
            served.pop("status")
            assert served == expected
            deepest = max(deepest, len(expected["offers"]))
    assert deepest > 3, "some book has offers over more than one directory or page"


def test_the_cached_walk_reads_nothing_from_the_database(history: Served) -> None:
    assert history.config is not None
    backend = make_backend(history.config)
    backend.hard_fetch_ledger_range()
    cache = LedgerCache()
    cache.update(backend)
    context = Context(backend=backend, cache=cache)
    uncached = Context(backend=history.backend, cache=None)
    books = _books(history)
    expected = [_answer(uncached, {**book, "limit": 100}) for book in books]
    backend.close()  # from here on, any database read fails
    with pytest.raises(LedgerError):
        backend.fetch_ledger_object(keylets.fee_settings(), history.last)
    try:
        assert [_answer(context, {**book, "limit": 100}) for book in books] == expected
        assert any(found["offers"] for found in expected)
    finally:
        cache.close()
