"""One way to make an API's FastAPI app: docs pages off, FastAPI's own telemetry off, and the
error shape and log policy of :mod:`chainloom.web.errors` installed.

Why FastAPI's native OpenTelemetry is off: each service sets up its own traces and metrics
(:mod:`chainloom.telemetry`, docs/observability.md); a second, automatic set would double spans
and add a metric record and a span to every request, which costs more than some requests do.
"""

from __future__ import annotations

from fastapi import FastAPI

from chainloom.web import errors
from chainloom.web.errors import JsonErrors


def make_app(
    title: str,
    shape: JsonErrors,
    *,
    routes_hint: str,
    version: str = "0",
    description: str = "",
) -> FastAPI:
    """A FastAPI app answering refusals in ``shape``; ``/openapi.json`` documents its routes."""
    app = FastAPI(
        title=title,
        version=version,
        description=description,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    errors.install(app, shape, routes_hint=routes_hint)
    return app
