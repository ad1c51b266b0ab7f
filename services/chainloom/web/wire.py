"""The wire guard: uvicorn's h11 protocol, with every refusal answered in the app's JSON.

Why this exists: the servers face the open network, and their contract is that every answer,
including the answer to a request that is not well-formed HTTP, is the documented JSON in one
log line. uvicorn (0.54) answers what h11 refuses itself, in plain text ("Invalid HTTP request
received."), has no header or body read timeout (a slowloris client holds a connection as long
as it trickles), and no bound on the number of header lines. Its HTTP protocol is chosen by
class (``uvicorn.Config(http=...)``), so :func:`guarded_protocol` gives it a subclass of its own
h11 protocol that changes what h11 hands back and what is answered, and nothing else:

* a head not complete within ``header_timeout`` of the connection opening or of the previous
  answer (slowloris, idle kept-alive connections): closed without an answer;
* a head over ``max_head_bytes`` or with more than ``max_header_lines`` lines: 431;
* framing h11 refuses (a request line that is not HTTP, a bad or conflicting
  ``Content-Length``, a bad chunk size, a body cut short), and ``Content-Length`` together with
  ``Transfer-Encoding`` (h11 would let chunked win; RFC 9112 section 6.1 allows refusing it, and
  a front proxy that read it the other way would be open to request smuggling): 400; a transfer
  coding other than chunked: 501; an HTTP version other than 1.0 and 1.1: 505;
* a body over ``max_body_bytes``: 413, decided on ``Content-Length`` before reading, or while
  reading a chunked body;
* a body not complete within ``body_timeout`` of its head: 408;
* more than ``max_connections`` open connections: 503 at once, then closed.

Each refusal is rendered by the app's :class:`Refusals`, logged in one INFO line (never a
traceback), and closes the connection: the answer is written, the sending side shut, and what
the client still sends is discarded for at most ``body_timeout`` so that it can read the
answer before the socket goes away. A request whose body is refused after its head reached the
app sees a disconnect (``http.disconnect``), which :mod:`chainloom.web.errors` answers silently.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar, Protocol

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

SUPPORTED_VERSIONS = (b"1.0", b"1.1")

_PHRASES = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}

_UVICORN_OWN_LINES = frozenset({"Invalid HTTP request received."})
"""uvicorn's own line for what this module answers and logs itself (one line per refusal)."""


class _DropUvicornLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in _UVICORN_OWN_LINES


_protocol_log = logging.getLogger("chainloom.web.uvicorn")
_protocol_log.addFilter(_DropUvicornLines())


@dataclass(frozen=True, slots=True)
class Limits:
    """How much, how slowly and how many clients may send before the server refuses them."""

    max_body_bytes: int
    """Largest body read; a larger one is answered 413."""
    header_timeout: float
    """Seconds for a whole request head, from the connection or the previous answer."""
    body_timeout: float
    """Seconds for a whole body once its head arrived (408); also bounds the lingering close."""
    max_head_bytes: int = 8192
    """Largest request head (request line and header lines); a larger one gets 431."""
    max_header_lines: int = 128
    """Most header lines in one request; more get 431."""
    max_connections: int = 4096
    """Open connections (HTTP and WebSocket) past which a new one is answered 503 and closed."""
    log_name: str = "http"
    """The first word of the refusal log lines (``listener``, ``events api``, ...)."""


