"""The events API server: FastAPI routes over the store reads, on the project's HTTP stack.

Served by :mod:`chainloom.web` (FastAPI on uvicorn behind the wire guard, as the relayer's REST
endpoint and the indexer's probes are), so malformed HTTP, slow clients and oversized heads are
answered in this API's JSON error shape too (:data:`ERRORS`). The routes, their parameters and
their answers are declared once, on the FastAPI app (:func:`events_app`), and ``/openapi.json``
is FastAPI's rendering of them and of the typed models (:mod:`chainloom.eventstore.api.models`).
A request's parameters are parsed before anything touches the store (a bad one is a 400 that
costs no read; an unknown or repeated query parameter too); the read runs on a bounded thread
pool (the Bigtable data client is synchronous), and more than ``api.max_pending`` requests in
flight are answered 503 ``busy`` instead of queueing without bound. A store that does not answer
within ``bigtable.operation_timeout`` is a 503 ``unavailable`` with one line naming it; the
server keeps serving and the next request tries again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import logging
import os
import pathlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, TypeVar

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import Response

from chainloom.eventstore.api import (
    conventions,
    filter_routes,
    models,
    params,
    shapes,
    volume_routes,
)
from chainloom.eventstore.api.circuit import StoreCircuit
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.errors import ApiError, BadParameterError, NotFoundError
from chainloom.eventstore.api.stream import StreamHub, StreamReads
from chainloom.eventstore.errors import (
    StoreConfigError,
    StoreUnavailableError,
    TableMissingError,
)
from chainloom.eventstore.feed import VaaFeed
from chainloom.eventstore.filter_index import Filters
from chainloom.eventstore.filter_scan import FilteredPage
from chainloom.eventstore.keys import MessageKey, normalize_tx_id
from chainloom.eventstore.queries import StoredMessage
from chainloom.eventstore.redemptions import Redemptions
from chainloom.eventstore.rollups import Volume
from chainloom.relayer.errors import TablesUnavailableError
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer
from chainloom.web.wire import Limits
from chainloom.wormhole.sequences import OpenGap

log = logging.getLogger(__name__)

T = TypeVar("T")

REFUSAL_WORDS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    413: "too_large",
    431: "head_too_large",
    500: "error",
    501: "not_implemented",
    503: "unavailable",
    505: "version_not_supported",
}
"""The ``error`` word of each status the API or the wire guard answers."""

ERRORS = JsonErrors(
    "error",
    REFUSAL_WORDS,
    fields={"parameter": None},
    log_name="events api",
    dumps=lambda document: shapes.error_body(
        document["error"], document["reason"], document.get("parameter")
    ),
)
"""``{"error", "reason", "parameter"}``: every answer other than 200."""


def _json(status: int, data: bytes) -> Response:
    return Response(data, status, media_type="application/json")


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

    def filtered(
        self, filters: Filters, order: str, after: str | None, size: int
    ) -> FilteredPage: ...

    def volume(
        self, dimension: str, first: dt.date, last: dt.date, by_hour: bool
    ) -> dict[tuple[str, str], Volume]: ...

    def daily_counts(
        self, first: dt.date, last: dt.date, chain: int | None
    ) -> dict[tuple[int, str], int]: ...

    def open_gaps(
        self, chain: int | None, emitter: str | None
    ) -> tuple[list[OpenGap], int, list[str]]: ...


class EventsApi:
    """The store side of the routes: the reads, their thread pool and the busy bound."""

    def __init__(self, reads: Reads, settings: EventsApiSettings, *, version: str = "0") -> None:
        self.reads = reads
        self.settings = settings
        self.version = version
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.workers, thread_name_prefix="events-api"
        )
        self._pending = 0
        self.circuit = StoreCircuit(self._check_store, settings.probe_interval)
        """Open while the store is known down (:mod:`chainloom.eventstore.api.circuit`)."""
        self.cursor_key = cursor_key(settings.cursor_key_file)
        """The key list cursors are MACed with (:mod:`chainloom.eventstore.api.params`)."""
        self.stream: StreamHub | None = None
        """The event stream's hub (set by :func:`serve`; None: the stream answers 503)."""
        self.redemptions: Redemptions | None = None
        """The relayer's tables (set by :func:`serve`; None: redemptions are unknown)."""

    @property
    def in_flight(self) -> int:
        """Requests running or waiting for a thread of the pool (what ``max_pending`` bounds)."""
        return self._pending

    def _check_store(self) -> None:
        self.reads.check()

    def close(self) -> None:
        """End the thread pool and the probe (after the server stopped)."""
        self.circuit.close()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def read(self, call: Callable[..., T], *args: object) -> T:
        """Run one blocking store call on the pool, answered within ``api.request_deadline``
        (waiting for a thread included): 503 at once while the store is known down, ``busy``
        past ``max_pending`` or when no thread was free in time, ``unavailable`` when the read
        did not finish in time. A read that fails for an outage opens the circuit."""
        if self.circuit.open:
            raise self.circuit.refusal()
        if self._pending >= self.settings.max_pending:
            raise BusyError(
                f"more than {self.settings.max_pending} requests in flight; retry shortly"
            )
        deadline = self.settings.request_deadline
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def run() -> T:
            loop.call_soon_threadsafe(started.set)
            return call(*args)

        self._pending += 1
        try:
            async with asyncio.timeout(deadline):
                return await loop.run_in_executor(self._executor, run)
        except TimeoutError:
            if not started.is_set():
                raise BusyError(f"no thread free within {deadline:g} s; retry shortly") from None
            raise DeadlineError(f"the store did not answer within {deadline:g} s") from None
        except (StoreUnavailableError, TableMissingError) as down:
            self.circuit.trip(down)
            raise
        finally:
            self._pending -= 1


