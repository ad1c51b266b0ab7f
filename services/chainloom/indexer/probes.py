"""The indexer's ``/healthz``, ``/readyz`` and ``/metrics`` (on :mod:`chainloom.web`).

Why these three: Kubernetes restarts a pod whose liveness probe fails and takes one out of
service whose readiness probe fails; Prometheus scrapes the text format. ``/healthz`` answers
200 while the event loop runs. ``/readyz`` answers 200 only while the spy stream is
established, the store answered its last write or check, and no drain is under way; otherwise
503, with the reason in the JSON body. Neither calls the store: the pipeline keeps the
states current (:mod:`chainloom.indexer.pipeline`), so a probe never waits on an outage.
The routes are a small FastAPI app (:func:`probe_app`); the server is the same stack the
relayer's REST endpoint runs on, with its limits and timeouts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from fastapi import FastAPI
from fastapi.responses import Response

from chainloom import telemetry
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer
from chainloom.web.wire import Limits

log = logging.getLogger(__name__)

_LIMITS = Limits(max_body_bytes=0, header_timeout=10.0, body_timeout=10.0, log_name="probes")
"""Probes take no body; a scraper that cannot send a head in 10 s is cut off."""

ERRORS = JsonErrors(
    "error", {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}, "refused",
    log_name="probes",
)  # fmt: skip
"""``{"error", "reason"}``: the probes' refusals."""


class Probed(Protocol):
    """What the probes read: the pipeline."""

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Readiness and its details."""
        ...


def _json(status: int, body: Mapping[str, object]) -> Response:
    return Response(json.dumps(body).encode(), status, media_type="application/json")


def probe_app(probed: Probed, metrics: Callable[[], bytes]) -> FastAPI:
    """The probe routes over ``probed``; ``metrics`` renders ``/metrics`` (Prometheus text,
    :meth:`chainloom.indexer.metrics.IndexerMetrics.exposition`)."""
    app = make_app("chainloom indexer probes", ERRORS, routes_hint="/healthz, /readyz, /metrics")

    @app.get("/healthz", summary="Liveness: the event loop answers.")
    async def healthz() -> Response:
        return _json(200, {"status": "ok"})

    @app.get("/readyz", summary="Readiness: stream, store and no drain.")
    async def readyz() -> Response:
        ok, details = probed.ready()
        return _json(200 if ok else 503, {"status": "ready" if ok else "not ready", **details})

    @app.get("/metrics", summary="Prometheus text format.")
    async def metrics_text() -> Response:
        return Response(metrics(), 200, media_type=telemetry.PROMETHEUS_CONTENT_TYPE)

    return app


class ProbeServer:
    """The probe routes bound to their address."""

    def __init__(
        self,
        probed: Probed,
        metrics: Callable[[], bytes],
        host: str,
        port: int,
    ) -> None:
        self.host = host
        self.port = port
        self._server = WebServer(probe_app(probed, metrics), host, port, _LIMITS, ERRORS)

    async def start(self) -> int:
        """Bind and serve; returns the port (the chosen one when ``port`` is 0)."""
        self.port = await self._server.start()
        log.info("indexer: probes on http://%s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop serving."""
        await self._server.stop(drain_timeout=5.0)
