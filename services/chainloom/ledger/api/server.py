"""The HTTP side of ``chainloom ledger api``: a FastAPI app in front of the methods.

The server only orchestrates: it reads a bounded body, has :mod:`.requests` parse it (a
malformed request is answered here and never reaches the database), runs the method on a
bounded thread pool (the backends are synchronous), and writes what :mod:`.shapes` built with
orjson. More requests in flight than ``max_pending`` are refused with ``tooBusy`` (503) rather
than queued without bound. A background task re-reads the ledger range once a second so newly
loaded ledgers become visible. JSON-RPC is ``POST /`` and rippled's WebSocket API is ``/``, on
the project's HTTP stack (:mod:`chainloom.web`: uvicorn behind the wire guard, with its read
timeouts and WebSocket pings); the HTTP refusals are plain text, as rippled's are. Calls that
need a live server are sent to rippled instead (:mod:`.forwarding`, :mod:`.rippled`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import Response

from chainloom.errors import UnavailableError
from chainloom.ledger.api import forwarding as fw
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.errors import MalformedRequestError, RpcError
from chainloom.ledger.api.methods import Context, answer
from chainloom.ledger.api.publisher import Publisher
from chainloom.ledger.api.rippled import RippledForwarder
from chainloom.ledger.api.shapes import error_body, success
from chainloom.ledger.api.websocket import ConnectionLimits, Subscriptions, serve_connection
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import ForwardingSettings
from chainloom.ledger.errors import LedgerError
from chainloom.ledger.feed import LedgerFeed
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer, WebSocketLimits
from chainloom.web.wire import Limits

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ApiOptions:
    """How the server runs."""

    workers: int = 16
    """Threads running backend calls (requests served at once)."""
    max_pending: int = 256
    """Requests in flight (running or waiting for a thread) before ``tooBusy``."""
    range_refresh_seconds: float = 1.0
    """How often the stored ledger range is re-read."""
    version: str = "0"
    """Reported as ``server_info.build_version``."""
    header_timeout: float = 20.0
    """Seconds for a whole request head (from connecting, or from the previous answer: the
    keep-alive timeout too); then the connection is closed."""
    body_timeout: float = 20.0
    """Seconds for a whole body once its head arrived; then 408."""
    max_connections: int = 4096
    """Open connections (HTTP and WebSocket) before a new one is refused (503, closed); never
    more than the process's descriptor limit less a reserve (:mod:`chainloom.web.server`)."""
    ws_idle_timeout: float = 300.0
    """Seconds a WebSocket may stay without a request; then it is closed (1001, ``idle``)."""
    ws_ping_interval: float = 20.0
    """Seconds between the server's pings on a WebSocket."""
    ws_ping_timeout: float = 20.0
    """Seconds to wait for the pong; a client that does not answer is disconnected."""
    client_budget: int = 64
    """Weight (:data:`METHOD_WEIGHTS`) one client address may have in flight; a call past it
    is answered ``slowDown`` at once (Clio's DoS guard)."""
    light_workers: int = 4
    """Threads for the cheap methods (weight 1), apart from ``workers``: a cheap call is never
    queued behind expensive ones."""
    forwarding: ForwardingSettings = field(default_factory=ForwardingSettings)
    """The rippled servers that calls needing a live server go to (:mod:`.forwarding`)."""
    ws_queue_limit: int = 100
    """Messages waiting to be sent on one WebSocket before its client is dropped as too slow
    (1008, as rippled's ``send_queue_limit``)."""


METHOD_WEIGHTS: dict[str, int] = {
    "ledger_data": 8,
    "account_tx": 4,
    "nft_history": 4,
    "nfts_by_issuer": 4,
    "book_offers": 4,
    "ledger": 2,
}
"""What a call costs against its client's budget (others: 1). Calls of weight 1 run on the
light pool."""


