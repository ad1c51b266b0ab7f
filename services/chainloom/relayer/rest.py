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
:func:`rest_app` is the FastAPI app over anything shaped like :class:`IntakeService`; it runs on
the project's HTTP stack (:mod:`chainloom.web`), whose wire guard reads and bounds requests
(header and body timeouts, size limits) and answers what is not well-formed HTTP in the same
JSON (:data:`ERRORS`, the ``status`` words of :data:`ERROR_STATUS`).
:mod:`chainloom.relayer.listener` wires the two to the real intake.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import Response

from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.validation import decode_text
from chainloom.telemetry import PROMETHEUS_CONTENT_TYPE
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
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
    503: "unavailable",
    505: "version_not_supported",
}
"""The ``status`` word of each error code the endpoint answers."""

ERRORS = JsonErrors("status", ERROR_STATUS, log_name="listener")
"""The endpoint's error body, for its routes and for the wire guard's refusals."""


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
    return ERRORS.response(status, reason)


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body).encode(), status, media_type="application/json")


def _answer(result: IntakeResult) -> Response:
    return _json(response_body(result), HTTP_STATUS[result.outcome])


def _malformed(reason: str) -> Response:
    return _answer(IntakeResult(Outcome.MALFORMED, reason=reason))


def _too_large(reason: str) -> Response:
    return _json({"status": "too_large", "reason": reason}, TOO_LARGE)


LEGACY_PREFIX = "/relayvaa/"


def rest_app(listener: IntakeService, *, max_request_bytes: int) -> FastAPI:
    """The endpoint's routes over ``listener``. The wire guard has read and bounded the body
    before a route runs; ``max_request_bytes`` also bounds the VAA text of ``GET
    /relayvaa/...``. A ``GET`` route answers ``HEAD`` too."""
    app = make_app("chainloom relayer", ERRORS, routes_hint="GET / lists the routes")

    async def submit_text(text: str) -> Response:
        try:
            data = decode_text(text)
        except WormholeError as error:
            return _malformed(f"vaa is not hex or base64: {error}")
        return _answer(await listener.submit(data, source="rest"))

    @app.post("/v1/relay", summary='Hand over one VAA: {"vaa": "<base64 or hex>"}.')
    async def relay(request: Request) -> Response:
        try:
            document = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return _malformed('body is not JSON; send {"vaa": "<base64 or hex>"}')
        if not isinstance(document, dict) or not isinstance(document.get("vaa"), str):
            return _malformed('body must be a JSON object {"vaa": "<base64 or hex>"}')
        return await submit_text(document["vaa"])

    @app.get(LEGACY_PREFIX + "{vaa:path}", summary="The reference's route: the VAA in the path.")
    async def relay_legacy(vaa: str) -> Response:
        if len(vaa) > max_request_bytes:  # the server has percent-decoded the path
            return _too_large(f"VAA in the path exceeds {max_request_bytes} characters")
        return await submit_text(vaa)

    @app.get("/healthz", summary="Liveness: the event loop answers.")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz", summary="Readiness: VAAs can be queued now (Redis answers).")
    async def readyz() -> Response:
        ok, details = await asyncio.get_running_loop().run_in_executor(None, listener.ready)
        body: dict[str, Any] = {"status": "ready" if ok else "not ready", **details}
        return _json(body, 200 if ok else 503)

    @app.get("/v1/stats", summary="Every counter of the listener.")
    async def stats() -> Response:
        return _json(listener.stats())

    @app.get("/metrics", summary="Prometheus text format.")
    async def metrics() -> Response:
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(None, listener.metrics_exposition)
        return Response(text, 200, media_type=PROMETHEUS_CONTENT_TYPE)

    @app.get("/", summary="The routes.")
    async def index() -> Response:
        return _json(ROUTES)

    return app