MIN_CURSOR_KEY_BYTES = 16


def cursor_key(path: pathlib.Path | None) -> bytes:
    """The deployment's cursor key from ``path``, or a random one for this process.

    Raises StoreConfigError when the file cannot be read or holds under 16 bytes."""
    if path is None:
        return os.urandom(32)
    try:
        key = path.read_bytes().strip()
    except OSError as error:
        raise StoreConfigError(
            f"api.cursor_key_file {path}: cannot read it ({error.strerror})"
        ) from None
    if len(key) < MIN_CURSOR_KEY_BYTES:
        raise StoreConfigError(
            f"api.cursor_key_file {path}: holds {len(key)} bytes (at least {MIN_CURSOR_KEY_BYTES})"
        )
    return key


class BusyError(ApiError):
    """More requests in flight than ``api.max_pending``, or no thread free in time."""

    status = 503
    word = "busy"


class DeadlineError(ApiError):
    """The store did not answer within ``api.request_deadline``."""

    status = 503
    word = "unavailable"


def _only(*names: str) -> Callable[[Request], Awaitable[dict[str, str]]]:
    """A dependency refusing query parameters other than ``names``, and repeated ones (async:
    FastAPI runs a plain function's dependency on its thread pool, a thread hop per request)."""

    async def query(request: Request) -> dict[str, str]:
        return params.parse_query("?" + request.url.query, names)

    return query


ChainPath = Annotated[
    str,
    Path(
        description="Emitter chain: a Wormhole chain id (2) or name (ethereum).",
        pattern="^[A-Za-z0-9_-]{1,40}$",
    ),
]
EmitterPath = Annotated[
    str,
    Path(
        description="Emitter address: hex of up to 32 bytes, optional 0x (left-padded to 64 "
        "characters).",
        pattern="^(0x)?[0-9a-fA-F]{1,64}$",
    ),
]
PageSize = Annotated[
    str | None,
    Query(
        alias="pageSize",
        description="VAAs per page (settings api.default_page_size; at most api.max_page_size).",
        pattern="^[0-9]+$",
    ),
]
CursorQuery = Annotated[
    str | None,
    Query(description="pagination.next of the previous page (opaque; bound to this list)."),
]
SequencePath = Annotated[
    str, Path(description="The sequence, decimal uint64.", pattern="^[0-9]{1,20}$")
]
ChainQuery = Annotated[str | None, Query(description="Only this chain (id or name).")]

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": models.ErrorBody,
        "description": "A malformed parameter (named in `parameter`).",
    },
    404: {"model": models.ErrorBody, "description": "Nothing stored for what was asked."},
    503: {
        "model": models.ErrorBody,
        "description": "The store is unreachable, or the server is busy (`error` says which).",
    },
    "default": {
        "model": models.ErrorBody,
        "description": "Any other refusal (405, and the HTTP server's 408, 413, 431, 505).",
    },
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    keys: tuple[int | str, ...] = (*statuses, "default")
    return {key: _ERRORS[key] for key in keys}


