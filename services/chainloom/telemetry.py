"""Traces, metrics and log lines of every chainloom process, configured the standard way.

Why one small module: each service used to count its own things its own way. Here a process
turns OpenTelemetry on from the standard ``OTEL_*`` environment (the names every SDK and
collector document: ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
``OTEL_TRACES_SAMPLER``, ``OTEL_METRIC_EXPORT_INTERVAL``, ``OTEL_SDK_DISABLED``, ...), and the
instrumented code only ever uses the OpenTelemetry API (``trace.get_tracer``,
``metrics.get_meter``).

Off costs nothing: when no OTLP endpoint is configured, :func:`setup` installs nothing, so the
API's own no-op tracer and meter stay in place (no span is recorded, no exporter thread runs).
What a service shows on its ``/metrics`` endpoint does not depend on that: it owns a meter
provider with a Prometheus reader (:func:`prometheus_provider`), whose callbacks run only when
the endpoint is scraped.

Trace context crosses processes as a W3C ``traceparent`` string (:func:`current_traceparent`,
:func:`context_from`): the relayer stores it inside the Redis request, so the worker that
claims the request continues the listener's trace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import orjson
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from prometheus_client import CollectorRegistry, generate_latest

_PROPAGATOR = TraceContextTextMapPropagator()
_TRACEPARENT = "traceparent"
_NOT_TRACED: AbstractContextManager[trace.Span] = contextlib.nullcontext(trace.INVALID_SPAN)
"""What :func:`start_span` returns while tracing is off (reusable, costs one call)."""
_tracing = False
"""True once :func:`setup` installed a tracer provider that exports."""


def exporting(environ: Mapping[str, str] = os.environ) -> tuple[bool, bool]:
    """Whether the environment asks for OTLP export of (traces, metrics).

    An endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or the signal's own
    ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT``) turns a signal on; ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_<SIGNAL>_EXPORTER=none`` turns it off again.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False, False
    common = bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())

    def wanted(signal: str) -> bool:
        if environ.get(f"OTEL_{signal}_EXPORTER", "").strip().lower() == "none":
            return False
        return common or bool(environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", "").strip())

    return wanted("TRACES"), wanted("METRICS")


def resource(service_name: str, environ: Mapping[str, str] = os.environ) -> Resource:
    """The process's resource: ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` first,
    else ``service_name`` (``chainloom-relayer-listener``, ...)."""
    if environ.get("OTEL_SERVICE_NAME", "").strip():
        return Resource.create()
    return Resource.create({SERVICE_NAME: service_name})


@dataclass(slots=True)
class Telemetry:
    """What :func:`setup` installed in this process (nothing, when telemetry is off)."""

    service_name: str
    """The default ``service.name`` of this process."""
    tracer_provider: TracerProvider | None = None
    """The SDK tracer provider exporting spans, or None (the API's no-op tracer is in use)."""
    meter_provider: MeterProvider | None = None
    """The SDK meter provider exporting metrics over OTLP, or None (no-op meter)."""
    owned: list[MeterProvider] = field(default_factory=list)
    """Providers made for ``/metrics`` endpoints (:meth:`prometheus`), shut down with this."""

    def otlp_metric_readers(self) -> list[MetricReader]:
        """A fresh OTLP metric reader when metrics are exported, for a provider of its own."""
        if self.meter_provider is None:
            return []
        return [PeriodicExportingMetricReader(OTLPMetricExporter())]

    def prometheus(self) -> tuple[MeterProvider, CollectorRegistry]:
        """A meter provider for one ``/metrics`` endpoint (also exported over OTLP when on)."""
        provider, registry = prometheus_provider(
            resource(self.service_name), self.otlp_metric_readers()
        )
        self.owned.append(provider)
        return provider, registry

    def shutdown(self) -> None:
        """Flush and stop every exporter (spans still buffered are sent)."""
        for provider in self.owned:
            provider.shutdown()
        self.owned.clear()
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def setup(service_name: str, environ: Mapping[str, str] = os.environ) -> Telemetry:
    """Install OTLP-exporting tracer and meter providers if the environment asks for them.

    Call once per process, at start (the CLI does); call :meth:`Telemetry.shutdown` at exit so
    buffered spans are sent. With nothing configured this installs nothing.
    """
    traces, metric_export = exporting(environ)
    telemetry = Telemetry(service_name)
    if traces:
        # The SDK reads the sampler (OTEL_TRACES_SAMPLER[_ARG]) and the batch processor's
        # pacing (OTEL_BSP_*) from the environment; the exporter its endpoint and headers.
        tracer_provider = TracerProvider(resource=resource(service_name, environ))
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
        telemetry.tracer_provider = tracer_provider
        enable_tracing()
    if metric_export:
        meter_provider = MeterProvider(
            metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())],
            resource=resource(service_name, environ),
        )
        metrics.set_meter_provider(meter_provider)
        telemetry.meter_provider = meter_provider
    return telemetry


def prometheus_provider(
    process: Resource, readers: Sequence[MetricReader] = ()
) -> tuple[MeterProvider, CollectorRegistry]:
    """A meter provider read by a Prometheus registry of its own (plus ``readers``).

    Its own registry, not prometheus_client's global one, so two services (or two tests) in
    one process never mix their series.
    """
    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(
        disable_target_info=True, scope_info_enabled=False, registry=registry
    )
    return MeterProvider(metric_readers=[reader, *readers], resource=process), registry


def prometheus_text(registry: CollectorRegistry) -> bytes:
    """The registry in the Prometheus text exposition format."""
    return generate_latest(registry)


PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Content type of :func:`prometheus_text`."""


def enable_tracing(on: bool = True) -> None:
    """Make :func:`start_span` start real spans (``setup`` calls it when traces are exported;
    a test with a tracer provider of its own calls it too)."""
    global _tracing  # noqa: PLW0603 (one process-wide switch, like the API's global provider)
    _tracing = on


def start_span(
    tracer: trace.Tracer,
    name: str,
    *,
    context: otel_context.Context | None = None,
    attributes: Mapping[str, str | int | bool] | None = None,
) -> AbstractContextManager[trace.Span]:
    """``tracer.start_as_current_span(...)``, or a shared do-nothing context (whose span is
    the API's invalid, non-recording span) while tracing is off: the hot paths of the relayer,
    the event store and the ETL then pay one function call per span, not the API's no-op
    span machinery (context attach and detach)."""
    if not _tracing:
        return _NOT_TRACED
    return tracer.start_as_current_span(name, context=context, attributes=attributes)


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span (None when nothing is being traced)."""
    if not _tracing:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get(_TRACEPARENT)


def context_from(traceparent: str | None) -> otel_context.Context | None:
    """The context a ``traceparent`` names, to start a child span in another process."""
    if not traceparent or not _tracing:
        return None
    return _PROPAGATOR.extract({_TRACEPARENT: traceparent})


class JsonFormatter(logging.Formatter):
    """One JSON object per log line, with the trace and span ids of the event (if traced)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            entry["trace_id"] = format(span.trace_id, "032x")
            entry["span_id"] = format(span.span_id, "016x")
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""The text log line every service writes (``telemetry.log_format: text``)."""


def configure_logging(log_format: str = "text", level: int = logging.INFO) -> None:
    """Send the root logger's lines to stderr as ``text`` or ``json``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
