"""The driver-side stages of a table job as spans: a ``spark.job`` root, its stages under it,
and nothing at all while tracing is off."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chainloom import telemetry
from chainloom_spark import runner
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.runner import count_attributes, run_table_job, stage
from chainloom_spark.summary import JobSummary
from chainloom_spark.termination import TERMINATION_LOG_ENV


@dataclass(frozen=True)
class Plan:
    summary_path: str | None = None


def _run(plan: Plan) -> JobSummary:
    with stage("read", **{"chainloom.format": "binary"}):
        pass
    with stage("verify_write", **{"chainloom.phase": "messages"}):
        pass
    summary = JobSummary("vaa-ingest")
    summary.merge_counts([(2, {"new": 5, "unchanged": 1, "written": 5}), (-1, {"refused": 2})])
    return summary


@pytest.fixture
def quiet_job(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(TERMINATION_LOG_ENV, str(tmp_path / "termination-log"))
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def test_the_stages_are_children_of_one_job_span(
    quiet_job: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(runner, "_tracer", provider.get_tracer("test"))
    telemetry.enable_tracing()
    try:
        assert run_table_job([], lambda argv: Plan(), _run, "vaa-ingest") == 0
    finally:
        telemetry.enable_tracing(False)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"spark.job", "spark.read", "spark.verify_write", "spark.summary"}
    root = spans["spark.job"]
    assert root.parent is None
    # The root carries the summary's counts (integers only: no "job", no "seconds").
    assert root.attributes == {
        "chainloom.job": "vaa-ingest", "chainloom.read": 8, "chainloom.new": 5,
        "chainloom.updated": 0, "chainloom.unchanged": 1, "chainloom.conflicting": 0,
        "chainloom.refused": 2, "chainloom.written": 5,
    }  # fmt: skip
    for name in ("spark.read", "spark.verify_write", "spark.summary"):
        parent = spans[name].parent
        assert parent is not None
        assert parent.span_id == root.context.span_id
    assert spans["spark.verify_write"].attributes == {"chainloom.phase": "messages"}
    order = [spans[n] for n in ("spark.read", "spark.verify_write", "spark.summary")]
    times = [(span.start_time or 0, span.end_time or 0) for span in order]
    assert times[0][1] <= times[1][0]
    assert times[1][1] <= times[2][0]


def test_a_failed_job_ends_its_span_with_an_error(
    quiet_job: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(runner, "_tracer", provider.get_tracer("test"))

    def failing(plan: Plan) -> JobSummary:
        raise JobArgumentError("--input: nothing there")

    telemetry.enable_tracing()
    try:
        assert run_table_job([], lambda argv: Plan(), failing, "export") == 2
    finally:
        telemetry.enable_tracing(False)
    (span,) = exporter.get_finished_spans()
    assert span.name == "spark.job"
    assert not span.status.is_ok


def test_nothing_is_recorded_while_tracing_is_off(
    quiet_job: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(runner, "_tracer", provider.get_tracer("test"))
    assert run_table_job([], lambda argv: Plan(), _run, "vaa-ingest") == 0
    assert exporter.get_finished_spans() == ()


def test_count_attributes_keep_integers_only() -> None:
    document = {"job": "ledger-load", "ledgers": 30, "transactions": 600, "seconds": 1.5,
                "done": True, "per_chain": {"2": {"new": 1}}}  # fmt: skip
    assert count_attributes(document) == {"chainloom.ledgers": 30, "chainloom.transactions": 600}
