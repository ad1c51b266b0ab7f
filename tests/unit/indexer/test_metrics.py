"""The Prometheus text of the indexer's metrics, as data."""

from __future__ import annotations

from chainloom.indexer.metrics import (
    LATENCY_BUCKETS,
    IndexerCounters,
    LatencyHistogram,
    MetricsSnapshot,
    prometheus_text,
)


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
    counters.latency.observe(0.03)
    counters.latency.observe(12.0)
    text = prometheus_text(snapshot(counters))
    values = samples(text)
    assert values["chainloom_indexer_vaas_received_total"] == "38"
    assert values["chainloom_indexer_vaas_duplicates_total"] == "36"
    assert values["chainloom_indexer_vaas_written_total"] == "2"
    assert values['chainloom_indexer_rows_total{outcome="new"}'] == "5"
    assert values["chainloom_indexer_buffer_depth"] == "3"
    assert values["chainloom_indexer_lag_seconds"] == "0.25"
    assert values["chainloom_indexer_spy_connected"] == "1"
    assert values["chainloom_indexer_store_up"] == "0"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="0.05"}'] == "1"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="10"}'] == "1"
    assert values['chainloom_indexer_write_latency_seconds_bucket{le="+Inf"}'] == "2"
    assert values["chainloom_indexer_write_latency_seconds_count"] == "2"
    names = {key.split("{")[0] for key in values}
    for name in names:
        family = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert f"# TYPE {family} " in text, family
        assert f"# HELP {family} " in text, family
    assert text.endswith("\n")


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
