"""The listener's REST endpoint (aiohttp): intake outcomes as HTTP answers, and health probes.

Why these routes: ``POST /v1/relay`` is the safe way to hand over a VAA (standard base64 holds
``/`` and ``+``, fragile in a URL path); ``GET /relayvaa/{base64}`` is kept because the
reference's clients call it. Unlike the reference, the status code tells the truth - 202
queued, 200 already known (and where), 422 rejected (and why), 400 malformed, 413 too large,
503 when Redis is unreachable - and the body always says the same in JSON. See
``docs/relayer-api.md``.

This module is the only place that knows HTTP: the intake (:mod:`chainloom.relayer.intake`)
answers with an :class:`~chainloom.relayer.intake.Outcome`, :data:`HTTP_STATUS` maps it to a
code, and :func:`response_body` writes the documented JSON. It serves anything shaped like
:class:`IntakeService`; :mod:`chainloom.relayer.listener` wires the real one.

The endpoint faces the open network, so hostile HTTP is part of its contract. Wrong methods and
paths get JSON like every other answer. A client that lies about its body (a Content-Length
longer than what it sends, a huge chunk size) or trickles it is answered 408 after
``body_timeout``; one that never finishes its head (slowloris) is disconnected after
``header_timeout`` - aiohttp's keep-alive timer, which it arms when a connection opens and
which closes a connection still waiting for a complete head. Requests aiohttp's parser refuses
(bad Content-Length, Content-Length with chunked, oversized header lines, bad request lines)
are answered 400 by aiohttp itself, in plain text: it builds that answer before any route or
middleware runs and has no public hook to change it. What this module can change is the log:
aiohttp logs each of them with a traceback, and the logger handed to it turns that into one line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web
from aiohttp.http import HttpProcessingError

from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.validation import decode_text
from chainloom.wormhole.errors import WormholeError

if TYPE_CHECKING:
    from chainloom.relayer.config import RestSettings

log = logging.getLogger(__name__)
http_log = logging.getLogger(f"{__name__}.http")
"""The logger handed to aiohttp's server: its records of refused requests become one line."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ROUTES = ["POST /v1/relay", "GET /relayvaa/<vaaInBase64>", "GET /healthz", "GET /readyz",
          "GET /v1/stats", "GET /metrics"]  # fmt: skip

HTTP_STATUS: Mapping[Outcome, int] = {
    Outcome.QUEUED: 202,
    Outcome.KNOWN: 200,
    Outcome.REJECTED: 422,
    Outcome.MALFORMED: 400,
    Outcome.UNAVAILABLE: 503,
}
"""The HTTP status code answered for each intake outcome."""

TOO_LARGE = 413
"""The code for a request over ``rest.max_request_bytes`` (decided here, before the intake)."""

ERROR_STATUS: Mapping[int, str] = {
    400: "malformed",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    413: "too_large",
}
"""The ``status`` word of each error code the endpoint answers; any other is ``error``."""


