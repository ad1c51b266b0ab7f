"""The ledger API's reads of the newest ledger, answered from its cache, against the bare
backend reads the methods would otherwise make (``python bench/api.py --part newest``, or the
last part of ``--part ledger``).

* ``account_info``: one AccountRoot (bare: ``fetch_ledger_object``);
* ``account_lines``: the AccountRoot, the owner directory's first page and its entries (bare:
  those reads);
* ``book_offers``: every book of the newest ledger round robin, up to 60 offers each, the
  method's default (bare: ``fetch_book_offers``, the directory walk over the successor list).

Each runs over HTTP (the server's own cache, loaded by a first request) alternated with the same
clients on :mod:`bench.bare_http` making the bare reads behind the same web stack: that ratio
is checked, goal >= 0.8. Then in this process (label ``call``: parsing, the method and its
orjson encoding with a loaded cache, no HTTP) against the bare reads made by as many threads for
as long: the method's own cost, printed beside.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from bench.api import against_bare_http, bare_answer, direct_run, http_run, report

BOOK_LIMIT = 60
"""Offers per ``book_offers`` call (its default)."""


def _books(backend: Any, last: int) -> list[tuple[bytes, dict[str, Any]]]:
    """Every book with a directory at ledger ``last``: its base and the ``book_offers``
    parameters naming it."""
    from chainloom.ledger.books import is_book_root
    from chainloom.ledger.xrpl import binary
    from chainloom.ledger.xrpl import fields as sf
    from chainloom.ledger.xrpl.address import encode_account
    from chainloom.ledger.xrpl.parse import book_base

    def asset(currency: object, issuer: object) -> dict[str, str]:
        assert isinstance(currency, bytes)
        assert isinstance(issuer, bytes)
        if not any(currency):
            return {"currency": "XRP"}
        return {"currency": currency.hex().upper(), "issuer": encode_account(issuer)}

    books: dict[bytes, dict[str, Any]] = {}
    for key, blob in _objects(backend, last):
        if not is_book_root(key, blob):
            continue
        node = binary.decode(blob)
        fields = [node[sf.field_key(name)] for name in (
            "TakerPaysCurrency", "TakerPaysIssuer", "TakerGetsCurrency", "TakerGetsIssuer"
        )]  # fmt: skip
        books[book_base(key)] = {
            "taker_pays": asset(fields[0], fields[1]),
            "taker_gets": asset(fields[2], fields[3]),
        }
    return sorted(books.items())


def _objects(backend: Any, last: int) -> list[tuple[bytes, bytes]]:
    found: list[tuple[bytes, bytes]] = []
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, last, 2048)
        found += [(item.key, item.blob) for item in page.objects]
        if page.cursor is None:
            return found
        cursor = page.cursor


def newest_ledger_reads(
    args: argparse.Namespace,
    url: str,
    bare_url: str,
    backend: Any,
    last: int,
    accounts: list[bytes],
) -> None:
    """Run the three workloads; one line each against the bare server and in process."""
    import orjson

    from chainloom.ledger.api import params as pm
    from chainloom.ledger.api import requests as rq
    from chainloom.ledger.api.methods import Context, answer
    from chainloom.ledger.cache import LedgerCache
    from chainloom.ledger.xrpl import keylets
    from chainloom.ledger.xrpl.address import encode_account
    from chainloom.ledger.xrpl.directory import page_entries

    addresses = [encode_account(account) for account in accounts]
    cache = LedgerCache()
    cache.update(backend)
    context = Context(backend=backend, cache=cache)
    books = _books(backend, last)
    print(f"newest ledger {last}: {len(accounts)} accounts, {len(books)} books")
    warm = orjson.dumps({"method": "account_info", "params": [{"account": addresses[0]}]})
    asyncio.run(http_run(url, 1, 1.5, lambda number, state: warm))  # the server's cache loads

    def turn(number: int, state: dict[str, Any], count: int) -> int:
        index: int = state.get("i", number) + args.clients
        state["i"] = index
        return index % count

    def bare_info(number: int, state: dict[str, Any]) -> None:
        account = accounts[turn(number, state, len(accounts))]
        backend.fetch_ledger_object(keylets.account_root(account), last)

    def bare_lines(number: int, state: dict[str, Any]) -> None:
        account = accounts[turn(number, state, len(accounts))]
        _, directory = backend.fetch_ledger_objects(
            [keylets.account_root(account), keylets.owner_directory(account)], last
        )
        if directory:
            backend.fetch_ledger_objects(page_entries(directory)[0], last)

    def bare_book(number: int, state: dict[str, Any]) -> None:
        backend.fetch_book_offers(books[turn(number, state, len(books))][0], last, BOOK_LIMIT)

    def account_params(number: int, state: dict[str, Any]) -> dict[str, Any]:
        return {"account": addresses[turn(number, state, len(addresses))]}

    def book_params(number: int, state: dict[str, Any]) -> dict[str, Any]:
        return {**books[turn(number, state, len(books))][1], "limit": BOOK_LIMIT}

    def bare_account_body(number: int, state: dict[str, Any]) -> bytes:
        account = accounts[turn(number, state, len(accounts))]
        return orjson.dumps({"account": account.hex(), "ledger": last})

    def bare_book_body(number: int, state: dict[str, Any]) -> bytes:
        book = books[turn(number, state, len(books))][0]
        return orjson.dumps({"book": book.hex(), "ledger": last, "limit": BOOK_LIMIT})

    workloads: list[tuple[str, Any, Any, Callable[..., None], Callable[..., bytes]]] = [
        ("account_info", pm.parse_account_info, account_params, bare_info, bare_account_body),
        ("account_lines", pm.parse_directory_listing, account_params, bare_lines,
         bare_account_body),
        ("book_offers", rq.parse_book_offers, book_params, bare_book, bare_book_body),
    ]  # fmt: skip
    for method, parse, make, bare, bare_body in workloads:

        def body(
            number: int, state: dict[str, Any], method: str = method, make: Any = make
        ) -> bytes:
            params = {**make(number, state), "ledger_index": "validated"}
            return orjson.dumps({"method": method, "params": [params]})

        def in_process(
            number: int,
            state: dict[str, Any],
            method: str = method,
            parse: Any = parse,
            make: Any = make,
        ) -> None:
            orjson.dumps({"result": answer(context, method, parse(make(number, state)), 2)})

        def api(body: Callable[..., bytes] = body) -> list[float]:
            return asyncio.run(http_run(url, args.clients, args.seconds, body))

        def bare_http(
            method: str = method, bare_body: Callable[..., bytes] = bare_body
        ) -> list[float]:
            return asyncio.run(
                http_run(f"{bare_url}{method}", args.clients, args.seconds, bare_body, bare_answer)
            )

        against_bare_http(f"{method} (cache)", args, api, bare_http, goal=0.8)
        cached = direct_run(args.clients, args.seconds, in_process)
        direct = direct_run(args.clients, args.seconds, bare)
        report(f"{method} (cache)", args.seconds, cached, direct, goal=0.8, label="call")
    cache.close()
