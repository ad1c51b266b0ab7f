"""``indexer run`` observed by the stack's real OpenTelemetry Collector.

A spy replays signed VAAs to an indexer process exporting over OTLP; after it stops (its
exporters flush at exit) the collector's JSON-lines files hold its ``indexer.write_batch``
spans, with the event writer's ``eventstore.write_batch`` under them, and its metrics with the
values its ``/metrics`` showed. This run's telemetry is told apart from other runs' by a
resource attribute of its own, as in the relayer's telemetry test.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from chainloom_dev.net import free_port
from tests.integration.indexer.conftest import Store, serve_spy, workload, write_vaa_file
from tests.integration.relayer.test_telemetry import (
    RUN_ATTRIBUTE,
    _points,
    _spans,
    _value,
    _wait,
    collector,
)

__all__ = ["collector"]


def test_the_indexer_exports_its_spans_and_metrics(
    collector: dict[str, str], store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    run = uuid.uuid4().hex
    raws = workload(12, seed=1515)
    distinct = len(set(raws))
    spy_port = free_port()
    spy = serve_spy(write_vaa_file(tmp_path / "vaas.txt", raws), spy_port, copies=2)
    bigtable = {
        "project": store.settings.project, "instance": store.settings.instance,
        "table": store.settings.table, "index_table": store.settings.index_table,
        "operation_timeout": 10,
    }  # fmt: skip
    indexer = indexer_process(
        {"bigtable": bigtable, "spy": {"address": f"127.0.0.1:{spy_port}"}},
        env={
            "BIGTABLE_EMULATOR_HOST": store.emulator,
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector["endpoint"],
            "OTEL_RESOURCE_ATTRIBUTES": f"{RUN_ATTRIBUTE}={run}",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "300",
        },
    )
    indexer.start()
    try:
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", distinct)
        _, exposition = indexer.get("/metrics")
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0, indexer.output()
    finally:
        spy.stop()
    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if not sample.labels
    }
    assert samples["chainloom_indexer_vaas_written_total"] == distinct
    assert samples["chainloom_indexer_write_latency_seconds_count"] == distinct

    traces, metrics = Path(collector["traces_file"]), Path(collector["metrics_file"])

    def batches() -> list[dict[str, Any]]:
        return [span for span in _spans(traces, run) if span["name"] == "indexer.write_batch"]

    _wait(lambda: sum(int(s["attrs"]["chainloom.rows"]) for s in batches()) >= distinct,
          "the indexer's batch-write spans")  # fmt: skip
    spans = _spans(traces, run)
    assert {span["service"] for span in spans} == {"chainloom-indexer"}
    written = batches()
    assert sum(int(span["attrs"]["chainloom.rows"]) for span in written) == distinct
    assert all(int(span["attrs"]["chainloom.attempt"]) == 1 for span in written)
    # The writer's own span (run in the write pool's thread) is a child of the batch's.
    by_id = {span["spanId"]: span for span in written}
    children = [span for span in spans if span["name"] == "eventstore.write_batch"]
    assert children
    for child in children:
        parent = by_id[child["parentSpanId"]]
        assert parent["traceId"] == child["traceId"]

    def exported() -> bool:
        points = _points(metrics, run).get("chainloom.indexer.vaas.written", [])
        return bool(points) and _value(points[-1]) == distinct

    _wait(exported, "the indexer's metrics")
    points = _points(metrics, run)
    assert points["chainloom.indexer.write_latency"][-1]["count"] in (str(distinct), distinct)
    assert _value(points["chainloom.indexer.vaas.received"][-1]) == len(raws) * 2
    assert _value(points["chainloom.indexer.lag"][-1]) == 0
    assert "chainloom.indexer.gaps.open" in points
