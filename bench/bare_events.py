"""The fair ceiling for the events API bench over HTTP: the bare Bigtable reads behind the same
web stack (``python -m bench.bare_events --table T``; the emulator from ``BIGTABLE_EMULATOR_HOST``).

One row read costs the bench ~1 ms of the emulator while a request through any Python HTTP
stack costs about as much again, so the events API over HTTP against reads made in the bench's
own process measures mostly HTTP (:mod:`bench.bare_http` says the same of the ledger API). This
server is what the events API would be with nothing of its own: the same stack
(:mod:`chainloom.web`: FastAPI on uvicorn behind the wire guard, the events API's limits), the
same thread pool (``--workers`` threads), in a process of its own, and one route per bench
workload making exactly the bare read(s) the bench's direct half makes, answered as hex cells in
JSON, nothing shaped like the API's documents. ``chainloom events api`` over HTTP against this
server is the ratio :mod:`bench.api` checks for ``--part events``.

* ``GET /vaa/{chain}/{emitter}/{seq}``: :meth:`StoreReads.message`, one row read;
  ``{"families": {family: {qualifier: hex}}}``, 404 when no such row is stored;
* ``GET /page/{chain}/{moment}``: :func:`filtered_page_rows`, the ``fa:src:`` index scan of 21
  rows from ``moment`` (unix seconds) then one read of the page's 20 rows;
  ``{"rows": {row key: {family: {qualifier: hex}}}}``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import warnings
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import Response

from bench.bare_serving import serve_until_signalled
from chainloom.eventstore.api.app import limits
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.reads import StoreReads
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.filter_index import MessageFacts, RowSnapshot
from chainloom.eventstore.keys import MessageKey, filter_prefix, filter_time
from chainloom.settings import BigtableSettings
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer

ERRORS = JsonErrors("error", {}, log_name="bare events")
PAGE_SIZE = 20


def filtered_page_rows(tables: BigtableTables, chain: int, moment: int) -> dict[str, RowSnapshot]:
    """The bare reads of one filtered list page (one source chain, ascending from ``moment``):
    the filter index scan of ``PAGE_SIZE + 1`` rows, then one read of the page's rows."""
    prefix = filter_prefix("asc", "src", f"{chain:05d}")
    start = prefix + filter_time("asc", moment)
    entries = tables.scan_index(start, prefix[:-1] + ";", limit=PAGE_SIZE + 1)
    row_keys = [MessageFacts.from_json(cells["f"]).row_key for _, cells in entries[:PAGE_SIZE]]
    return tables.read_event_rows(row_keys)


def _cells(snapshot: RowSnapshot) -> dict[str, dict[str, str]]:
    return {
        family: {qualifier: value.hex() for qualifier, value in cells.items()}
        for family, cells in snapshot.items()
    }


def app(tables: BigtableTables, workers: int) -> tuple[FastAPI, Callable[[], None]]:
    """The app, and what shuts its thread pool down."""
    pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="bare-events")
    reads = StoreReads(tables)
    served = make_app("bare Bigtable reads", ERRORS, routes_hint="GET /vaa/... or /page/...")

    async def run(call: Callable[..., Any], *args: object) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, call, *args)

    @served.get("/vaa/{chain}/{emitter}/{seq}")
    async def vaa(chain: int, emitter: str, seq: int) -> Response:
        message = await run(reads.message, MessageKey(chain, emitter, seq))
        if message is None:
            return ERRORS.response(404, f"no row {chain}:{emitter}:{seq}")
        return _json({"families": _cells(message.families)})

    @served.get("/page/{chain}/{moment}")
    async def page(chain: int, moment: int) -> Response:
        rows = await run(filtered_page_rows, tables, chain, moment)
        return _json({"rows": {key: _cells(cells) for key, cells in rows.items()}})

    return served, lambda: pool.shutdown(cancel_futures=True)


def _json(answer: dict[str, Any]) -> Response:
    return Response(orjson.dumps(answer), 200, media_type="application/json")


async def _serve(tables: BigtableTables, args: argparse.Namespace) -> None:
    served, close = app(tables, args.workers)
    server = WebServer(served, args.host, args.port, limits(EventsApiSettings()), ERRORS)
    await serve_until_signalled(server, "bare events", args.host, close)


def main() -> None:
    """Serve the bare reads until SIGINT/SIGTERM; the first stderr line names the port."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="chainloom")
    parser.add_argument("--instance", default="local")
    parser.add_argument("--table", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=EventsApiSettings().workers)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    settings = BigtableSettings(project=args.project, instance=args.instance, table=args.table)
    with BigtableTables(settings) as tables:
        asyncio.run(_serve(tables, args))


if __name__ == "__main__":
    main()
