"""The operator's metrics as the SDK's Prometheus exporter shows them, and their server."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from chainloom_operator.metrics import OperatorMetrics


def values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_reconciles_errors_and_latency_by_kind_and_outcome() -> None:
    metrics = OperatorMetrics()
    try:
        metrics.reconciled("RelayerPool", "ok", 0.2, None)
        metrics.reconciled("RelayerPool", "ok", 0.3, None)
        metrics.reconciled("BackendTable", "retry", 2.0, "BackendUnavailable")
        seen = values(metrics.exposition().decode())
    finally:
        metrics.shutdown()
    pool = (("kind", "RelayerPool"),)
    assert seen[("chainloom_operator_reconciles_total", (*pool, ("outcome", "ok")))] == 2
    table_retry = (("kind", "BackendTable"), ("outcome", "retry"))
    assert seen[("chainloom_operator_reconciles_total", table_retry)] == 1
    reason = (("kind", "BackendTable"), ("reason", "BackendUnavailable"))
    assert seen[("chainloom_operator_errors_total", reason)] == 1
    assert ("chainloom_operator_errors_total", (*pool, ("reason", "x"))) not in seen
    assert seen[("chainloom_operator_reconcile_duration_seconds_count", pool)] == 2
    assert seen[("chainloom_operator_reconcile_duration_seconds_sum", pool)] == 0.5
    bucket = (*pool, ("le", "0.25"))
    assert seen[("chainloom_operator_reconcile_duration_seconds_bucket", bucket)] == 1


def test_metrics_are_served_over_http_until_shut_down() -> None:
    metrics = OperatorMetrics()
    try:
        port = metrics.serve("127.0.0.1:0")
        metrics.reconciled("IngestPipeline", "invalid", 0.01, "InvalidSpec")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    finally:
        metrics.shutdown()
    assert 'chainloom_operator_reconciles_total{kind="IngestPipeline",outcome="invalid"}' in text
