"""The fair ceiling for the ledger API benches over HTTP: the bare backend reads behind the same
web stack (``python -m bench.bare_http --sqlite-path FILE``, or the cassandra flags).

An HTTP request costs about a millisecond of Python on this machine while a bare SQLite read
takes 15-30 µs, so the ledger API over HTTP against reads made in the bench's own process
measures mostly HTTP. This server is what the API would be with nothing of its own: the same
stack (:mod:`chainloom.web`: FastAPI on uvicorn behind the wire guard, the API's limits), the
same thread pools (``--workers`` threads, and the API's light pool for the methods it runs there),
in a process of its own, and one ``POST /<workload>`` route per bench workload making exactly
the bare read(s) the bench's direct half makes, answered as hex blobs in JSON, nothing shaped
like rippled. ``chainloom ledger api`` over HTTP against this server is the ratio the benches
check (:mod:`bench.api`, :mod:`bench.api_newest`).

Bodies (JSON, hex bytes; ``ledger`` is a sequence) and answers:

* ``/ledger_data`` ``{"ledger", "limit", "cursor"?}``: ``fetch_ledger_page``;
  ``{"objects": [[key, blob], ...], "cursor"}``;
* ``/account_tx`` ``{"account", "limit"}``: ``fetch_account_transactions``, newest first;
  ``{"transactions": [[tx, meta], ...]}``;
* ``/account_info`` ``{"account", "ledger"}``: the AccountRoot; ``{"root"}``;
* ``/account_lines`` ``{"account", "ledger"}``: the AccountRoot and the owner directory's first
  page, then that page's entries; ``{"objects": [...]}``;
* ``/book_offers`` ``{"book", "ledger", "limit"}``: ``fetch_book_offers``; ``{"offers": [...]}``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

from bench.bare_serving import serve_until_signalled
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.server import METHOD_WEIGHTS, ApiOptions, http_limits
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.service import make_backend
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.directory import page_entries
from chainloom.settings import CassandraSettings
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer, WebSocketLimits

JSON = dict[str, Any]
ERRORS = JsonErrors("error", {}, log_name="bare http")


def _hex(blob: bytes | None) -> str | None:
    return None if blob is None else blob.hex()


def reads(backend: BackendInterface) -> dict[str, Callable[[JSON], JSON]]:
    """Each workload's bare read(s), from a parsed body to the answer."""

    def ledger_data(body: JSON) -> JSON:
        cursor = body.get("cursor")
        page = backend.fetch_ledger_page(
            None if cursor is None else bytes.fromhex(cursor), body["ledger"], body["limit"]
        )
        objects = [[item.key.hex(), item.blob.hex()] for item in page.objects]
        return {"objects": objects, "cursor": _hex(page.cursor)}

    def account_tx(body: JSON) -> JSON:
        found = backend.fetch_account_transactions(
            bytes.fromhex(body["account"]), body["limit"], False
        )
        return {
            "transactions": [[t.transaction.hex(), t.metadata.hex()] for t in found.transactions]
        }

    def account_info(body: JSON) -> JSON:
        account = bytes.fromhex(body["account"])
        return {
            "root": _hex(backend.fetch_ledger_object(keylets.account_root(account), body["ledger"]))
        }

    def account_lines(body: JSON) -> JSON:
        account, ledger = bytes.fromhex(body["account"]), body["ledger"]
        found = backend.fetch_ledger_objects(
            [keylets.account_root(account), keylets.owner_directory(account)], ledger
        )
        if found[1]:
            found += backend.fetch_ledger_objects(page_entries(found[1])[0], ledger)
        return {"objects": [blob.hex() for blob in found]}

    def book_offers(body: JSON) -> JSON:
        page = backend.fetch_book_offers(bytes.fromhex(body["book"]), body["ledger"], body["limit"])
        return {"offers": [offer.blob.hex() for offer in page.offers]}

    return {
        "ledger_data": ledger_data,
        "account_tx": account_tx,
        "account_info": account_info,
        "account_lines": account_lines,
        "book_offers": book_offers,
    }


def app(backend: BackendInterface, workers: int) -> tuple[FastAPI, Callable[[], None]]:
    """The app, and what shuts its thread pools down."""
    heavy = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="bare-http")
    light = concurrent.futures.ThreadPoolExecutor(
        ApiOptions().light_workers, thread_name_prefix="bare-http-light"
    )
    served = make_app("bare backend reads", ERRORS, routes_hint="POST /<workload>")
    for name, read in reads(backend).items():
        pool = light if METHOD_WEIGHTS.get(name, 1) == 1 else heavy
        served.add_api_route(f"/{name}", _route(read, pool), methods=["POST"])

    def close() -> None:
        heavy.shutdown(cancel_futures=True)
        light.shutdown(cancel_futures=True)

    return served, close


def _route(
    read: Callable[[JSON], JSON], pool: concurrent.futures.ThreadPoolExecutor
) -> Callable[[Request], Any]:
    async def route(request: Request) -> Response:
        body = orjson.loads(await request.body())
        answer = await asyncio.get_running_loop().run_in_executor(pool, read, body)
        return Response(orjson.dumps(answer), 200, media_type="application/json")

    return route


def _database(args: argparse.Namespace) -> DatabaseSettings:
    if args.backend == "sqlite":
        return DatabaseSettings(
            type="sqlite", sqlite=SqliteSettings(path=args.sqlite_path), read_only=True
        )
    host, _, port = args.cassandra_hosts.rpartition(":")
    cassandra = CassandraSettings(hosts=(host,), port=int(port), keyspace=args.keyspace)
    return DatabaseSettings(type="cassandra", cassandra=cassandra, read_only=True)


async def _serve(backend: BackendInterface, args: argparse.Namespace) -> None:
    served, close = app(backend, args.workers)
    limits = http_limits(ApiOptions(), "bare http")
    websocket = WebSocketLimits(max_message_bytes=rq.MAX_BODY_BYTES)
    server = WebServer(served, args.host, args.port, limits, ERRORS, websocket=websocket)
    await serve_until_signalled(server, "bare http", args.host, close)


def main() -> None:
    """Serve the bare reads until SIGINT/SIGTERM; the first stderr line names the port."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "cassandra"], default="sqlite")
    parser.add_argument("--sqlite-path", default="ledger.db")
    parser.add_argument("--cassandra-hosts", default="127.0.0.1:9042", help="host:port")
    parser.add_argument("--keyspace", default="chainloom")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=ApiOptions().workers)
    args = parser.parse_args()
    backend = make_backend(_database(args))
    try:
        asyncio.run(_serve(backend, args))
    finally:
        backend.close()


if __name__ == "__main__":
    main()
