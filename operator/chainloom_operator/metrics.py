"""The operator's metrics: reconciles by kind and outcome, errors, reconcile latency.

Why a meter provider of its own (not the global one): the operator's ``/metrics`` endpoint
reads it through the SDK's Prometheus exporter whether or not OTLP export is on, exactly like
the relayer's listener and the indexer; the OTLP reader is added only when ``OTEL_*`` asks for
it (:func:`chainloom.telemetry.setup`). kopf's own probe server answers the liveness endpoint
and cannot serve other routes, so ``/metrics`` has a small server of its own
(prometheus_client's), on ``metrics`` (``host:port``). docs/observability.md lists the names.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from wsgiref.simple_server import WSGIServer

from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from prometheus_client import start_http_server

from chainloom import telemetry

OUTCOMES = ("ok", "retry", "gave_up", "invalid")
"""``outcome`` of ``chainloom.operator.reconciles``: applied; failed, tried again later; failed
``retries`` times; a spec the models refuse (not retried)."""
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the reconcile-latency histogram's buckets."""


class OperatorMetrics:
    """The operator's instruments, read by ``/metrics`` (and OTLP through ``readers``)."""

    def __init__(
        self, *, readers: Sequence[MetricReader] = (), service_name: str = "chainloom-operator"
    ) -> None:
        self.provider, self.registry = telemetry.prometheus_provider(
            Resource.create({"service.name": service_name}), readers
        )
        meter = self.provider.get_meter("chainloom.operator")
        self._reconciles = meter.create_counter(
            "chainloom.operator.reconciles", "{reconcile}", "Reconciles by kind and outcome."
        )
        self._errors = meter.create_counter(
            "chainloom.operator.errors", "{error}", "Failed reconciles by kind and reason."
        )
        self._duration = meter.create_histogram(
            "chainloom.operator.reconcile.duration",
            "s",
            "Seconds one reconcile took (render, apply, status), by kind.",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self._server: tuple[WSGIServer, threading.Thread] | None = None

    def reconciled(self, kind: str, outcome: str, seconds: float, reason: str | None) -> None:
        """Count one reconcile of a ``kind`` resource (``reason``: the error's, if it failed)."""
        self._reconciles.add(1, {"kind": kind, "outcome": outcome})
        self._duration.record(seconds, {"kind": kind})
        if reason is not None:
            self._errors.add(1, {"kind": kind, "reason": reason})

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return telemetry.prometheus_text(self.registry)

    def serve(self, address: str) -> int:
        """Serve ``/metrics`` on ``host:port`` (port 0 picks one) in a thread; returns the port.

        Raises OSError when the address cannot be bound."""
        host, _, port = address.rpartition(":")
        server, thread = start_http_server(int(port), host or "0.0.0.0", self.registry)  # noqa: S104 (a pod's port)
        self._server = (server, thread)
        return int(server.server_port)

    def shutdown(self) -> None:
        """Stop the server and the provider (a last OTLP export when one is configured)."""
        if self._server is not None:
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(5.0)
            self._server = None
        self.provider.shutdown()
