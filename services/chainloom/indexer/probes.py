"""The indexer's ``/healthz``, ``/readyz`` and ``/metrics`` (on :mod:`chainloom.http_server`).

Why these three: Kubernetes restarts a pod whose liveness probe fails and takes one out of
service whose readiness probe fails; Prometheus scrapes the text format. ``/healthz`` answers
200 while the event loop runs. ``/readyz`` answers 200 only while the spy stream is
established, the store answered its last write or check, and no drain is under way; otherwise
503, with the reason in the JSON body. Neither calls the store: the pipeline keeps the
states current (:mod:`chainloom.indexer.pipeline`), so a probe never waits on an outage.
The routes are a plain :class:`ProbeApp`; the server is the same one the relayer's REST endpoint
runs on, with its limits and timeouts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from chainloom import telemetry
from chainloom.http_server import HttpServer, Limits, Request, Response

log = logging.getLogger(__name__)

_LIMITS = Limits(max_body_bytes=0, header_timeout=10.0, body_timeout=10.0)
"""Probes take no body; a scraper that cannot send a head in 10 s is cut off."""


class Probed(Protocol):
    """What the probes read: the pipeline."""

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Readiness and its details."""
        ...


def _json(
    status: int, body: Mapping[str, object], headers: tuple[tuple[str, str], ...] = ()
) -> Response:
    return Response(status, json.dumps(body).encode(), headers=headers)


class ProbeApp:
    """The probe routes over ``probed``; ``metrics`` renders ``/metrics`` (Prometheus text,
    :meth:`chainloom.indexer.metrics.IndexerMetrics.exposition`)."""

    def __init__(self, probed: Probed, metrics: Callable[[], bytes]) -> None:
        self.probed = probed
        self.metrics = metrics

    async def respond(self, request: Request) -> Response:
        """``GET`` (or ``HEAD``) of one of the three paths; 404 and 405 otherwise."""
        path = request.path
        if path not in ("/healthz", "/readyz", "/metrics"):
            return _json(404, {"error": "not_found", "reason": f"no route {path}"})
        if request.method not in ("GET", "HEAD"):
            reason = f"{request.method} is not allowed on {path}"
            return _json(
                405, {"error": "method_not_allowed", "reason": reason}, (("Allow", "GET, HEAD"),)
            )
        if path == "/healthz":
            return _json(200, {"status": "ok"})
        if path == "/readyz":
            ok, details = self.probed.ready()
            body = {"status": "ready" if ok else "not ready", **details}
            return _json(200 if ok else 503, body)
        return Response(200, self.metrics(), content_type=telemetry.PROMETHEUS_CONTENT_TYPE)

    def refusal(self, status: int, reason: str) -> Response:
        """The server's own refusals (malformed HTTP, timeouts), in the same JSON shape."""
        return _json(
            status, {"error": "bad_request" if status == 400 else "refused", "reason": reason}
        )


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
        self._server = HttpServer(ProbeApp(probed, metrics), host, port, _LIMITS)

    async def start(self) -> int:
        """Bind and serve; returns the port (the chosen one when ``port`` is 0)."""
        self.port = await self._server.start()
        log.info("indexer: probes on http://%s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop serving."""
        await self._server.stop(drain_timeout=5.0)
