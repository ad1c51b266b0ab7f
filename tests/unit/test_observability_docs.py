"""Each service's ``/metrics`` text parses with prometheus_client's parser and holds the names
``docs/observability.md`` documents (and the documentation names nothing that is not there)."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from chainloom.indexer.metrics import IndexerCounters, IndexerMetrics, MetricsSnapshot
from chainloom.relayer.metrics import ListenerMetrics
from chainloom.relayer.model import Table
from chainloom_operator.metrics import OperatorMetrics
from tests.conftest import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "observability.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n### ", start + 1)
    return DOC[start : end if end > 0 else None]


def _documented(section: str, prefix: str) -> set[str]:
    """Prometheus names in a section (``chainloom_x_total, _y_total`` shorthand expanded)."""
    names: set[str] = set()
    for cell in re.findall(r"`([^`]+)`", section):
        if cell.startswith(prefix):
            names.add(cell)
            base = cell
        elif cell.startswith("_") and names:
            stem = base.rsplit("_", 2)[0] if base.endswith("_total") else base
            names.add(stem + cell)
    return names


def _sample_names(text: str) -> set[str]:
    return {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }


def test_listener_metrics_parse_and_hold_every_documented_name() -> None:
    stats = {
        "intake": {"by_status": {"queued": 2}, "by_source": {"rest": 2}, "redeem_check_skipped": 1},
        "rules": {"target_chain": {"passed": 2}},
        "spy": {"connected": True, "connections": 1, "disconnects": 0, "messages": 4,
                "drops": 0, "consumer_errors": 0, "last_error": None},
        "recovery": {"fetched": 1, "queued": 1, "known": 0, "rejected": 0, "not_found": 0,
                     "errors": 0, "missing": 3},
    }  # fmt: skip
    metrics = ListenerMetrics(lambda: stats, lambda: {Table.INCOMING: {4: 2}})
    try:
        names = _sample_names(metrics.exposition().decode())
    finally:
        metrics.shutdown()
    section = _section("### Relayer listener")
    documented = {
        name.replace("<name>", key)
        for name in _documented(section, "chainloom_")
        for key in ("connections", "disconnects", "messages", "drops", "consumer_errors")
    }
    assert "chainloom_relayer_queue_depth" in documented
    assert "chainloom_spy_consumer_errors_total" in documented
    assert documented <= names, documented - names


def test_indexer_metrics_parse_and_hold_every_documented_name() -> None:
    counters = IndexerCounters(received=3, written=1)
    snapshot = MetricsSnapshot(
        counters=counters, rows={"new": 1}, buffer_depth=0, buffer_capacity=10,
        lag_seconds=0.0, spy_connected=True, store_up=True, spy={"connections": 1},
    )  # fmt: skip
    metrics = IndexerMetrics(lambda: snapshot, counters.latency)
    try:
        counters.latency.observe(0.2)
        names = _sample_names(metrics.exposition().decode())
    finally:
        metrics.shutdown()
    documented = _documented(_section("### Indexer"), "chainloom_indexer")
    histogram = "chainloom_indexer_write_latency_seconds"
    documented = {n + "_count" if n == histogram else n for n in documented}
    assert "chainloom_indexer_lag_seconds" in documented
    assert "chainloom_indexer_gaps_open" in documented
    assert documented <= names, documented - names


def test_operator_metrics_parse_and_hold_every_documented_name() -> None:
    metrics = OperatorMetrics()
    try:
        metrics.reconciled("RelayerPool", "retry", 0.5, "MissingSecret")
        names = _sample_names(metrics.exposition().decode())
    finally:
        metrics.shutdown()
    documented = _documented(_section("### Operator"), "chainloom_operator")
    histogram = "chainloom_operator_reconcile_duration_seconds"
    assert histogram in documented
    documented = {n + "_count" if n == histogram else n for n in documented}
    assert documented == {
        "chainloom_operator_reconciles_total",
        "chainloom_operator_errors_total",
        histogram + "_count",
    }
    assert documented <= names, documented - names
