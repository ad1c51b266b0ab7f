"""The listener's REST endpoint: intake outcomes as HTTP answers, and health probes.

Why these routes: ``POST /v1/relay`` is the safe way to hand over a VAA (standard base64 holds
``/`` and ``+``, fragile in a URL path); ``GET /relayvaa/{base64}`` is kept because the
reference's clients call it. Unlike the reference, the status code tells the truth - 202
queued, 200 already known (and where), 422 rejected (and why), 400 malformed, 413 too large,
503 when Redis is unreachable - and the body always says the same in JSON. See
``docs/relayer-api.md``.

This module maps requests to answers and does no I/O of its own: the intake
(:mod:`chainloom.relayer.intake`) answers with an :class:`~chainloom.relayer.intake.Outcome`,
:data:`HTTP_STATUS` maps it to a code, and :func:`response_body` writes the documented JSON.
:class:`RestApi` routes whole requests (404, 405 with ``Allow``) to anything shaped like
:class:`IntakeService`. The bytes on the wire are :mod:`chainloom.http_server`'s
(h11): it reads and bounds requests (header and body timeouts, size limits) and answers what
is not well-formed HTTP itself - through :meth:`RestApi.refusal`, so that those answers are the
same JSON (:func:`error_response`, the ``status`` words of :data:`ERROR_STATUS`) as every other.
:mod:`chainloom.relayer.listener` wires the two to the real intake.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from chainloom.http_server import Request, Response
from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.validation import decode_text
from chainloom.telemetry import PROMETHEUS_CONTENT_TYPE
from chainloom.wormhole.errors import WormholeError

log = logging.getLogger(__name__)

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
"""The code for a request over ``rest.max_request_bytes``."""

ERROR_STATUS: Mapping[int, str] = {
    400: "malformed",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    413: "too_large",
    431: "head_too_large",
    500: "error",
    501: "not_implemented",
    505: "version_not_supported",
}
"""The ``status`` word of each error code the endpoint answers."""


class IntakeService(Protocol):
    """What the REST endpoint serves: the listener's intake, readiness and counters."""

    async def submit(self, data: bytes, *, source: str) -> IntakeResult:
        """Decide one VAA without blocking the event loop."""
        ...

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether VAAs can be queued now, with details for ``/readyz`` (blocking)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Every counter, for ``/v1/stats``."""
        ...

    def metrics_exposition(self) -> bytes:
        """The metrics in the Prometheus text format, for ``/metrics`` (blocking)."""
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


def error_response(status: int, reason: str) -> Response:
    """The documented JSON error answer: ``{"status": <word of the code>, "reason": ...}``."""
    return _json({"status": ERROR_STATUS.get(status, "error"), "reason": reason}, status)


def _json(body: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(body).encode())


def _answer(result: IntakeResult) -> Response:
    return _json(response_body(result), HTTP_STATUS[result.outcome])


def _malformed(reason: str) -> Response:
    return _answer(IntakeResult(Outcome.MALFORMED, reason=reason))


def _too_large(reason: str) -> Response:
    return _json({"status": "too_large", "reason": reason}, TOO_LARGE)


def _shown(path: str) -> str:
    """A path for answers and log lines: as sent (no decoded line breaks), at most 200 chars."""
    return path if len(path) <= 200 else path[:200] + "..."


Route = Callable[[Request], Awaitable[Response]]

LEGACY_PREFIX = "/relayvaa/"


class RestApi:
    """The routes of the endpoint, served by :class:`chainloom.http_server.HttpServer`.

    Requests arrive whole (the server has read and bounded the body); each route answers with a
    :class:`~chainloom.http_server.Response`. ``max_request_bytes`` also bounds the VAA
    text of ``GET /relayvaa/...``. A ``GET`` route answers ``HEAD`` too.
    """

    def __init__(self, listener: IntakeService, *, max_request_bytes: int) -> None:
        self.listener = listener
        self.limit = max_request_bytes
        self._routes: dict[str, dict[str, Route]] = {
            "/v1/relay": {"POST": self._relay},
            "/healthz": {"GET": self._healthz},
            "/readyz": {"GET": self._readyz},
            "/v1/stats": {"GET": self._stats},
            "/metrics": {"GET": self._metrics},
            "/": {"GET": self._index},
        }
        self._legacy: dict[str, Route] = {"GET": self._relay_legacy}

    async def respond(self, request: Request) -> Response:
        """Route one request; 404 and 405 are answered (and logged) here."""
        path = request.path
        if path.startswith(LEGACY_PREFIX) and len(path) > len(LEGACY_PREFIX):
            methods = self._legacy
        else:
            methods = self._routes.get(path, {})
        if not methods:
            reason = f"no route {request.method} {_shown(path)} (GET / lists the routes)"
            return self._refuse(request, 404, reason)
        route = methods.get("GET" if request.method == "HEAD" else request.method)
        if route is None:
            allowed = sorted({*methods, *(["HEAD"] if "GET" in methods else [])})
            reason = (
                f"{request.method} is not allowed on {_shown(path)} (allowed: {', '.join(allowed)})"
            )
            answer = self._refuse(request, 405, reason)
            return Response(answer.status, answer.body, headers=(("Allow", ", ".join(allowed)),))
        return await route(request)

    def refusal(self, status: int, reason: str) -> Response:
        """The JSON the HTTP server answers with when it refuses a request itself."""
        return error_response(status, reason)

    @staticmethod
    def _refuse(request: Request, status: int, reason: str) -> Response:
        log.info(
            "listener: answered %d to %s %s from %s: %s",
            status, request.method, _shown(request.path), request.peer, reason,
        )  # fmt: skip
        return error_response(status, reason)

    async def _relay(self, request: Request) -> Response:
        try:
            document = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            return _malformed('body is not JSON; send {"vaa": "<base64 or hex>"}')
        if not isinstance(document, dict) or not isinstance(document.get("vaa"), str):
            return _malformed('body must be a JSON object {"vaa": "<base64 or hex>"}')
        return await self._submit_text(document["vaa"])

    async def _relay_legacy(self, request: Request) -> Response:
        text = urllib.parse.unquote(request.path[len(LEGACY_PREFIX) :])
        if len(text) > self.limit:
            return _too_large(f"VAA in the path exceeds {self.limit} characters")
        return await self._submit_text(text)

    async def _submit_text(self, text: str) -> Response:
        try:
            data = decode_text(text)
        except WormholeError as error:
            return _malformed(f"vaa is not hex or base64: {error}")
        return _answer(await self.listener.submit(data, source="rest"))

    async def _healthz(self, _: Request) -> Response:
        return _json({"status": "ok"})

    async def _readyz(self, _: Request) -> Response:
        loop = asyncio.get_running_loop()
        ok, details = await loop.run_in_executor(None, self.listener.ready)
        body: dict[str, Any] = {"status": "ready" if ok else "not ready", **details}
        return _json(body, 200 if ok else 503)

    async def _stats(self, _: Request) -> Response:
        return _json(self.listener.stats())

    async def _metrics(self, _: Request) -> Response:
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(None, self.listener.metrics_exposition)
        return Response(200, text, content_type=PROMETHEUS_CONTENT_TYPE)

    async def _index(self, _: Request) -> Response:
        return _json(ROUTES)
