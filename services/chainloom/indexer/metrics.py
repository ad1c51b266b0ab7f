"""The indexer's counters, and the OpenTelemetry instruments that read them.

Why plain counters read by observable instruments: the pipeline increments integers on its
hot path (no client library, no locks: everything runs on one event loop), and
:class:`IndexerMetrics` reads them when they are collected (a ``/metrics`` scrape, an OTLP
export), the way the relayer's listener does. Only the write latency is recorded as it happens
(an SDK histogram, once per written VAA). The ``/metrics`` text is the SDK's Prometheus
exporter's; the Prometheus names (``chainloom_indexer_vaas_written_total``, ...) are the
translation of the OpenTelemetry names below and are listed in docs/observability.md.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource

from chainloom import telemetry

LATENCY_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the write-latency histogram's buckets; +Inf is implied."""


@dataclass(slots=True)
class LatencyHistogram:
    """Seconds from a VAA leaving the spy client to its write returning."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    """Observations per bucket (not cumulative); the last is above every bound."""
    total: float = 0.0
    """Sum of every observation, seconds."""
    record: Callable[[float], None] | None = None
    """Also hands each observation here (:class:`IndexerMetrics`' histogram), when set."""

    def observe(self, seconds: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds
        if self.record is not None:
            self.record(seconds)

    @property
    def count(self) -> int:
        """Observations so far."""
        return sum(self.counts)

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile ``q`` (None before any observation;
        ``inf`` when it is above the last bound)."""
        count = self.count
        if count == 0:
            return None
        rank = q * count
        seen = 0
        for bound, n in zip((*LATENCY_BUCKETS, float("inf")), self.counts, strict=True):
            seen += n
            if seen >= rank:
                return bound
        return float("inf")


@dataclass(slots=True)
class IndexerCounters:
    """What the pipeline did since it started."""

    received: int = 0
    """VAAs taken from the spy client (guardian copies included)."""
    duplicates: int = 0
    """Copies dropped because their exact bytes were seen recently."""
    refused: int = 0
    """Distinct VAAs that did not parse or verify (nothing written)."""
    written: int = 0
    """Distinct VAAs whose write returned (acknowledged and removed from the buffer)."""
    write_failures: int = 0
    """Batch writes that failed (the batch stayed buffered and was retried)."""
    gaps_filled: int = 0
    """Missing sequences fetched from the public API and handed to the writer."""
    gaps_not_found: int = 0
    """Fetches of a missing sequence every endpoint answered NotFound for."""
    gaps_failed: int = 0
    """Fetches of a missing sequence that failed (endpoints erring, or a VAA refused)."""
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    """Seconds from the spy client to the write's return, per written VAA."""


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """Everything ``/metrics`` shows, read at one moment."""

    counters: IndexerCounters
    """The pipeline's counters."""
    rows: Mapping[str, int]
    """Rows by outcome of the event writer (new, updated, unchanged, conflicting)."""
    buffer_depth: int
    """VAAs verified and not yet written."""
    buffer_capacity: int
    """The most the buffer holds (``buffer``)."""
    lag_seconds: float
    """Age of the oldest VAA not yet written (0 when none waits)."""
    spy_connected: bool
    """Whether a spy stream is established."""
    store_up: bool
    """Whether the last write or check of the store succeeded."""
    spy: Mapping[str, int]
    """The spy client's counters (connections, disconnects, messages, drops)."""
    gaps_open: int = 0
    """Sequences missing over every tracked emitter."""
    gap_ranges: int = 0
    """Open gaps (ranges) over every tracked emitter."""
    gaps_given_up: int = 0
    """Gaps dropped because an emitter had more than ``gaps.max_gaps``."""


SnapshotSource = Callable[[], MetricsSnapshot]
"""What :meth:`chainloom.indexer.pipeline.Pipeline.snapshot` returns (with the spy's counters)."""
_SNAPSHOT_REUSE = 0.05
"""Seconds one snapshot serves the callbacks of a collection."""
_Read = Callable[[MetricsSnapshot], list[tuple[float, dict[str, str]]]]

SPY_COUNTERS = {
    "connections": "Spy streams established.",
    "disconnects": "Spy streams lost and retried.",
    "drops": "VAAs the spy client dropped because its buffer was full (overflow=drop).",
}
"""The spy client's counters: ``chainloom.indexer.spy.<key>``."""


class IndexerMetrics:
    """The indexer's instruments on a meter provider of their own, read by ``/metrics`` (and
    exported over OTLP through ``readers``).

    ``latency`` (the pipeline's histogram) is wired to the SDK histogram here; the rest is
    read from ``snapshot`` at collection time.
    """

    def __init__(
        self,
        snapshot: SnapshotSource,
        latency: LatencyHistogram,
        *,
        readers: Sequence[MetricReader] = (),
        service_name: str = "chainloom-indexer",
    ) -> None:
        self._snapshot = snapshot
        self._last: tuple[float, MetricsSnapshot] | None = None
        self.provider: MeterProvider
        self.provider, self.registry = telemetry.prometheus_provider(
            Resource.create({"service.name": service_name}), readers
        )
        meter = self.provider.get_meter("chainloom.indexer")

        def counter(name: str, unit: str, description: str, read: _Read) -> None:
            meter.create_observable_counter(name, [self._callback(read)], unit, description)

        def gauge(name: str, unit: str, description: str, read: _Read) -> None:
            meter.create_observable_gauge(name, [self._callback(read)], unit, description)

        for key, help_text in (
            ("received", "VAAs taken from the spy, guardian copies included."),
            ("duplicates", "Copies dropped by the recent-digest set."),
            ("refused", "Distinct VAAs that did not parse or verify."),
            (
                "written",
                "Distinct VAAs whose write to the event store returned (VAAs/s: its rate).",
            ),
        ):
            counter(f"chainloom.indexer.vaas.{key}", "{vaa}", help_text, _counter(key))
        counter(
            "chainloom.indexer.rows", "{row}", "Event-store rows by write outcome.",
            lambda s: [(n, {"outcome": k}) for k, n in sorted(s.rows.items())],
        )  # fmt: skip
        counter(
            "chainloom.indexer.write_failures", "{batch}",
            "Batch writes that failed and were retried.",
            lambda s: [(s.counters.write_failures, {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.buffer.depth", "{vaa}", "VAAs verified and waiting for their write.",
            lambda s: [(s.buffer_depth, {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.buffer.capacity", "{vaa}", "Most VAAs the buffer holds.",
            lambda s: [(s.buffer_capacity, {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.lag", "s",
            "Age of the oldest VAA not yet written (the lag behind the spy).",
            lambda s: [(s.lag_seconds, {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.spy.connected", "1", "1 while a spy stream is established.",
            lambda s: [(int(s.spy_connected), {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.store.up", "1", "1 while the event store answers.",
            lambda s: [(int(s.store_up), {})],
        )  # fmt: skip
        for key, help_text in SPY_COUNTERS.items():
            counter(f"chainloom.indexer.spy.{key}", "{event}", help_text, _spy_counter(key))
        gauge(
            "chainloom.indexer.gaps.open", "{sequence}",
            "Sequences missing (open gaps) over all emitters.",
            lambda s: [(s.gaps_open, {})],
        )  # fmt: skip
        gauge(
            "chainloom.indexer.gap_ranges.open", "{gap}", "Open gaps (ranges) over all emitters.",
            lambda s: [(s.gap_ranges, {})],
        )  # fmt: skip
        counter(
            "chainloom.indexer.gaps.filled", "{sequence}",
            "Missing sequences fetched from the public API and handed to the writer.",
            lambda s: [(s.counters.gaps_filled, {})],
        )  # fmt: skip
        counter(
            "chainloom.indexer.gaps.failed", "{sequence}",
            "Fetches of missing sequences that found nothing, by status.",
            lambda s: [
                (s.counters.gaps_not_found, {"status": "not_found"}),
                (s.counters.gaps_failed, {"status": "error"}),
            ],
        )  # fmt: skip
        counter(
            "chainloom.indexer.gaps.given_up", "{gap}",
            "Gaps dropped because an emitter had more than gaps.max_gaps.",
            lambda s: [(s.gaps_given_up, {})],
        )  # fmt: skip
        histogram = meter.create_histogram(
            "chainloom.indexer.write_latency",
            "s",
            "Seconds from the spy client to the write's return, per VAA.",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        latency.record = histogram.record

    def _callback(self, read: _Read) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            del options
            return [Observation(value, labels) for value, labels in read(self._read())]

        return observe

    def _read(self) -> MetricsSnapshot:
        """One snapshot for all the callbacks of one collection (they run one after another)."""
        now = time.monotonic()
        if self._last is None or now - self._last[0] > _SNAPSHOT_REUSE:
            self._last = (now, self._snapshot())
        return self._last[1]

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return telemetry.prometheus_text(self.registry)

    def shutdown(self) -> None:
        """Stop the provider (a last OTLP export when one is configured)."""
        self.provider.shutdown()


def _counter(key: str) -> _Read:
    def read(snapshot: MetricsSnapshot) -> list[tuple[float, dict[str, str]]]:
        return [(getattr(snapshot.counters, key), {})]

    return read


def _spy_counter(key: str) -> _Read:
    def read(snapshot: MetricsSnapshot) -> list[tuple[float, dict[str, str]]]:
        return [(snapshot.spy.get(key, 0), {})]

    return read