class Refusals(Protocol):
    """How an app words the server's own refusals: the body and content type of one."""

    def render(self, status: int, reason: str) -> tuple[bytes, str]:
        """The body and ``Content-Type`` answered with ``status`` for ``reason``."""
        ...


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the server answers itself, and closes the connection after."""

    status: int
    """The status code (400, 408, 413, 431, 501, 503, 505)."""
    reason: str
    """What was wrong, on one line: the ``reason`` of the JSON answer and of the log line."""


class _RefusedError(h11.RemoteProtocolError):
    """A head or body h11 accepts but the guard refuses."""


class _CheckedConnection(h11.Connection):
    """h11's server connection, remembering why it refused and applying the guard's checks."""

    def __init__(self, limits: Limits, on_event: Callable[[object], None]) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
        self.limits = limits
        self.on_event = on_event
        self.refusal: Refusal | None = None
        self.head: h11.Request | None = None
        self.body_size = 0

    def next_event(self) -> Any:
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as error:
            if self.refusal is None:
                self.refusal = _from_h11(error, self.limits)
            raise
        if isinstance(event, h11.Request):
            self.head, self.body_size = event, 0
            self._refuse_if(_check_head(event, self.limits))
        elif isinstance(event, h11.Data):
            self.body_size += len(event.data)
            if self.body_size > self.limits.max_body_bytes:
                self._refuse_if(
                    Refusal(413, f"request body exceeds {self.limits.max_body_bytes} bytes")
                )
        self.on_event(event)
        return event

    def start_next_cycle(self) -> None:
        super().start_next_cycle()
        self.head = None

    def _refuse_if(self, refusal: Refusal | None) -> None:
        if refusal is not None:
            self.refusal = refusal
            raise _RefusedError(refusal.reason, error_status_hint=refusal.status)


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the guard's limits and the app's refusals."""

    limits: ClassVar[Limits]
    refusals: ClassVar[Refusals]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = _protocol_log
        self.checked = _CheckedConnection(self.limits, self._seen)
        self.conn = self.checked
        self._timer: asyncio.TimerHandle | None = None
        self._closing = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            _OverCap.note(self.limits)
            reason = f"more than {self.limits.max_connections} connections open; retry shortly"
            self._refuse(Refusal(503, reason), logged=False)
            return
        self._arm(self.limits.header_timeout, self._head_late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # lingering after a refusal: read and dropped
        super().data_received(data)

    def eof_received(self) -> bool | None:  # type: ignore[override]
        if self._closing:
            self.transport.close()
            return None
        if self.conn.their_state is h11.SEND_BODY:  # a body cut short: h11 says how
            self.conn.receive_data(b"")
            self.handle_events()
            return True
        return None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self._closing:
            self._arm(self.limits.header_timeout, self._head_late)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        """The connection becomes uvicorn's WebSocket protocol's: no timer of ours stays on it
        (the WebSocket has its own pings and the app its idle timeout)."""
        self._disarm()
        super().handle_websocket_upgrade(event)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's hook for what h11 refused: the refusal the guard recorded, in the app's
        JSON (uvicorn calls this on every :class:`h11.RemoteProtocolError`)."""
        self._refuse(self.checked.refusal or Refusal(400, msg))

    def _seen(self, event: object) -> None:
        if isinstance(event, h11.Request):
            self._disarm()
            if self.conn.their_state is h11.SEND_BODY:
                self._arm(self.limits.body_timeout, self._body_late)
        elif isinstance(event, h11.EndOfMessage):
            self._disarm()

    def _head_late(self) -> None:
        self._timer = None
        if self.cycle is None or self.cycle.response_complete:
            self._closing = True
            self.transport.close()  # slowloris or idle keep-alive: closed without an answer

    def _body_late(self) -> None:
        self._timer = None
        seconds = self.limits.body_timeout
        self._refuse(Refusal(408, f"request body not received within {seconds:g} s"))

    def _refuse(self, refusal: Refusal, *, logged: bool = True) -> None:
        """Answer ``refusal`` in the app's shape, log it in one line, and close after lingering."""
        self._disarm()
        head = self.checked.head
        if logged:
            what = "a malformed request" if head is None else _request_line(head)
            peer = self.client[0] if self.client else "?"
            log.info(
                "%s: answered %d to %s from %s: %s",
                self.limits.log_name, refusal.status, what, peer, refusal.reason,
            )  # fmt: skip
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app, if it has the request, sees a disconnect
            self.cycle.message_event.set()
        body, content_type = self.refusals.render(refusal.status, refusal.reason)
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            headers = [
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("Connection", "close"),
            ]
            phrase = _PHRASES.get(refusal.status, b"")
            data = self.conn.send(
                h11.Response(status_code=refusal.status, headers=headers, reason=phrase)
            )
            if head is None or head.method != b"HEAD":
                data = (data or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            data = (data or b"") + (self.conn.send(h11.EndOfMessage()) or b"")
            self.transport.write(data)
        self._closing = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.transport.resume_reading()
        self.loop.call_later(self.limits.body_timeout, self.transport.close)

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _OverCap:
    """One log line per 10 s while connections are refused for the cap, with the count."""

    last = 0.0
    refused = 0

    @classmethod
    def note(cls, limits: Limits) -> None:
        cls.refused += 1
        now = time.monotonic()
        if now - cls.last >= 10.0:
            log.warning(
                "%s: %d connection(s) refused: over max_connections (%d)",
                limits.log_name, cls.refused, limits.max_connections,
            )  # fmt: skip
            cls.last, cls.refused = now, 0


def guarded_protocol(limits: Limits, refusals: Refusals) -> type[GuardedProtocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` of one server."""
    return type("Guarded", (GuardedProtocol,), {"limits": limits, "refusals": refusals})


def _check_head(head: h11.Request, limits: Limits) -> Refusal | None:
    """What h11 lets through but the guard refuses in a request head."""
    if head.http_version not in SUPPORTED_VERSIONS:
        version = head.http_version.decode("ascii", "replace")
        return Refusal(505, f"HTTP/{version} is not supported (HTTP/1.1 and HTTP/1.0 are)")
    fields = head.headers
    # h11 bounds only a head still incomplete; one that arrived whole is parsed at any size.
    if len(fields) > limits.max_header_lines:
        return Refusal(
            431, f"request head has {len(fields)} header lines (at most {limits.max_header_lines})"
        )
    size = len(head.method) + len(head.target) + len(b"  HTTP/1.1\r\n\r\n")
    size += sum(len(name) + len(value) + len(b": \r\n") for name, value in fields)
    if size > limits.max_head_bytes:
        return Refusal(431, f"request head exceeds {limits.max_head_bytes} bytes")
    names = {name for name, _ in fields}
    if b"content-length" in names and b"transfer-encoding" in names:
        return Refusal(400, "Content-Length together with Transfer-Encoding")
    for name, value in fields:
        if name == b"content-length" and int(value) > limits.max_body_bytes:
            return Refusal(413, f"request body exceeds {limits.max_body_bytes} bytes")
    return None


def _from_h11(error: h11.RemoteProtocolError, limits: Limits) -> Refusal:
    if error.error_status_hint == 431:  # h11's words: "Receive buffer too long"
        return Refusal(431, f"request head exceeds {limits.max_head_bytes} bytes")
    return Refusal(error.error_status_hint, _reason(error))


_BYTES_REPR = re.compile(r"bytearray\((b'.*?'|b\".*?\")\)")


def _reason(error: h11.RemoteProtocolError) -> str:
    """h11's message for a protocol error, on one line and at most 200 characters."""
    text = _BYTES_REPR.sub(r"\1", str(error)).replace("\r", " ").replace("\n", " ")
    return text if len(text) <= 200 else text[:200] + "..."


def shown(target: str | bytes) -> str:
    """A request target for a log line or a reason (as sent, cut at 200 characters)."""
    text = target.decode("latin-1") if isinstance(target, bytes) else target
    return text if len(text) <= 200 else text[:200] + "..."


def _request_line(head: h11.Request) -> str:
    return f"{head.method.decode('ascii')} {shown(head.target)}"
