"""One JSON error shape per API, and one policy for what an app refuses or fails at.

Each API has its documented error body - the relayer's ``{"status", "reason"}``, the events
API's ``{"error", "reason", "parameter"}`` - and both the wire guard (:mod:`chainloom.web.wire`)
and the routes answer in it: :class:`JsonErrors` renders it, :func:`install` makes the app use
it for what the framework answers itself (no route: 404; wrong method: 405 with ``Allow``; a
parameter the typed model refuses: 400 naming it). The log policy: one INFO line for each
refused request (``<api>: answered <status> to <method> <target> from <peer>: <reason>``), one
ERROR record with its traceback for a bug in a route (answered 500), nothing for a client that
went away before its answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from chainloom.web.wire import shown

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JsonErrors:
    """An API's error body: ``{<word_key>: <word of the status>, "reason": ..., **fields}``."""

    word_key: str
    """``status`` (relayer) or ``error`` (events API)."""
    words: Mapping[int, str]
    """The word of each status; others get ``default_word``."""
    default_word: str = "error"
    """The word of a status not in ``words``."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Further keys every error body has, with their defaults (``{"parameter": None}``)."""
    log_name: str = "http"
    """The first word of this API's log lines."""
    dumps: Callable[[Any], bytes] = lambda body: json.dumps(body).encode()
    """The JSON encoder."""

    def body(self, status: int, reason: str, **fields: Any) -> bytes:
        """The error body for ``status``."""
        document = {self.word_key: self.words.get(status, self.default_word), "reason": reason}
        return self.dumps(document | dict(self.fields) | fields)

    def render(self, status: int, reason: str) -> tuple[bytes, str]:
        """The wire guard's refusals (:class:`chainloom.web.wire.Refusals`)."""
        return self.body(status, reason), "application/json"

    def response(
        self, status: int, reason: str, headers: Mapping[str, str] | None = None, **fields: Any
    ) -> Response:
        """A whole error answer."""
        return Response(
            self.body(status, reason, **fields), status, headers, media_type="application/json"
        )

    def refuse(
        self,
        request: Request,
        status: int,
        reason: str,
        headers: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> Response:
        """An error answer, logged in one line."""
        log_refusal(self.log_name, request, status, reason)
        return self.response(status, reason, headers, **fields)


def log_refusal(name: str, request: Request, status: int, reason: str) -> None:
    """The one INFO line of a refused request."""
    peer = request.client.host if request.client else "?"
    target = shown(request.scope.get("raw_path") or request.url.path.encode())
    log.info("%s: answered %d to %s %s from %s: %s", name, status, request.method, target, peer,
             reason)  # fmt: skip


def install(app: FastAPI, errors: JsonErrors, *, routes_hint: str) -> None:
    """Answer the framework's own refusals and a route's bug in ``errors``' shape."""

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        target = shown(request.scope.get("raw_path") or b"")
        if error.status_code == 405:
            tokens = {token.strip() for token in (error.headers or {}).get("Allow", "").split(",")}
            allowed = sorted(tokens | ({"HEAD"} if "GET" in tokens else set()))
            reason = f"{request.method} is not allowed on {target} (allowed: {', '.join(allowed)})"
            return errors.refuse(request, 405, reason, {"Allow": ", ".join(allowed)})
        if error.status_code == 404:
            return errors.refuse(
                request, 404, f"no route {request.method} {target} ({routes_hint})"
            )
        return errors.refuse(request, error.status_code, str(error.detail))

    async def invalid(request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        first = error.errors()[0]
        name = str(first["loc"][-1]) if first.get("loc") else "request"
        reason = f"{name}: {first.get('msg', 'invalid')}"
        return errors.refuse(request, 400, reason, parameter=name)

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_middleware(_Policy, errors=errors)


class _Policy:
    """``HEAD`` routed as ``GET`` (routes are declared once, for ``GET``; the server sends the
    head of the answer only, its ``Content-Length`` still the body's); a route's bug answered
    500 in the API's shape with one ERROR record; a client gone before its answer: nothing."""

    def __init__(self, app: ASGIApp, errors: JsonErrors) -> None:
        self.app = app
        self.errors = errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        started = False

        async def tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except ClientDisconnect:
            return
        except Exception:
            target = shown(scope.get("raw_path") or b"")
            log.exception("%s: %s %s failed", self.errors.log_name, scope.get("method"), target)
            if not started:
                await self.errors.response(500, "internal error")(scope, receive, send)
