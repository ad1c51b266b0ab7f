"""The HTTP/1.1 server of the relayer listener and the indexer probes: h11 over asyncio streams.

Why not aiohttp's server: the endpoint faces the open network, and its contract is that every
answer, including the answer to a request that is not well-formed HTTP, is the documented JSON
(``docs/relayer-api.md``). aiohttp (3.14) answers what its parser refuses (bad
``Content-Length``, ``Content-Length`` with chunked, oversized heads, broken request lines)
itself, in plain text, before any route or middleware runs, and offers no public hook to
change that. h11 is a sans-IO HTTP/1.1 state machine: it parses and frames, and hands every
protocol error back as :class:`h11.RemoteProtocolError` (with a suggested status code), so the
answer is ours to write. This module does the I/O around it and nothing else: it knows no
route and no JSON. What to answer comes from an :class:`HttpApp` -
:class:`chainloom.relayer.rest.RestApi` - which maps requests to responses and renders the
server's own refusals (:meth:`HttpApp.refusal`) in the same JSON shape as every other error.

What the server guards against, since the peer may be hostile:

* a head not complete within ``header_timeout`` of the connection opening or of the previous
  answer (slowloris, idle kept-alive connections): closed without an answer;
* a head over ``max_head_bytes`` or with more than ``max_header_lines`` lines: 431;
* framing h11 refuses (a request line that is not HTTP, a bad or conflicting
  ``Content-Length``, a bad chunk size), and ``Content-Length`` together with
  ``Transfer-Encoding`` (h11 would let chunked win; RFC 9112 section 6.1 allows refusing it, and a
  front proxy that read it the other way would be open to request smuggling): 400;
  a transfer coding other than chunked: 501; an HTTP version other than 1.0 and 1.1: 505;
* a body over ``max_body_bytes``: 413, decided on ``Content-Length`` before reading, or while
  reading a chunked body;
* a body not complete within ``body_timeout`` of its head (a ``Content-Length`` longer than
  what arrives, a huge chunk size, a trickle): 408.

Each of these refusals is logged in one INFO line (never a traceback) and closes the
connection: the answer is written, the sending side shut, and what the client still sends is
read and discarded for at most ``body_timeout`` so the client can read the answer before the
socket goes away (a close with unread data would reset it). Well-formed requests are read
whole (head and body) before the app sees them, and connections are kept alive as HTTP/1.1
says. On :meth:`HttpServer.stop` the server stops accepting, closes connections that have no
complete request head, lets requests already received finish (their answers say
``Connection: close``), and cancels what is still running after ``drain_timeout``.

There is no cap on open connections (aiohttp's server had none either): each costs one task and
one socket, a silent or slow one is gone after ``header_timeout``, and the process's file limit
or a front proxy bounds the rest. h11 is pure Python, so the HTTP layer costs more CPU per
request than aiohttp's C parser; next to a VAA's signature checks it is small (see the REST
bench in ``bench/relayer_rest.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Protocol

import h11

log = logging.getLogger(__name__)

READ_SIZE = 65536
"""Bytes asked of the socket per read."""

SUPPORTED_VERSIONS = (b"1.0", b"1.1")

_PHRASES = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}


@dataclass(frozen=True, slots=True)
class Request:
    """One complete request, head and body, as the app sees it."""

    method: str
    """The method as sent (a token; h11 checked it), e.g. ``POST``."""
    target: str
    """The request target as sent (path and query, still percent-encoded)."""
    headers: tuple[tuple[bytes, bytes], ...]
    """The header fields, names lower-cased (h11 normalizes them), in the order sent."""
    body: bytes
    """The whole body (empty when none was sent); never over ``max_body_bytes``."""
    peer: str
    """The client's address, for log lines."""

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.partition("?")[0]


@dataclass(frozen=True, slots=True)
class Response:
    """One answer: the server adds ``Content-Length``, ``Date`` and ``Connection``."""

    status: int
    """The status code."""
    body: bytes
    """The whole body (not sent for ``HEAD`` requests; ``Content-Length`` still says its size)."""
    content_type: str = "application/json"
    """The ``Content-Type`` header."""
    headers: tuple[tuple[str, str], ...] = ()
    """Further header fields, e.g. ``Allow`` on a 405."""


class HttpApp(Protocol):
    """What the server serves: an answer for each request, and the shape of its own refusals."""

    async def respond(self, request: Request) -> Response:
        """The answer to one well-formed request."""
        ...

    def refusal(self, status: int, reason: str) -> Response:
        """The answer the server gives on its own (400, 408, 413, 431, 501, 505)."""
        ...