class IntakeService(Protocol):
    """What the REST endpoint serves: the listener's intake, readiness and counters."""

    async def submit(self, data: bytes, *, source: str) -> IntakeResult:
        """Decide one VAA without blocking the event loop."""
        ...

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether VAAs can be queued now, with details for ``/readyz`` (blocking)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Every counter, for ``/v1/stats`` and ``/metrics``."""
        ...


def response_body(result: IntakeResult) -> dict[str, Any]:
    """The documented JSON body for one intake result."""
    body: dict[str, Any] = {"status": result.outcome.value}
    for name in ("digest", "message_id", "table", "reason"):
        value = getattr(result, name)
        if value is not None:
            body[name] = value
    if result.rule is not None:
        body["rule"] = result.rule.value
    return body


def _answer(result: IntakeResult) -> web.Response:
    return web.json_response(response_body(result), status=HTTP_STATUS[result.outcome])


def _malformed(reason: str) -> web.Response:
    return _answer(IntakeResult(Outcome.MALFORMED, reason=reason))


def _too_large(reason: str) -> web.Response:
    return web.json_response({"status": "too_large", "reason": reason}, status=TOO_LARGE)


def _refuse(request: web.BaseRequest, status: int, reason: str) -> web.Response:
    """A JSON error answer, logged in one line (the path as sent: no decoded line breaks)."""
    http_log.info(
        "listener: answered %d to %s %s from %s: %s",
        status, request.method, _shown_path(request), request.remote, reason,
    )  # fmt: skip
    return web.json_response(
        {"status": ERROR_STATUS.get(status, "error"), "reason": reason}, status=status
    )


def _shown_path(request: web.BaseRequest) -> str:
    path = request.raw_path
    return path if len(path) <= 200 else path[:200] + "..."


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own errors (no such route, wrong method) as the documented JSON."""
    try:
        return await handler(request)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        if isinstance(error, web.HTTPMethodNotAllowed):
            allowed = ", ".join(sorted(error.allowed_methods))
            path = _shown_path(request)
            reason = f"{request.method} is not allowed on {path} (allowed: {allowed})"
            answer = _refuse(request, error.status, reason)
            answer.headers["Allow"] = error.headers["Allow"]
            return answer
        if isinstance(error, web.HTTPNotFound):
            reason = f"no route {request.method} {_shown_path(request)} (GET / lists the routes)"
            return _refuse(request, error.status, reason)
        return _refuse(request, error.status, error.reason)


def _bad_request_in_one_line(record: logging.LogRecord) -> bool:
    """Rewrite aiohttp's record of a request its parser refused: one INFO line, no traceback.

    aiohttp logs these at ERROR with the parser's traceback (at DEBUG for a first request that
    is not HTTP at all, e.g. TLS on the plain port). The peer is in its message; the parser's
    reason spans lines (the offending bytes and a caret under them) and is folded into one.
    """
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, HttpProcessingError):
        what = record.getMessage()
        reason = " ".join(line.strip() for line in error.message.splitlines() if line.strip(" ^"))
        record.msg = "listener: bad HTTP request, answered 400 (%s): %s"
        record.args = (what[:1].lower() + what[1:], reason)
        record.exc_info = None
        record.exc_text = None
        if record.levelno > logging.INFO:
            record.levelno, record.levelname = logging.INFO, "INFO"
    return True


http_log.addFilter(_bad_request_in_one_line)


def build_app(listener: IntakeService, config: RestSettings) -> web.Application:
    """The aiohttp application serving ``listener``.

    ``config.body_timeout``: seconds a request body may take to arrive once its head did; then
    408.
    """
    limit = config.max_request_bytes
    body_timeout = config.body_timeout
    # aiohttp refuses larger bodies itself; our handler answers first with a JSON 413.
    app = web.Application(client_max_size=limit + 1, middlewares=[_json_errors])

    async def read_body(request: web.Request) -> bytes | web.Response:
        """The whole request body, or the answer refusing it (413, 408 or 400)."""
        if request.content_length is not None and request.content_length > limit:
            return _too_large(f"request body exceeds {limit} bytes")
        parts: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(body_timeout):
                while chunk := await request.content.read(65536):
                    size += len(chunk)
                    if size > limit:
                        return _too_large(f"request body exceeds {limit} bytes")
                    parts.append(chunk)
        except TimeoutError:
            answer = _refuse(request, 408, f"request body not received within {body_timeout:g} s")
            answer.force_close()
            return answer
        except (ConnectionError, asyncio.IncompleteReadError, web.RequestPayloadError):
            return _malformed("incomplete request body")
        return b"".join(parts)

    async def relay(request: web.Request) -> web.Response:
        body = await read_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return _malformed('body is not JSON; send {"vaa": "<base64 or hex>"}')
        if not isinstance(document, dict) or not isinstance(document.get("vaa"), str):
            return _malformed('body must be a JSON object {"vaa": "<base64 or hex>"}')
        return await _submit_text(document["vaa"])

    async def relay_legacy(request: web.Request) -> web.Response:
        text = urllib.parse.unquote(request.match_info["vaa"])
        if len(text) > limit:
            return _too_large(f"VAA in the path exceeds {limit} characters")
        return await _submit_text(text)

    async def _submit_text(text: str) -> web.Response:
        try:
            data = decode_text(text)
        except WormholeError as error:
            return _malformed(f"vaa is not hex or base64: {error}")
        return _answer(await listener.submit(data, source="rest"))

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        ok, details = await loop.run_in_executor(None, listener.ready)
        body: dict[str, Any] = {"status": "ready" if ok else "not ready", **details}
        return web.json_response(body, status=200 if ok else 503)

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(listener.stats())

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            text=prometheus_text(listener.stats()), content_type="text/plain", charset="utf-8"
        )

    async def index(_: web.Request) -> web.Response:
        return web.json_response(ROUTES)

    app.router.add_post("/v1/relay", relay)
    app.router.add_get("/relayvaa/{vaa:.+}", relay_legacy)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/v1/stats", stats)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/", index)
    return app