only = _only
"""A route's dependency refusing other query parameters (for the routes of other modules)."""
error_responses = _errors
"""A route's documented refusals (for the routes of other modules)."""


def events_app(api: EventsApi) -> FastAPI:
    """The API's routes over ``api``; ``/openapi.json`` documents them (OpenAPI 3.1)."""
    app = make_app(
        "chainloom events API",
        ERRORS,
        routes_hint="GET /openapi.json lists the routes",
        version=api.version,
        description="Wormhole messages from the chainloom event store (Bigtable). "
        "See docs/events-api.md.",
        cancel_on_disconnect=True,
    )
    settings = api.settings
    key = api.cursor_key

    async def refused(request: Request, error: Exception) -> Response:
        assert isinstance(error, ApiError)
        parameter = error.parameter if isinstance(error, BadParameterError) else None
        return ERRORS.response(error.status, error.reason, parameter=parameter, error=error.word)

    async def outage(request: Request, error: Exception) -> Response:
        del request  # logged once by the circuit when it opens, not once per request
        return ERRORS.response(503, str(error))

    app.add_exception_handler(ApiError, refused)
    app.add_exception_handler(StoreUnavailableError, outage)
    app.add_exception_handler(TableMissingError, outage)
    app.add_exception_handler(TablesUnavailableError, outage)
    conventions.install(app, settings)
    from chainloom.eventstore.api import stream_routes  # noqa: PLC0415 (it imports this module)

    stream_routes.add_routes(app, api)  # before /vaas/{chain}, which would match /vaas/stream

    def page(found: list[StoredMessage], more: bool, chain: int) -> Response:
        following = None
        if more and found:
            last = found[-1].key
            following = params.encode_cursor(
                params.Cursor(chain, last.emitter, last.sequence), api.cursor_key
            )
        answer = models.VaaPage(
            data=[shapes.vaa_doc(m.key, m.families) for m in found],
            pagination=models.Pagination(next=following),
        )
        return _json(200, shapes.body(answer))

    @app.get(
        "/api/v1/vaas/{chain}/{emitter}/{seq}",
        operation_id="get_vaa",
        summary="One message: decoded fields, the signed VAA (base64) and its enrichment.",
        response_model=models.VaaResponse,
        responses={
            **_errors(400, 404, 503),
            304: {"description": "The copy named in If-None-Match is current (no body)."},
        },
    )
    async def get_vaa(
        chain: ChainPath,
        emitter: EmitterPath,
        seq: SequencePath,
        request: Request,
        _: Annotated[dict[str, str], Depends(_only())],
    ) -> Response:
        key = MessageKey(
            params.parse_chain(chain), params.parse_emitter(emitter), params.parse_sequence(seq)
        )
        message = await api.read(api.reads.message, key)
        if message is None:
            raise NotFoundError(f"no message {key.message_id} is stored")
        doc = shapes.vaa_doc(message.key, message.families)
        return conventions.vaa_answer(
            shapes.body(models.VaaResponse(data=doc)),
            signed=doc.vaa is not None,
            if_none_match=request.headers.get("if-none-match"),
            settings=settings,
        )

    @app.get(
        "/api/v1/vaas/{chain}/{emitter}",
        operation_id="list_emitter_vaas",
        summary="One emitter's messages by ascending sequence, a page at a time.",
        response_model=models.VaaPage,
        responses=_errors(400, 503),
    )
    async def list_emitter_vaas(
        chain: ChainPath,
        emitter: EmitterPath,
        query: Annotated[dict[str, str], Depends(_only("pageSize", "cursor"))],
        page_size: PageSize = None,
        cursor: CursorQuery = None,
    ) -> Response:
        del page_size, cursor  # documented above; parsed from ``query``
        chain_id = params.parse_chain(chain)
        emitter_hex = params.parse_emitter(emitter)
        size = params.parse_page_size(query, settings.default_page_size, settings.max_page_size)
        text = query.get("cursor")
        after = None if text is None else params.decode_cursor(text, chain_id, emitter_hex, key)
        sequence = None if after is None else after.sequence
        found, more = await api.read(api.reads.emitter_page, chain_id, emitter_hex, sequence, size)
        return page(found, more, chain_id)

    @app.get(
        "/api/v1/vaas/{chain}",
        operation_id="list_chain_vaas",
        summary="A chain's messages by emitter, then ascending sequence, a page at a time.",
        response_model=models.VaaPage,
        responses=_errors(400, 503),
    )
    async def list_chain_vaas(
        chain: ChainPath,
        query: Annotated[dict[str, str], Depends(_only("pageSize", "cursor"))],
        page_size: PageSize = None,
        cursor: CursorQuery = None,
    ) -> Response:
        del page_size, cursor
        chain_id = params.parse_chain(chain)
        size = params.parse_page_size(query, settings.default_page_size, settings.max_page_size)
        text = query.get("cursor")
        after = None if text is None else params.decode_cursor(text, chain_id, None, key)
        found, more = await api.read(api.reads.chain_page, chain_id, after, size)
        return page(found, more, chain_id)

    _index_routes(app, api)
    from chainloom.eventstore.api import (  # noqa: PLC0415 (they import this module)
        operation_routes,
        tool_routes,
    )

    tool_routes.add_routes(app, api)
    filter_routes.add_routes(app, api)
    volume_routes.add_routes(app, api)
    operation_routes.add_routes(app, api)
    return app


