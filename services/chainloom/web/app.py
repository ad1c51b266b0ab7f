"""One way to make an API's FastAPI app: docs pages off, FastAPI's own telemetry off, and the
error shape and log policy of :mod:`chainloom.web.errors` installed.

Why FastAPI's native OpenTelemetry is off: each service sets up its own traces and metrics
(:mod:`chainloom.telemetry`, docs/observability.md); a second, automatic set would double spans
and add a metric record and a span to every request, which costs more than some requests do.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chainloom.web import errors
from chainloom.web.errors import JsonErrors


def make_app(
    title: str,
    shape: JsonErrors,
    *,
    routes_hint: str,
    version: str = "0",
    description: str = "",
    cancel_on_disconnect: bool = False,
) -> FastAPI:
    """A FastAPI app answering refusals in ``shape``; ``/openapi.json`` documents its routes.

    ``cancel_on_disconnect``: a ``GET`` whose client goes away before its answer is cancelled,
    with the work it queued (for APIs whose requests have no body)."""
    app = FastAPI(
        title=title,
        version=version,
        description=description,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    errors.install(app, shape, routes_hint=routes_hint)
    if cancel_on_disconnect:
        app.add_middleware(_CancelOnDisconnect)
    return app


class _CancelOnDisconnect:
    """Runs a body-less request beside a watch of its connection, and cancels it when the
    client disconnects first (uvicorn reports it as ``http.disconnect``); what the request
    waits for - a thread of the pool, a store call not started - is dropped with it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return

        async def body() -> Message:  # a GET's body is empty (the wire guard reads none)
            return {"type": "http.request", "body": b"", "more_body": False}

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        handler = asyncio.ensure_future(self.app(scope, body, send))
        watch = asyncio.ensure_future(gone())
        try:
            await asyncio.wait((handler, watch), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the server stops: so does the request
            handler.cancel()
            watch.cancel()
            raise
        watch.cancel()
        if not handler.done():
            handler.cancel()  # the client is gone first: nobody reads the answer
        with contextlib.suppress(asyncio.CancelledError):
            await handler
