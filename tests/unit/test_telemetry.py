"""chainloom.telemetry without a collector: what "off" installs, trace context, JSON logs."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client.parser import text_string_to_metric_families

from chainloom import telemetry


def test_nothing_is_exported_unless_an_endpoint_is_configured() -> None:
    assert telemetry.exporting({}) == (False, False)
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert telemetry.exporting(both) == (True, True)
    assert telemetry.exporting({**both, "OTEL_METRICS_EXPORTER": "none"}) == (True, False)
    assert telemetry.exporting({**both, "OTEL_SDK_DISABLED": "true"}) == (False, False)
    traces_only = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}
    assert telemetry.exporting(traces_only) == (True, False)


def test_off_installs_no_provider() -> None:
    observed = telemetry.setup("chainloom-test", environ={})
    assert observed.tracer_provider is None
    assert observed.meter_provider is None
    assert observed.otlp_metric_readers() == []
    observed.shutdown()


def test_traceparent_round_trip_continues_the_same_trace() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("untraced"):
        assert telemetry.current_traceparent() is None  # tracing is off: nothing is carried
    telemetry.enable_tracing()
    try:
        assert telemetry.current_traceparent() is None  # no current span
        with telemetry.start_span(tracer, "parent") as parent:
            traceparent = telemetry.current_traceparent()
        assert traceparent is not None
        trace_id = parent.get_span_context().trace_id
        assert traceparent.startswith("00-" + format(trace_id, "032x"))
        child_context = telemetry.context_from(traceparent)
        with telemetry.start_span(tracer, "child", context=child_context) as child:
            assert child.get_span_context().trace_id == trace_id
        assert telemetry.context_from(None) is None
    finally:
        telemetry.enable_tracing(False)


def test_spans_cost_nothing_while_tracing_is_off() -> None:
    tracer = TracerProvider().get_tracer("test")
    first = telemetry.start_span(tracer, "a")
    assert first is telemetry.start_span(tracer, "b")  # one shared do-nothing context
    with first as span:
        assert not span.is_recording()
        span.set_attribute("chainloom.digest", "0x00")  # accepted and dropped


def test_json_log_lines_carry_trace_and_span_ids() -> None:
    formatter = telemetry.JsonFormatter()
    record = logging.LogRecord(
        "chainloom.x", logging.WARNING, __file__, 1, "hello %s", ("a",), None
    )
    plain = json.loads(formatter.format(record))
    assert plain["message"] == "hello a"
    assert plain["level"] == "WARNING"
    assert "trace_id" not in plain
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        traced = json.loads(formatter.format(record))
    context = span.get_span_context()
    assert traced["trace_id"] == format(context.trace_id, "032x")
    assert traced["span_id"] == format(context.span_id, "016x")


def test_each_prometheus_provider_has_its_own_registry() -> None:
    first, first_registry = telemetry.prometheus_provider(telemetry.resource("a", {}))
    second, second_registry = telemetry.prometheus_provider(telemetry.resource("b", {}))
    first.get_meter("t").create_counter("chainloom.test.things", unit="{thing}").add(3)
    families = list(
        text_string_to_metric_families(telemetry.prometheus_text(first_registry).decode())
    )
    assert [(f.name, f.samples[0].value) for f in families] == [("chainloom_test_things", 3.0)]
    assert telemetry.prometheus_text(second_registry).strip() == b""
    first.shutdown()
    second.shutdown()
