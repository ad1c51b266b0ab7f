"""The HTTP side of ``chainloom ledger api``: aiohttp in front of the methods.

The server only orchestrates: it reads a bounded body, has :mod:`.requests` parse it (a
malformed request is answered here and never reaches the database), runs the method on a
bounded thread pool (the backends are synchronous), and writes what :mod:`.shapes` built with
orjson. More requests in flight than ``max_pending`` are refused with ``tooBusy`` (503) rather
than queued without bound. A background task re-reads the ledger range once a second so newly
loaded ledgers become visible.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from chainloom.errors import UnavailableError
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import ApiError, MalformedRequestError, RpcError
from chainloom.ledger.api.methods import Context, answer
from chainloom.ledger.api.shapes import error_body, success
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.errors import LedgerError

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


class LedgerApi:
    """The aiohttp application answering rippled's JSON-RPC from one backend."""

    def __init__(self, backend: BackendInterface, options: ApiOptions | None = None) -> None:
        self.options = options or ApiOptions()
        self.context = Context(backend=backend, version=self.options.version)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.options.workers, thread_name_prefix="ledger-api"
        )
        self._pending = 0
        self._refresher: asyncio.Task[None] | None = None

    def app(self) -> web.Application:
        """The application: JSON-RPC on ``POST /``, rippled's WebSocket API on ``GET /``."""
        application = web.Application(client_max_size=rq.MAX_BODY_BYTES)
        application.router.add_post("/", self.handle)
        application.router.add_get("/", self.websocket)
        application.on_startup.append(self._start_refresher)
        application.on_cleanup.append(self._cleanup)
        return application

    async def handle(self, request: web.Request) -> web.Response:
        """One JSON-RPC call."""
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=f"request body over {rq.MAX_BODY_BYTES} bytes\n")
        try:
            call = rq.parse_call(body)
        except MalformedRequestError as bad:
            return web.Response(status=bad.http_status, text=f"{bad}\n")
        result, status = await self.dispatch(call)
        return web.Response(
            body=orjson.dumps({"result": result}), status=status, content_type="application/json"
        )

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        """rippled's WebSocket API: ``{"id", "command", ...params}`` in, ``{"id", "result",
        "status", "type": "response"}`` out (an error's fields sit beside ``id``)."""
        socket = web.WebSocketResponse(max_msg_size=rq.MAX_BODY_BYTES)
        await socket.prepare(request)
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                request_id, call = rq.parse_websocket_call(message.data)
            except MalformedRequestError as bad:
                await socket.send_bytes(orjson.dumps(shapes.websocket_malformed(str(bad))))
                continue
            result, _ = await self.dispatch(call)
            await socket.send_str(orjson.dumps(shapes.websocket_body(request_id, result)).decode())
        return socket

    async def dispatch(self, call: rq.Call) -> tuple[dict[str, Any], int]:
        """Validate and answer one call: the ``result`` object (a success or rippled's error
        object) and its HTTP status."""
        try:
            params = rq.parse_params(call)
        except RpcError as refused:
            return self._refusal(refused, call)
        if self._pending >= self.options.max_pending:
            return self._refusal(RpcError("tooBusy"), call)
        self._pending += 1
        try:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(
                self._executor, answer, self.context, call.method, params, call.api_version
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
            self._pending -= 1
        return success(result)["result"], 200

    @staticmethod
    def _refusal(refused: RpcError, call: rq.Call) -> tuple[dict[str, Any], int]:
        return error_body(refused, call.method, call.params)["result"], refused.http_status

    async def _start_refresher(self, application: web.Application) -> None:
        del application
        self._refresher = asyncio.create_task(self._refresh_range())

    async def _refresh_range(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.options.range_refresh_seconds)
            try:
                await loop.run_in_executor(
                    self._executor, self.context.backend.hard_fetch_ledger_range
                )
            except LedgerError as failed:
                log.warning("ledger api: cannot refresh the ledger range: %s", failed)

    async def _cleanup(self, application: web.Application) -> None:
        del application
        if self._refresher is not None:
            self._refresher.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)


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
    ) -> None:
        self._api = LedgerApi(backend, options)
        self._host = host
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
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
        self._runner = web.AppRunner(self._api.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        return _bound_port(self._runner)

    def stop(self) -> None:
        """Stop serving and end the thread."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise ApiError("the API server did not bind a TCP port")


async def serve(
    backend: BackendInterface,
    host: str,
    port: int,
    options: ApiOptions | None = None,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[int], None] | None = None,
) -> None:
    """Serve until ``stop`` is set (the CLI sets it on SIGINT/SIGTERM)."""
    runner = web.AppRunner(LedgerApi(backend, options).app())
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        if on_ready is not None:
            on_ready(_bound_port(runner))
        await stop.wait()
    finally:
        await runner.cleanup()
