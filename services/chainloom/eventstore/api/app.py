"""The events API server: routes to store reads to JSON, on the project's HTTP server.

Served by :class:`chainloom.http_server.HttpServer` (h11 over asyncio, as the relayer's REST
endpoint and the indexer's probes are), so malformed HTTP, slow clients and oversized heads
are answered in this API's JSON error shape too (:meth:`EventsApi.refusal`). A request is
matched and its parameters parsed before anything touches the store (a bad one is a 400 that
costs no read); the read runs on a bounded thread pool (the Bigtable data client is
synchronous), and more than ``api.max_pending`` requests in flight are answered 503 ``busy``
instead of queueing without bound. A store that does not answer within
``bigtable.operation_timeout`` is a 503 ``unavailable`` with one line naming it; the server
keeps serving and the next request tries again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

import orjson

from chainloom.eventstore.api import models, params, shapes
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.errors import (
    ApiError,
    BadParameterError,
    MethodNotAllowedError,
    NotFoundError,
)
from chainloom.eventstore.api.openapi import document
from chainloom.eventstore.api.routes import Route, match
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError
from chainloom.eventstore.keys import MessageKey, normalize_tx_id
from chainloom.eventstore.queries import StoredMessage
from chainloom.http_server import HttpServer, Limits, Request, Response
from chainloom.wormhole.sequences import OpenGap

log = logging.getLogger(__name__)

T = TypeVar("T")

Handler = Callable[[Mapping[str, str], Mapping[str, str]], Awaitable[Response]]
"""A route's handler: path parameters and query parameters to an answer."""

REFUSAL_WORDS = {
    400: "bad_request",
    408: "timeout",
    413: "too_large",
    431: "head_too_large",
    500: "error",
    501: "not_implemented",
    505: "version_not_supported",
}
"""The ``error`` word of the HTTP server's own refusals."""