def _index_routes(app: FastAPI, api: EventsApi) -> None:
    """The routes answered from the index table and the health probe."""
    settings = api.settings

    @app.get(
        "/api/v1/transactions/{tx_id}",
        operation_id="get_transaction",
        summary="The messages a source transaction emitted (through the index table's tx: rows).",
        response_model=models.TransactionResponse,
        responses=_errors(400, 404, 503),
    )
    async def get_transaction(
        tx_id: Annotated[
            str,
            Path(
                description="Source transaction id: hex (0x optional, any case) or a chain's "
                "native form.",
                min_length=1,
                max_length=200,
            ),
        ],
        _: Annotated[dict[str, str], Depends(_only())],
    ) -> Response:
        if not tx_id.strip():
            raise BadParameterError("tx_id", "a transaction id of 1-200 characters")
        found = await api.read(api.reads.by_tx, tx_id)
        if not found:
            raise NotFoundError(f"no message is indexed for transaction {tx_id[:200]}")
        answer = models.TransactionResponse(
            tx_hash=normalize_tx_id(tx_id), data=[shapes.vaa_doc(m.key, m.families) for m in found]
        )
        return _json(200, shapes.body(answer))

    @app.get(
        "/api/v1/stats/daily",
        operation_id="daily_stats",
        summary="Messages per UTC day and chain (counted from the index table's count: rows).",
        response_model=models.DailyStats,
        responses=_errors(400, 503),
    )
    async def daily_stats(
        query: Annotated[dict[str, str], Depends(_only("from", "to", "chain"))],
        from_: Annotated[
            dt.date | None, Query(alias="from", description="First UTC day, YYYY-MM-DD.")
        ] = None,
        to: Annotated[
            dt.date | None, Query(description="Last UTC day (included), YYYY-MM-DD.")
        ] = None,
        chain: ChainQuery = None,
    ) -> Response:
        del from_, to
        first, last = params.parse_day_range(query, settings.max_stats_days)
        chain_id = None if chain is None else params.parse_chain(chain)
        counts = await api.read(api.reads.daily_counts, first, last, chain_id)
        return _json(200, shapes.body(shapes.daily_stats(counts, first, last, chain_id)))

    @app.get(
        "/api/v1/gaps",
        operation_id="gaps",
        summary="Open gaps in emitters' sequences, from the indexer's saved state (gaps: rows).",
        response_model=models.GapsResponse,
        responses=_errors(400, 503),
    )
    async def gaps(
        _: Annotated[dict[str, str], Depends(_only("chain", "emitter"))],
        chain: ChainQuery = None,
        emitter: Annotated[
            str | None, Query(description="Only this emitter (hex; with chain).")
        ] = None,
    ) -> Response:
        chain_id = None if chain is None else params.parse_chain(chain)
        emitter_hex = None
        if emitter is not None:
            if chain_id is None:
                raise BadParameterError("emitter", "needs chain (an emitter is per chain)")
            emitter_hex = params.parse_emitter(emitter)
        found, tracked, unreadable = await api.read(api.reads.open_gaps, chain_id, emitter_hex)
        return _json(200, shapes.body(shapes.gaps_response(found, tracked, unreadable)))

    @app.get(
        "/healthz",
        operation_id="health",
        summary="Liveness: the server's event loop answers.",
        response_model=models.Health,
    )
    async def health() -> Response:
        return _json(200, shapes.body(models.Health(status="ok")))

    @app.get(
        "/readyz",
        operation_id="ready",
        summary="Readiness: one read of each table answered (503 while the store is down).",
        response_model=models.Health,
        responses=_errors(503),
    )
    async def ready() -> Response:
        await api.read(api.reads.check)
        return _json(200, shapes.body(models.Health(status="ready")))