@dataclass(frozen=True, slots=True)
class Limits:
    """How much and how slowly a client may send before the server refuses it."""

    max_body_bytes: int
    """Largest body read; a larger one is answered 413 (``rest.max_request_bytes``)."""
    header_timeout: float
    """Seconds for a whole request head, from the connection or the previous answer."""
    body_timeout: float
    """Seconds for a whole body once its head arrived (408); also bounds the lingering close."""
    max_head_bytes: int = 8192
    """Largest request head (request line and header lines); a larger one gets 431."""
    max_header_lines: int = 128
    """Most header lines in one request; more get 431."""


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A request the server answers itself, and closes the connection after."""

    status: int
    """The status code (400, 408, 413, 431, 501, 505)."""
    reason: str
    """What was wrong, on one line: the ``reason`` of the JSON answer and of the log line."""


@dataclass(slots=True)
class _Connection:
    """What :meth:`HttpServer.stop` needs to know of one open connection."""

    task: asyncio.Task[None]
    waiting_for_head: bool = True
    """True until a complete request head has arrived (and again between requests)."""
    stopping: bool = False
    """Set by :meth:`HttpServer.stop`: answer what is in flight with ``Connection: close``."""


class HttpServer:
    """Serves an :class:`HttpApp` on one address: :meth:`start`, :attr:`port`, :meth:`stop`."""

    def __init__(self, app: HttpApp, host: str, port: int, limits: Limits) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.limits = limits
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], _Connection] = {}
        self._stopping = False

    async def start(self) -> int:
        """Bind and serve; returns the port (the one chosen when ``port`` is 0)."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Stop accepting, let received requests finish, then close every connection."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections.values()):
            connection.stopping = True
            if connection.waiting_for_head:
                connection.task.cancel()
        tasks = list(self._connections)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=drain_timeout)
            if late:
                log.warning(
                    "http: %d request(s) still running after %g s at shutdown, cancelled",
                    len(late), drain_timeout,
                )  # fmt: skip
                for task in late:
                    task.cancel()
                await asyncio.wait(late)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(task)
        self._connections[task] = connection
        try:
            if not self._stopping:
                await _Exchange(self, connection, reader, writer).serve()
        except (ConnectionError, TimeoutError, asyncio.CancelledError):
            pass  # the peer went away or stopped reading, or the server stops: nothing to answer
        finally:
            del self._connections[task]
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()


class _Exchange:
    """One connection: requests read through h11, answers written back, until it closes."""

    def __init__(
        self,
        server: HttpServer,
        connection: _Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.app = server.app
        self.limits = server.limits
        self.connection = connection
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(
            h11.SERVER, max_incomplete_event_size=server.limits.max_head_bytes
        )
        peer = writer.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) else str(peer or "?")

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self.connection.waiting_for_head = True
            if self.connection.stopping:
                return
            try:
                event = await self._next_event(loop.time() + self.limits.header_timeout)
            except TimeoutError:
                return  # slowloris or idle keep-alive: closed without an answer
            except h11.RemoteProtocolError as error:
                await self._refuse(None, self._head_refusal(error))
                return
            if not isinstance(event, h11.Request):
                return  # the client closed between requests
            self.connection.waiting_for_head = False
            answer = await self._read_request(event, loop.time() + self.limits.body_timeout)
            if isinstance(answer, _Refusal):
                await self._refuse(event, answer)
                return
            try:
                response = await self.app.respond(answer)
            except Exception:  # a bug in a route: say so, keep serving others
                log.exception("listener: %s %s failed", answer.method, _shown(answer.target))
                response = self.app.refusal(500, "internal error")
            await self._send(event, response)
            if self.h11.our_state is not h11.DONE or self.h11.their_state is not h11.DONE:
                return  # HTTP/1.0, ``Connection: close``, or stopping
            self.h11.start_next_cycle()

    def _head_refusal(self, error: h11.RemoteProtocolError) -> _Refusal:
        if error.error_status_hint == 431:  # h11's words: "Receive buffer too long"
            return _Refusal(431, f"request head exceeds {self.limits.max_head_bytes} bytes")
        return _Refusal(error.error_status_hint, _reason(error))

    async def _read_request(self, head: h11.Request, deadline: float) -> Request | _Refusal:
        """The rest of a request whose head arrived, or why it is refused."""
        fields = tuple(head.headers)
        refusal = _check_head(head, fields, self.limits)
        if refusal is not None:
            return refusal
        limit = self.limits.max_body_bytes
        if _content_length(fields) > limit:
            return _Refusal(413, f"request body exceeds {limit} bytes")
        if self.h11.they_are_waiting_for_100_continue:
            go_on = h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")
            await self._write(self.h11.send(go_on))
        parts: list[bytes] = []
        size = 0
        try:
            while isinstance(event := await self._next_event(deadline), h11.Data):
                size += len(event.data)
                if size > limit:
                    return _Refusal(413, f"request body exceeds {limit} bytes")
                parts.append(bytes(event.data))
        except TimeoutError:
            seconds = self.limits.body_timeout
            return _Refusal(408, f"request body not received within {seconds:g} s")
        except h11.RemoteProtocolError as error:
            return _Refusal(error.error_status_hint, _reason(error))
        return Request(
            method=head.method.decode("ascii"),
            target=head.target.decode("latin-1"),
            headers=fields,
            body=b"".join(parts),
            peer=self.peer,
        )

    async def _next_event(
        self, deadline: float
    ) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """h11's next event, reading from the socket until ``deadline`` while it needs bytes.

        Raises TimeoutError at the deadline, and h11's RemoteProtocolError on broken framing.
        The timer is armed only around reads: most events come out of bytes already received.
        """
        while (event := self.h11.next_event()) is h11.NEED_DATA:
            try:
                async with asyncio.timeout_at(deadline):
                    data = await self.reader.read(READ_SIZE)
            except ConnectionError:
                data = b""
            self.h11.receive_data(data)
        return event

    async def _send(self, head: h11.Request | None, response: Response) -> None:
        closing = self.connection.stopping
        headers = [
            ("Content-Type", response.content_type),
            ("Content-Length", str(len(response.body))),
            ("Date", email.utils.formatdate(usegmt=True)),
            *response.headers,
        ]
        if closing:
            headers.append(("Connection", "close"))
        reason = _PHRASES.get(response.status, b"")
        data = self.h11.send(
            h11.Response(status_code=response.status, headers=headers, reason=reason)
        )
        if head is None or head.method != b"HEAD":
            data += self.h11.send(h11.Data(data=response.body))
        data += self.h11.send(h11.EndOfMessage())
        await self._write(data)

    async def _refuse(self, head: h11.Request | None, refusal: _Refusal) -> None:
        """Answer a refusal in the app's shape, log it in one line, and close after lingering."""
        what = "a malformed request" if head is None else _request_line(head)
        log.info(
            "listener: answered %d to %s from %s: %s", refusal.status, what, self.peer,
            refusal.reason,
        )  # fmt: skip
        response = self.app.refusal(refusal.status, refusal.reason)
        response = Response(
            response.status,
            response.body,
            response.content_type,
            (*response.headers, ("Connection", "close")),
        )
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            await self._send(head, response)
        await self._linger()

    async def _linger(self) -> None:
        """Shut the sending side, then discard what still arrives for up to ``body_timeout``."""
        with contextlib.suppress(OSError):
            self.writer.write_eof()
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(self.limits.body_timeout):
                while await self.reader.read(READ_SIZE):
                    pass

    async def _write(self, data: bytes) -> None:
        """Send ``data``; a client that does not read it within ``body_timeout`` is dropped."""
        self.writer.write(data)
        if self.writer.transport.get_write_buffer_size():
            async with asyncio.timeout(self.limits.body_timeout):
                await self.writer.drain()


