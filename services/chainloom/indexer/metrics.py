"""The indexer's counters, and the Prometheus text exposition rendered from them.

Why plain counters and a pure renderer: the pipeline increments integers on its hot path (no
client library, no locks: everything runs on one event loop), and :func:`prometheus_text`
turns a :class:`MetricsSnapshot` into the text format (version 0.0.4) the relayer's
listener serves too, so the pair is tested as data. The names follow Prometheus's
conventions (``_total`` counters, ``_seconds`` units) so they survive a later move to
OpenTelemetry's Prometheus exporter unchanged.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

LATENCY_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the write-latency histogram's buckets; +Inf is implied."""


@dataclass(slots=True)
class LatencyHistogram:
    """Seconds from a VAA leaving the spy client to its write returning."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    """Observations per bucket (not cumulative); the last is above every bound."""
    total: float = 0.0
    """Sum of every observation, seconds."""

    def observe(self, seconds: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds

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


def prometheus_text(snapshot: MetricsSnapshot) -> str:
    """``snapshot`` in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)

    c = snapshot.counters
    for name, value, help_text in (
        ("received", c.received, "VAAs taken from the spy, guardian copies included."),
        ("duplicates", c.duplicates, "Copies dropped by the recent-digest set."),
        ("refused", c.refused, "Distinct VAAs that did not parse or verify."),
        ("written", c.written, "Distinct VAAs whose write to the event store returned."),
    ):
        family(f"chainloom_indexer_vaas_{name}_total", "counter", help_text, [("", value)])
    family(
        "chainloom_indexer_rows_total", "counter", "Event-store rows by write outcome.",
        [(f'{{outcome="{k}"}}', v) for k, v in sorted(snapshot.rows.items())],
    )  # fmt: skip
    family(
        "chainloom_indexer_write_failures_total", "counter",
        "Batch writes that failed and were retried.", [("", c.write_failures)],
    )  # fmt: skip
    family(
        "chainloom_indexer_buffer_depth", "gauge", "VAAs verified and waiting for their write.",
        [("", snapshot.buffer_depth)],
    )  # fmt: skip
    family(
        "chainloom_indexer_buffer_capacity", "gauge", "Most VAAs the buffer holds.",
        [("", snapshot.buffer_capacity)],
    )  # fmt: skip
    family(
        "chainloom_indexer_lag_seconds", "gauge", "Age of the oldest VAA not yet written.",
        [("", snapshot.lag_seconds)],
    )  # fmt: skip
    family(
        "chainloom_indexer_spy_connected", "gauge", "1 while a spy stream is established.",
        [("", int(snapshot.spy_connected))],
    )  # fmt: skip
    family(
        "chainloom_indexer_store_up", "gauge", "1 while the event store answers.",
        [("", int(snapshot.store_up))],
    )  # fmt: skip
    for key, help_text in (
        ("connections", "Spy streams established."),
        ("disconnects", "Spy streams lost and retried."),
        ("drops", "VAAs the spy client dropped because its buffer was full (overflow=drop)."),
    ):
        family(
            f"chainloom_indexer_spy_{key}_total", "counter", help_text,
            [("", snapshot.spy.get(key, 0))],
        )  # fmt: skip
    name = "chainloom_indexer_write_latency_seconds"
    lines.append(f"# HELP {name} Seconds from the spy client to the write's return, per VAA.")
    lines.append(f"# TYPE {name} histogram")
    cumulative = 0
    for bound, n in zip((*LATENCY_BUCKETS, float("inf")), c.latency.counts, strict=True):
        cumulative += n
        label = "+Inf" if bound == float("inf") else _number(bound)
        lines.append(f'{name}_bucket{{le="{label}"}} {cumulative}')
    lines.append(f"{name}_sum {_number(c.latency.total)}")
    lines.append(f"{name}_count {cumulative}")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))
