"""``/healthz``, ``/readyz`` and ``/metrics`` of the indexer, over HTTP (aiohttp).

Why these three: Kubernetes restarts a pod whose liveness probe fails and takes one out of
service whose readiness probe fails; Prometheus scrapes the text format. ``/healthz`` answers
200 while the event loop runs. ``/readyz`` answers 200 only while the spy stream is
established, the store answered its last write or check, and no drain is under way; otherwise
503, with the reason in the JSON body. Neither calls the store: the pipeline keeps the
states current (:mod:`chainloom.indexer.pipeline`), so a probe never waits on an outage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from aiohttp import web

from chainloom.indexer.metrics import MetricsSnapshot, prometheus_text

log = logging.getLogger(__name__)


class Probed(Protocol):
    """What the probes read: the pipeline."""

    def ready(self) -> tuple[bool, dict[str, object]]:
        """Readiness and its details."""
        ...

    def snapshot(self, spy: Mapping[str, int] | None = None) -> MetricsSnapshot:
        """The metrics."""
        ...


def build_app(probed: Probed, spy_counters: Callable[[], Mapping[str, int]]) -> web.Application:
    """The probe routes over ``probed``; ``spy_counters`` reads the spy client's counters."""
    app = web.Application()

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        ok, details = probed.ready()
        body = {"status": "ready" if ok else "not ready", **details}
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(_: web.Request) -> web.Response:
        text = prometheus_text(probed.snapshot(spy_counters()))
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


class ProbeServer:
    """The probe routes bound to their address."""

    def __init__(
        self,
        probed: Probed,
        spy_counters: Callable[[], Mapping[str, int]],
        host: str,
        port: int,
    ) -> None:
        self.host = host
        self.port = port
        self._runner = web.AppRunner(build_app(probed, spy_counters), access_log=None)

    async def start(self) -> int:
        """Bind and serve; returns the port (the chosen one when ``port`` is 0)."""
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        addresses = self._runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.port
        log.info("indexer: probes on http://%s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop serving."""
        await self._runner.cleanup()