def _check_head(
    head: h11.Request, fields: tuple[tuple[bytes, bytes], ...], limits: Limits
) -> _Refusal | None:
    """What h11 lets through but this server refuses in a request head."""
    if head.http_version not in SUPPORTED_VERSIONS:
        version = head.http_version.decode("ascii", "replace")
        return _Refusal(505, f"HTTP/{version} is not supported (HTTP/1.1 and HTTP/1.0 are)")
    # h11 bounds only a head still incomplete; one that arrived whole is parsed at any size.
    if len(fields) > limits.max_header_lines:
        return _Refusal(
            431, f"request head has {len(fields)} header lines (at most {limits.max_header_lines})"
        )
    size = len(head.method) + len(head.target) + len(b"  HTTP/1.1\r\n\r\n")
    size += sum(len(name) + len(value) + len(b": \r\n") for name, value in fields)
    if size > limits.max_head_bytes:
        return _Refusal(431, f"request head exceeds {limits.max_head_bytes} bytes")
    names = {name for name, _ in fields}
    if b"content-length" in names and b"transfer-encoding" in names:
        return _Refusal(400, "Content-Length together with Transfer-Encoding")
    return None


def _content_length(fields: tuple[tuple[bytes, bytes], ...]) -> int:
    """The declared body size, 0 when none (h11 has checked it is one non-negative number)."""
    for name, value in fields:
        if name == b"content-length":
            return int(value)
    return 0


_BYTES_REPR = re.compile(r"bytearray\((b'.*?'|b\".*?\")\)")


def _reason(error: h11.RemoteProtocolError) -> str:
    """h11's message for a protocol error, on one line and at most 200 characters."""
    text = _BYTES_REPR.sub(r"\1", str(error)).replace("\r", " ").replace("\n", " ")
    return text if len(text) <= 200 else text[:200] + "..."


def _shown(target: str | bytes) -> str:
    """A request target for a log line (as sent, cut at 200 characters)."""
    text = target.decode("latin-1") if isinstance(target, bytes) else target
    return text if len(text) <= 200 else text[:200] + "..."


def _request_line(head: h11.Request) -> str:
    return f"{head.method.decode('ascii')} {_shown(head.target)}"
