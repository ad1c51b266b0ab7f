"""The Prometheus text of the indexer's metrics (the SDK's exporter), as data."""

from __future__ import annotations

import time

from chainloom.indexer.metrics import (
    LATENCY_BUCKETS,
    IndexerCounters,
    IndexerMetrics,
    LatencyHistogram,
    MetricsSnapshot,
)


def prometheus_text(counters: IndexerCounters, latencies: tuple[float, ...] = ()) -> str:
    """``/metrics`` over ``counters`` after ``latencies`` were observed."""
    metrics = IndexerMetrics(lambda: snapshot(counters), counters.latency)
    try:
        for seconds in latencies:
            counters.latency.observe(seconds)
        return metrics.exposition().decode()
    finally:
        metrics.shutdown()


def snapshot(counters: IndexerCounters) -> MetricsSnapshot:
    return MetricsSnapshot(
        counters=counters,
        rows={"new": 5, "unchanged": 2},
        buffer_depth=3,
        buffer_capacity=100,
        lag_seconds=0.25,
        spy_connected=True,
        store_up=False,
        spy={"connections": 2, "disconnects": 1, "drops": 0},
    )


def samples(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.rsplit(" ", 1) for line in lines)


def test_every_family_has_help_and_type_and_the_values_are_right() -> None:
    counters = IndexerCounters(received=38, duplicates=36, refused=0, written=2)
    text = prometheus_text(counters, (0.03, 12.0))
    values = samples(text)
    assert values["chainloom_indexer_vaas_received_total"] == "38.0"
    assert values["chainloom_indexer_vaas_duplicates_total"] == "36.0"
    assert values["chainloom_indexer_vaas_written_total"] == "2.0"
    assert values['chainloom_indexer_rows_total{outcome="new"}'] == "5.0"
    assert values["chainloom_indexer_buffer_depth"] == "3.0"
    assert values["chainloom_indexer_lag_seconds"] == "0.25"
    assert values["chainloom_indexer_spy_connected"] == "1.0"
    assert values["chainloom_indexer_store_up"] == "0.0"
    assert values["chainloom_indexer_spy_connections_total"] == "2.0"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="0.05"}'] == "1.0"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="10.0"}'] == "1.0"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="+Inf"}'] == "2.0"
    assert values["chainloom_indexer_write_latency_seconds_count"] == "2.0"
    assert values["chainloom_indexer_write_latency_seconds_sum"] == "12.03"
    assert counters.latency.count == 2  # the pipeline's own histogram still counts
    names = {key.split("{")[0] for key in values}
    for name in names:
        family = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert f"# TYPE {family} " in text, family
        assert f"# HELP {family} " in text, family
    assert text.endswith("\n")


def test_the_collected_values_follow_the_counters() -> None:
    counters = IndexerCounters()
    metrics = IndexerMetrics(lambda: snapshot(counters), counters.latency)
    try:
        assert samples(metrics.exposition().decode())["chainloom_indexer_vaas_written_total"] == (
            "0.0"
        )
        counters.written = 7
        counters.gaps_not_found = 2
        time.sleep(0.06)  # past the snapshot one collection shares
        values = samples(metrics.exposition().decode())
    finally:
        metrics.shutdown()
    assert values["chainloom_indexer_vaas_written_total"] == "7.0"
    assert values['chainloom_indexer_gaps_failed_total{status="not_found"}'] == "2.0"


def test_histogram_quantiles_are_bucket_bounds() -> None:
    histogram = LatencyHistogram()
    assert histogram.quantile(0.5) is None
    for _ in range(99):
        histogram.observe(0.02)
    histogram.observe(40.0)
    assert histogram.count == 100
    assert histogram.quantile(0.5) == 0.025
    assert histogram.quantile(1.0) == float("inf")
    assert len(histogram.counts) == len(LATENCY_BUCKETS) + 1
