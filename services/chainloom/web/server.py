"""One way to run an HTTP server: an ASGI app on uvicorn, behind the wire guard, with limits.

Every server the project runs (the relayer's REST endpoint, the events API, the ledger API,
the indexer's probes) is started here, so they share one policy: the guard's refusals
(:mod:`chainloom.web.wire`), one log line per refused request and none per answered one
(uvicorn's access log is off; a service logs what it decides), WebSocket idle pings, and a
graceful stop. :class:`WebServer` is used from a running event loop: :meth:`~WebServer.start`
binds (port 0 picks one) and returns the port, :meth:`~WebServer.stop` stops accepting, closes
idle connections, lets requests already received finish (their answers say
``Connection: close``) and cancels what still runs after ``drain_timeout``. Signals are left to
the caller (the CLI sets its own stop event), unlike ``uvicorn.run``.

The accept loop: on EMFILE (out of file descriptors) asyncio already stops accepting for a
second and retries, but reports each time with a traceback through the loop's exception
handler; :func:`quiet_accept_errors` turns that into one line per interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any

import uvicorn

from chainloom.web.wire import Limits, Refusals, guarded_protocol

log = logging.getLogger(__name__)

for _name in ("uvicorn.error", "uvicorn"):  # start/stop chatter: the services log their own
    logging.getLogger(_name).setLevel(logging.WARNING)


@dataclass(frozen=True, slots=True)
class WebSocketLimits:
    """How long a WebSocket may stay silent and how large one message may be."""

    ping_interval: float | None = 20.0
    """Seconds between the server's pings (None: no pings)."""
    ping_timeout: float | None = 20.0
    """Seconds to wait for the pong before the connection is closed."""
    max_message_bytes: int = 1024 * 1024
    """Largest message accepted (the connection is closed with 1009 above it)."""


DESCRIPTOR_RESERVE = 128
"""Descriptors kept for everything but client connections (the store's channels, logs, threads'
pipes): the connection cap stays this far below the process's limit."""


def connection_cap(wanted: int) -> int:
    """``wanted``, or less: the soft descriptor limit less :data:`DESCRIPTOR_RESERVE`, so that
    connections past the cap are refused cleanly instead of failing accept with EMFILE."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - DESCRIPTOR_RESERVE))


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers (the caller owns the process's signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class WebServer:
    """Serves one ASGI app on one address: :meth:`start`, :attr:`port`, :meth:`stop`."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        limits: Limits,
        refusals: Refusals,
        *,
        websocket: WebSocketLimits | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.limits = replace(limits, max_connections=connection_cap(limits.max_connections))
        ws = websocket or WebSocketLimits()
        self._draining = _Draining(app)
        self.config = uvicorn.Config(
            self._draining,
            http=guarded_protocol(self.limits, refusals),
            ws="websockets-sansio" if websocket is not None else "none",
            ws_max_size=ws.max_message_bytes,
            ws_ping_interval=ws.ping_interval,
            ws_ping_timeout=ws.ping_timeout,
            ws_per_message_deflate=False,
            lifespan="off",
            access_log=False,
            log_config=None,
            server_header=False,
            proxy_headers=False,  # X-Forwarded-For from a client is not its address
            timeout_keep_alive=max(1, round(limits.header_timeout)),
            h11_max_incomplete_event_size=limits.max_head_bytes,
        )
        self._server = _Server(self.config)
        self._serving: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Bind and serve; returns the port (the one chosen when ``port`` is 0).

        Raises OSError when the address cannot be bound."""
        quiet_accept_errors(asyncio.get_running_loop())
        listening = _listening_socket(self.host, self.port)
        self.port = int(listening.getsockname()[1])
        self._serving = asyncio.create_task(self._server.serve(sockets=[listening]))
        while not self._server.started:
            if self._serving.done():
                listening.close()
                await self._serving  # raises what stopped it
                raise OSError(f"the server on {self.host}:{self.port} stopped at start")
            await asyncio.sleep(0.01)
        return self.port

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Stop accepting, let received requests finish, then close every connection."""
        if self._serving is None:
            return
        self.config.timeout_graceful_shutdown = max(1, round(drain_timeout))
        self._draining.stopping = True
        self._server.should_exit = True
        serving, self._serving = self._serving, None
        await serving


def _listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket. Made with ``IPPROTO_TCP`` (not 0, as
    ``socket.create_server`` makes it): asyncio turns Nagle's algorithm off only on sockets
    whose protocol says TCP, and with it on, an answer written in two parts (head, body) waits
    for the client's delayed ACK, ~40 ms a request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(2048)
    except OSError:
        listening.close()
        raise
    return listening


class _Draining:
    """Adds ``Connection: close`` to the answers given while the server stops."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.stopping = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if self.stopping and message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, closing)


_ACCEPT_MESSAGE = "socket.accept() out of system resource"
_REPORT_EVERY = 10.0


class _AcceptReports:
    """The loop's exception handler: accept failures in one line per interval, the rest as
    asyncio would report them."""

    def __init__(self) -> None:
        self.last = 0.0
        self.count = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != _ACCEPT_MESSAGE:
            loop.default_exception_handler(context)
            return
        self.count += 1
        now = time.monotonic()
        if now - self.last >= _REPORT_EVERY:
            log.warning(
                "http: cannot accept connections (%s); %d time(s) in %g s, retrying each second",
                context.get("exception"), self.count, _REPORT_EVERY,
            )  # fmt: skip
            self.last, self.count = now, 0


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Report the accept loop's out-of-descriptor errors in one line per interval."""
    if not isinstance(loop.get_exception_handler(), _AcceptReports):
        loop.set_exception_handler(_AcceptReports())