class RestServer:
    """The REST endpoint bound to its address: start it, learn its port, stop it.

    ``config.header_timeout`` (seconds, default 20) bounds how long a client may take to send a
    complete request head, counted from when it connects or from its previous answer on a
    kept-alive connection; then the connection is closed without an answer. It is aiohttp's
    keep-alive timeout, so it is also how long an idle kept-alive connection stays open.
    ``config.body_timeout`` (seconds, default 20) bounds how long a ``POST /v1/relay`` body may take
    once its head arrived (408), and how long the server keeps reading and discarding a body it
    did not need before it closes the connection.
    """

    def __init__(self, listener: IntakeService, config: RestSettings) -> None:
        self.config = config
        self.port = 0
        self._runner = web.AppRunner(
            build_app(listener, config),
            access_log=None,
            logger=http_log,
            keepalive_timeout=config.header_timeout,
            lingering_time=config.body_timeout,
        )

    async def start(self) -> int:
        """Bind and serve; returns the port (the chosen one when ``rest.port`` is 0)."""
        await self._runner.setup()
        await web.TCPSite(self._runner, self.config.host, self.config.port).start()
        addresses = self._runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.config.port
        log.info("listener: REST on %s:%d", self.config.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop serving and close every connection."""
        await self._runner.cleanup()


def prometheus_text(stats: dict[str, Any]) -> str:
    """The listener's counters in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[str, int]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {value}" for labels, value in samples)

    intake = stats["intake"]
    family(
        "chainloom_listener_outcomes_total", "counter", "VAAs decided, by outcome.",
        [(f'{{status="{s}"}}', n) for s, n in sorted(intake["by_status"].items())],
    )  # fmt: skip
    family(
        "chainloom_listener_source_total", "counter", "VAAs decided, by source (spy, rest).",
        [(f'{{source="{s}"}}', n) for s, n in sorted(intake["by_source"].items())],
    )  # fmt: skip
    family(
        "chainloom_listener_redeem_check_skipped_total", "counter",
        "Queued VAAs whose target chain had no adapter to ask.",
        [("", intake["redeem_check_skipped"])],
    )  # fmt: skip
    family(
        "chainloom_listener_rule_total", "counter", "Validation rule outcomes.",
        [
            (f'{{rule="{rule}",result="{result}"}}', count)
            for rule, counts in stats["rules"].items()
            for result, count in sorted(counts.items())
        ],
    )  # fmt: skip
    spy = stats.get("spy")
    if spy is not None:
        family("chainloom_spy_connected", "gauge", "1 while a spy stream is established.",
               [("", int(spy["connected"]))])  # fmt: skip
        for key, help_text in (
            ("connections", "Spy streams established."),
            ("disconnects", "Spy streams lost and retried."),
            ("messages", "VAAs received from the spy."),
            ("drops", "Spy VAAs dropped because the intake buffer was full."),
            ("consumer_errors", "Spy VAAs on which the intake failed unexpectedly."),
        ):
            family(f"chainloom_spy_{key}_total", "counter", help_text, [("", spy[key])])
    return "\n".join(lines) + "\n"