def _json(status: int, data: bytes, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(status, data, headers=headers)


def error_response(error: ApiError) -> Response:
    """The JSON answer of an :class:`ApiError`."""
    parameter = error.parameter if isinstance(error, BadParameterError) else None
    headers: tuple[tuple[str, str], ...] = ()
    if isinstance(error, MethodNotAllowedError):
        headers = (("Allow", ", ".join(error.allowed)),)
    return _json(error.status, shapes.error_body(error.word, error.reason, parameter), headers)


class Reads(Protocol):
    """The store reads the routes make (:class:`~chainloom.eventstore.api.reads.StoreReads`)."""

    def check(self) -> None: ...

    def message(self, key: MessageKey) -> StoredMessage | None: ...

    def emitter_page(
        self, chain: int, emitter: str, after: int | None, size: int
    ) -> tuple[list[StoredMessage], bool]: ...

    def chain_page(
        self, chain: int, after: params.Cursor | None, size: int
    ) -> tuple[list[StoredMessage], bool]: ...

    def by_tx(self, tx_id: str) -> list[StoredMessage]: ...

    def daily_counts(
        self, first: dt.date, last: dt.date, chain: int | None
    ) -> dict[tuple[int, str], int]: ...

    def open_gaps(
        self, chain: int | None, emitter: str | None
    ) -> tuple[list[OpenGap], int, list[str]]: ...


class EventsApi:
    """The routes of :data:`routes.ROUTES` over one store (an :class:`HttpApp`)."""

    def __init__(self, reads: Reads, settings: EventsApiSettings, *, version: str = "0") -> None:
        self.reads = reads
        self.settings = settings
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.workers, thread_name_prefix="events-api"
        )
        self._pending = 0
        self._document = orjson.dumps(document(version))
        self.handlers: dict[str, Handler] = {
            "get_vaa": self._get_vaa,
            "list_emitter_vaas": self._list,
            "list_chain_vaas": self._list,
            "get_transaction": self._transaction,
            "daily_stats": self._daily,
            "gaps": self._gaps,
            "openapi": self._openapi,
            "health": self._health,
        }
        """Route name -> its handler (every route of :data:`routes.ROUTES` has one)."""

    def close(self) -> None:
        """End the thread pool (after the server stopped)."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    async def respond(self, request: Request) -> Response:
        """One request: 200 with the route's model, or an error answer."""
        try:
            route, path_params = match(request.method, request.path)
            query = params.parse_query(request.target, route.query_names)
            return await self._answer(route, path_params, query)
        except ApiError as error:
            return error_response(error)
        except StoreUnavailableError as outage:
            log.warning("events api: %s %s: %s", request.method, request.path[:200], outage)
            return _json(503, shapes.error_body("unavailable", str(outage)))
        except TableMissingError as missing:
            return _json(503, shapes.error_body("unavailable", str(missing)))

    def refusal(self, status: int, reason: str) -> Response:
        """The HTTP server's own refusals, in the same JSON shape."""
        return _json(status, shapes.error_body(REFUSAL_WORDS.get(status, "error"), reason))

    async def _read(self, call: Callable[..., T], *args: object) -> T:
        """Run one blocking store call on the pool; 503 ``busy`` past ``max_pending``."""
        if self._pending >= self.settings.max_pending:
            raise _BusyError
        self._pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call, *args)
        finally:
            self._pending -= 1

    async def _answer(
        self, route: Route, path: Mapping[str, str], query: Mapping[str, str]
    ) -> Response:
        handler = self.handlers.get(route.name)
        if handler is None:  # a route without a handler: a bug the unit tests catch
            raise NotFoundError(f"no handler for {route.path}")
        try:
            return await handler(path, query)
        except _BusyError:
            return _json(503, shapes.error_body("busy", self._busy_reason()))

    async def _health(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del path, query
        return _json(200, shapes.body(models.Health(status="ok")))

    async def _openapi(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del path, query
        return _json(200, self._document)

    def _busy_reason(self) -> str:
        return f"more than {self.settings.max_pending} requests in flight; retry shortly"

    async def _get_vaa(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del query
        key = MessageKey(
            params.parse_chain(path["chain"]),
            params.parse_emitter(path["emitter"]),
            params.parse_sequence(path["seq"]),
        )
        message = await self._read(self.reads.message, key)
        if message is None:
            raise NotFoundError(f"no message {key.message_id} is stored")
        return _json(
            200, shapes.body(models.VaaResponse(data=shapes.vaa_doc(message.key, message.families)))
        )

    async def _list(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        chain = params.parse_chain(path["chain"])
        emitter = params.parse_emitter(path["emitter"]) if "emitter" in path else None
        size = params.parse_page_size(
            query, self.settings.default_page_size, self.settings.max_page_size
        )
        cursor_text = query.get("cursor")
        cursor = None if cursor_text is None else params.decode_cursor(cursor_text, chain, emitter)
        if emitter is not None:
            after = None if cursor is None else cursor.sequence
            found, more = await self._read(self.reads.emitter_page, chain, emitter, after, size)
        else:
            found, more = await self._read(self.reads.chain_page, chain, cursor, size)
        following = None
        if more and found:
            last = found[-1].key
            following = params.encode_cursor(params.Cursor(chain, last.emitter, last.sequence))
        page = models.VaaPage(
            data=[shapes.vaa_doc(m.key, m.families) for m in found],
            pagination=models.Pagination(next=following),
        )
        return _json(200, shapes.body(page))

    async def _transaction(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del query
        tx_id = path["tx_id"]
        if not tx_id.strip() or len(tx_id) > 200:
            raise BadParameterError("tx_id", "a transaction id of 1-200 characters")
        found = await self._read(self.reads.by_tx, tx_id)
        if not found:
            raise NotFoundError(f"no message is indexed for transaction {tx_id[:200]}")
        answer = models.TransactionResponse(
            tx_hash=normalize_tx_id(tx_id), data=[shapes.vaa_doc(m.key, m.families) for m in found]
        )
        return _json(200, shapes.body(answer))

    async def _daily(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del path
        first, last = params.parse_day_range(query, self.settings.max_stats_days)
        chain = None if "chain" not in query else params.parse_chain(query["chain"])
        counts = await self._read(self.reads.daily_counts, first, last, chain)
        return _json(200, shapes.body(shapes.daily_stats(counts, first, last, chain)))

    async def _gaps(self, path: Mapping[str, str], query: Mapping[str, str]) -> Response:
        del path
        chain = None if "chain" not in query else params.parse_chain(query["chain"])
        emitter = None
        if "emitter" in query:
            if chain is None:
                raise BadParameterError("emitter", "needs chain (an emitter is per chain)")
            emitter = params.parse_emitter(query["emitter"])
        gaps, tracked, unreadable = await self._read(self.reads.open_gaps, chain, emitter)
        return _json(200, shapes.body(shapes.gaps_response(gaps, tracked, unreadable)))


class _BusyError(Exception):
    """More requests in flight than ``api.max_pending``."""


def limits(settings: EventsApiSettings) -> Limits:
    """The HTTP server's limits: no body is read (every route is GET)."""
    return Limits(
        max_body_bytes=0,
        header_timeout=settings.header_timeout,
        body_timeout=settings.header_timeout,
    )


async def serve(
    reads: Reads,
    settings: EventsApiSettings,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[int], None] | None = None,
    version: str = "0",
) -> None:
    """Check the store, serve until ``stop`` is set, then drain.

    Raises TableMissingError or StoreUnavailableError when the store cannot be read at start,
    and OSError when the address cannot be bound.
    """
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, reads.check)
    api = EventsApi(reads, settings, version=version)
    server = HttpServer(api, settings.host, settings.port, limits(settings))
    try:
        port = await server.start()
        if on_ready is not None:
            on_ready(port)
        await stop.wait()
    finally:
        await server.stop()
        api.close()