class PlainRefusals(JsonErrors):
    """The HTTP refusals of the ledger API: one line of plain text, as rippled answers."""

    def body(self, status: int, reason: str, **fields: Any) -> bytes:
        return f"{reason}\n".encode()

    def render(self, status: int, reason: str) -> tuple[bytes, str]:
        return self.body(status, reason), "text/plain; charset=utf-8"

    def response(self, status: int, reason: str, headers: Any = None, **fields: Any) -> Response:
        return Response(self.body(status, reason), status, headers, media_type="text/plain")


ERRORS = PlainRefusals("error", {}, log_name="ledger api")
"""What the ledger API answers for a request that is not JSON-RPC over HTTP."""


class LedgerApi:
    """The methods over one backend: the thread pool, the busy bound and the range refresher."""

    def __init__(
        self,
        backend: BackendInterface,
        options: ApiOptions | None = None,
        *,
        feed: LedgerFeed | None = None,
    ) -> None:
        """``feed`` announces the ledgers an ETL commits (subscriptions also notice them through
        the range refresh, a second later at most)."""
        self.options = options or ApiOptions()
        self.context = Context(backend=backend, version=self.options.version)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.options.workers, thread_name_prefix="ledger-api"
        )
        self._light = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.options.light_workers, thread_name_prefix="ledger-api-light"
        )
        self._pending = {self._executor: 0, self._light: 0}
        self._spent: dict[str, int] = {}
        """Weight in flight per client address."""
        self._refresher: asyncio.Task[None] | None = None
        self.forwarder = RippledForwarder(
            self.options.forwarding, max_in_flight=self.options.max_pending
        )
        self._feed = feed
        self.publisher = Publisher(backend, self._executor)
        self._subscriptions = Subscriptions(self.publisher, self.context, self._executor)
        self._streaming: list[asyncio.Task[None]] = []

    def app(self) -> FastAPI:
        """The application: JSON-RPC on ``POST /``, rippled's WebSocket API on ``/``."""
        app = make_app("chainloom ledger API", ERRORS, routes_hint="POST / or a WebSocket on /")

        @app.post("/", summary="One JSON-RPC call (rippled's public API).")
        async def handle(request: Request) -> Response:
            client = request.client.host if request.client else "?"
            return await self.handle(await request.body(), client)

        @app.websocket("/")
        async def websocket(socket: WebSocket) -> None:
            await self.websocket(socket)

        @app.get("/healthz", summary="Liveness: the server's event loop answers.")
        async def health() -> Response:
            return Response(orjson.dumps({"status": "ok"}), 200, media_type="application/json")

        @app.get("/readyz", summary="Readiness: the backend answers a read of the ledger range.")
        async def ready() -> Response:
            return await self.ready()

        return app

    async def ready(self) -> Response:
        """200 once the backend has answered a read of the committed range (a real round trip,
        on the pool of cheap calls, within ``READY_TIMEOUT`` seconds); 503 naming the cause
        when it does not."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(READY_TIMEOUT):
                found = await loop.run_in_executor(
                    self._light, self.context.backend.hard_fetch_ledger_range
                )
        except TimeoutError:
            return _unready(f"the backend did not answer within {READY_TIMEOUT:g} s")
        except (LedgerError, UnavailableError) as failed:
            return _unready(str(failed))
        ledgers = "" if found is None else f"{found.min_sequence}-{found.max_sequence}"
        body = {"status": "ready", "complete_ledgers": ledgers}
        return Response(orjson.dumps(body), 200, media_type="application/json")

    async def handle(self, body: bytes, client: str = "?") -> Response:
        """One JSON-RPC call from ``client`` (its address)."""
        try:
            call = rq.parse_call(body)
        except MalformedRequestError as bad:
            return ERRORS.response(bad.http_status, str(bad))
        result, status = await self.dispatch(call, client)
        answer = {"result": result, **fw.envelope_fields(result)}
        return Response(orjson.dumps(answer), status, media_type="application/json")

    async def websocket(self, socket: WebSocket) -> None:
        """rippled's WebSocket API: ``{"id", "command", ...params}`` in, ``{"id", "result",
        "status", "type": "response"}`` out (an error's fields sit beside ``id``), and the
        subscription streams (:mod:`.websocket`). Every answer is a text frame, as rippled
        sends; a request in a binary frame is read as UTF-8 text and answered the same
        (``jsonInvalid`` when it is not UTF-8)."""
        await socket.accept()
        client = socket.client.host if socket.client else "?"
        limits = ConnectionLimits(
            idle_timeout=self.options.ws_idle_timeout, queue_limit=self.options.ws_queue_limit
        )
        await serve_connection(socket, client, self.dispatch, self._subscriptions, limits)

    async def dispatch(  # noqa: PLR0911 - one return per outcome
        self, call: rq.Call, client: str = "?"
    ) -> tuple[dict[str, Any], int]:
        """Validate and answer one call from ``client``: the ``result`` object (a success or
        rippled's error object) and its HTTP status.

        The call's weight counts against the client's budget while it runs (past the budget:
        ``slowDown``); cheap calls run on a pool of their own, each pool with its own
        ``max_pending`` (past it: ``tooBusy``), so expensive calls never hold cheap ones up.
        What needs a live server goes to rippled instead (:mod:`.forwarding`)."""
        if call.version_error is None:
            routed = fw.route(
                call.method,
                call.params,
                rippled_configured=self.forwarder.configured,
                local_methods=rq.PARSERS,
            )
            if routed is not fw.Route.LOCAL:
                return await self._forward(call, client)
        try:
            params = rq.parse_params(call)
        except RpcError as refused:
            return self._refusal(refused, call)
        weight = METHOD_WEIGHTS.get(call.method, 1)
        pool = self._light if weight == 1 else self._executor
        refusal = self._admit(pool, weight, client)
        if refusal is not None:
            return self._refusal(refusal, call)
        try:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(
                pool, answer, self.context, call.method, params, call.api_version
            )
        except RpcError as refused:
            return self._refusal(refused, call)
        except UnavailableError as outage:
            log.warning("ledger api: %s failed: %s", call.method, outage)
            return self._refusal(RpcError("tooBusy", f"database unavailable: {outage}"), call)
        except LedgerError as failed:
            log.error("ledger api: %s failed: %s", call.method, failed)
            return self._refusal(RpcError("internal", str(failed)), call)
        finally:
            self._pending[pool] -= 1
            left = self._spent[client] - weight
            if left:
                self._spent[client] = left
            else:
                del self._spent[client]
        return success(result)["result"], 200

    async def _forward(self, call: rq.Call, client: str) -> tuple[dict[str, Any], int]:
        """Send ``call`` to rippled (weight 1 against the client's budget while it runs), or
        ``notEnabled`` when none is configured."""
        if not self.forwarder.configured:
            return self._refusal(fw.not_enabled(call.method), call)
        spent = self._spent.get(client, 0)
        if spent + 1 > self.options.client_budget:
            return self._refusal(RpcError("slowDown"), call)
        self._spent[client] = spent + 1
        try:
            return await self.forwarder.forward(call.method, call.params, client)
        except RpcError as failed:
            return self._refusal(failed, call)
        finally:
            left = self._spent[client] - 1
            if left:
                self._spent[client] = left
            else:
                del self._spent[client]

    def _admit(
        self, pool: concurrent.futures.ThreadPoolExecutor, weight: int, client: str
    ) -> RpcError | None:
        """Count a call in (its pool's pending, its client's weight), or why it is refused."""
        spent = self._spent.get(client, 0)
        if spent + weight > self.options.client_budget:
            return RpcError("slowDown")
        if self._pending[pool] >= self.options.max_pending:
            return RpcError("tooBusy")
        self._pending[pool] += 1
        self._spent[client] = spent + weight
        return None

    @staticmethod
    def _refusal(refused: RpcError, call: rq.Call) -> tuple[dict[str, Any], int]:
        return error_body(refused, call.method, call.params)["result"], refused.http_status

    def start(self) -> None:
        """Start re-reading the ledger range and publishing new ledgers to subscribers (from a
        running event loop)."""
        found = self.context.backend.fetch_ledger_range()
        self.publisher.start_after(None if found is None else found.max_sequence)
        self._refresher = asyncio.create_task(self._refresh_range())
        self._streaming.append(asyncio.create_task(self.publisher.run()))
        if self._feed is not None:
            self._streaming.append(asyncio.create_task(self._follow_feed(self._feed)))

    async def _follow_feed(self, feed: LedgerFeed) -> None:
        async for sequence in feed.listen():
            self.publisher.notify(sequence)

    async def _refresh_range(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.options.range_refresh_seconds)
            try:
                found = await loop.run_in_executor(
                    self._executor, self.context.backend.hard_fetch_ledger_range
                )
            except LedgerError as failed:
                log.warning("ledger api: cannot refresh the ledger range: %s", failed)
                continue
            if found is not None:
                self.publisher.notify(found.max_sequence)

    async def close(self) -> None:
        """Stop the refresher, the thread pools and the cache's follower (after the server
        stopped)."""
        tasks = [task for task in (self._refresher, *self._streaming) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._feed is not None:
            self._feed.close()
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._light.shutdown(wait=True, cancel_futures=True)
        await self.forwarder.close()
        if self.context.cache is not None:
            self.context.cache.close()


READY_TIMEOUT = 5.0
"""Seconds ``/readyz`` waits for the backend (below a Kubernetes probe's own timeout)."""


def _unready(reason: str) -> Response:
    body = {"status": "unavailable", "reason": reason}
    return Response(orjson.dumps(body), 503, media_type="application/json")


def http_limits(options: ApiOptions, log_name: str = "ledger api") -> Limits:
    """The wire limits of a server with ``options``: the request size, header and body
    timeouts and connection bound (``log_name`` names it in their log lines)."""
    return Limits(
        max_body_bytes=rq.MAX_BODY_BYTES,
        header_timeout=options.header_timeout,
        body_timeout=options.body_timeout,
        max_connections=options.max_connections,
        log_name=log_name,
    )


def web_server(api: LedgerApi, host: str, port: int) -> WebServer:
    """The ledger API's server on ``host:port``, within the limits of its options."""
    options = api.options
    limits = http_limits(options)
    websocket = WebSocketLimits(
        ping_interval=options.ws_ping_interval,
        ping_timeout=options.ws_ping_timeout,
        max_message_bytes=rq.MAX_BODY_BYTES,
    )
    return WebServer(api.app(), host, port, limits, ERRORS, websocket=websocket)


class ServerThread:
    """The API served from a thread of its own (its own event loop): for callers that are not
    async themselves, such as synchronous clients in the same process and the bench."""

    def __init__(
        self,
        backend: BackendInterface,
        options: ApiOptions | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        feed: LedgerFeed | None = None,
    ) -> None:
        self._api = LedgerApi(backend, options, feed=feed)
        self._server = web_server(self._api, host, port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0
        """The bound port (after :meth:`start`)."""

    def start(self) -> int:
        """Bind and serve; the port."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port = future.result(timeout=30)
        return self.port

    async def _start(self) -> int:
        self._api.start()
        return await self._server.start()

    def stop(self) -> None:
        """Stop serving and end the thread."""
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    async def _stop(self) -> None:
        await self._server.stop(drain_timeout=10.0)
        await self._api.close()


async def serve(
    backend: BackendInterface,
    host: str,
    port: int,
    options: ApiOptions | None = None,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[int], None] | None = None,
    feed: LedgerFeed | None = None,
) -> None:
    """Serve until ``stop`` is set (the CLI sets it on SIGINT/SIGTERM)."""
    api = LedgerApi(backend, options, feed=feed)
    server = web_server(api, host, port)
    api.start()
    try:
        bound = await server.start()
        if on_ready is not None:
            on_ready(bound)
        await stop.wait()
    finally:
        await server.stop()
        await api.close()
