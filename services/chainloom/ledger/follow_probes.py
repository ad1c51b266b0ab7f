"""The following ETL's ``/healthz``, ``/readyz`` and ``/status`` (on :mod:`chainloom.web`).

Why HTTP and not a Lease or a pod annotation: the role already lives in the process, and an
HTTP answer needs no Kubernetes credentials in the pod (``automountServiceAccountToken`` stays
off) and no RBAC; ``kubectl exec``/``port-forward``, a probe and the operator can all read it.
``/status`` is ``{"role", "committed", "last_committed", "takeovers", "conflicts"}``.
Readiness is not the role: a standby is as ready as the writer (a Deployment whose standbys were
never ready could not roll out); ``/readyz`` answers 503 only while the follower's last look at
the store failed. The follower loop is synchronous, so the server runs on an event loop in a
thread of its own.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping

from fastapi import FastAPI
from fastapi.responses import Response

from chainloom.ledger.follower import LedgerFollower
from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer
from chainloom.web.wire import Limits

_LIMITS = Limits(max_body_bytes=0, header_timeout=10.0, body_timeout=10.0, log_name="probes")
"""Probes take no body; a client that cannot send a head in 10 s is cut off."""

ERRORS = JsonErrors(
    "error", {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}, "refused",
    log_name="probes",
)  # fmt: skip
"""``{"error", "reason"}``: the probes' refusals."""


def _json(status: int, body: Mapping[str, object]) -> Response:
    return Response(json.dumps(body).encode(), status, media_type="application/json")


def status_of(follower: LedgerFollower) -> dict[str, object]:
    """The ``/status`` body: the role and the counts of this process."""
    summary = follower.summary
    committed = list(summary.committed)
    return {
        "role": str(summary.role),
        "committed": len(committed),
        "last_committed": committed[-1] if committed else None,
        "takeovers": summary.takeovers,
        "conflicts": summary.conflicts,
    }


def probe_app(follower: LedgerFollower) -> FastAPI:
    """The probe routes over ``follower``."""
    app = make_app(
        "chainloom ledger follow probes", ERRORS, routes_hint="/healthz, /readyz, /status"
    )

    @app.get("/healthz", summary="Liveness: the process answers.")
    async def healthz() -> Response:
        return _json(200, {"status": "ok"})

    @app.get("/readyz", summary="Readiness: the last look at the store succeeded.")
    async def readyz() -> Response:
        ok = follower.healthy
        return _json(200 if ok else 503, {"status": "ready" if ok else "not ready",
                                          **status_of(follower)})  # fmt: skip

    @app.get("/status", summary="This replica's role and counts.")
    async def status() -> Response:
        return _json(200, status_of(follower))

    return app


class ProbeThread:
    """The probe server on an event loop in a daemon thread: :meth:`start`, :meth:`stop`."""

    def __init__(self, follower: LedgerFollower, host: str, port: int) -> None:
        self._server = WebServer(probe_app(follower), host, port, _LIMITS, ERRORS)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> int:
        """Bind and serve; returns the port (the chosen one when ``port`` is 0). Raises
        OSError when the address cannot be bound."""
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._server.start(), self._loop)
        return started.result(timeout=30)

    def stop(self) -> None:
        """Stop serving and end the thread."""
        stopped = asyncio.run_coroutine_threadsafe(self._server.stop(drain_timeout=2.0), self._loop)
        stopped.result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