def document(version: str = "0") -> dict[str, Any]:
    """The OpenAPI document served at ``/openapi.json``, rendered without a store."""
    api = EventsApi(_NoReads(), EventsApiSettings(), version=version)
    try:
        return events_app(api).openapi()
    finally:
        api.close()


class _NoReads:
    """Reads for rendering the document only (never called)."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


def limits(settings: EventsApiSettings) -> Limits:
    """The HTTP server's limits: a body only as large as ``POST /vaas/parse`` takes."""
    return Limits(
        max_body_bytes=settings.max_parse_bytes,
        header_timeout=settings.header_timeout,
        body_timeout=settings.header_timeout,
        log_name="events api",
    )


async def serve(
    reads: Reads,
    settings: EventsApiSettings,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[int], None] | None = None,
    version: str = "0",
    stream_reads: StreamReads | None = None,
    feed: VaaFeed | None = None,
    redemptions: Redemptions | None = None,
) -> None:
    """Check the store, serve until ``stop`` is set, then drain.

        ``stream_reads`` (the ``feed:`` rows) enables ``/api/v1/vaas/stream``; ``feed`` wakes it as
        soon as a writer publishes (without it the stream polls every ``api.stream_poll_interval``).
    ``redemptions`` (the relayer's tables) gives the operations routes the target-chain side.

        Raises TableMissingError or StoreUnavailableError when the store cannot be read at start,
        and OSError when the address cannot be bound.
    """
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, reads.check)
    api = EventsApi(reads, settings, version=version)
    api.redemptions = redemptions
    if stream_reads is not None:
        api.stream = StreamHub(
            stream_reads,
            api.read,
            feed=feed,
            poll_interval=settings.stream_poll_interval,
            buffer=settings.stream_buffer,
            max_clients=settings.stream_max_clients,
        )
        api.stream.start()
    server = WebServer(events_app(api), settings.host, settings.port, limits(settings), ERRORS)
    try:
        port = await server.start()
        if on_ready is not None:
            on_ready(port)
        await stop.wait()
    finally:
        if api.stream is not None:  # streams never end by themselves: end them first
            await api.stream.close()
        await server.stop()
        api.close()
