"""The listener's metrics: its counters as OpenTelemetry instruments, for ``/metrics`` and OTLP.

Why observable instruments over the counters the listener already keeps: the intake, the
validator, the spy client and recovery count what they do (``/v1/stats`` shows the same
numbers), so the metrics read those counters when they are collected (a ``/metrics`` scrape,
an OTLP export) and the hot path does no extra work. The queue depths are read from Redis at
collection time too. The exposition text is the SDK's Prometheus exporter's (through
prometheus_client), not hand-written; the Prometheus names are those of the OpenTelemetry
names below (dots become underscores, counters gain ``_total``). docs/observability.md lists
them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource

from chainloom import telemetry
from chainloom.relayer.model import Table

log = logging.getLogger(__name__)

StatsSource = Callable[[], dict[str, Any]]
"""What :meth:`chainloom.relayer.listener.Listener.stats` returns."""
DepthsSource = Callable[[], dict[Table, dict[int, int]]]
"""What :meth:`chainloom.relayer.tables.RelayTables.depths` returns."""

SPY_COUNTERS = {
    "connections": "Spy streams established.",
    "disconnects": "Spy streams lost and retried.",
    "messages": "VAAs received from the spy.",
    "drops": "Spy VAAs dropped because the intake buffer was full.",
    "consumer_errors": "Spy VAAs on which the intake failed unexpectedly.",
}
"""The spy client's counters: ``chainloom.spy.<key>``."""

RECOVERY_RESULTS = ("fetched", "queued", "known", "rejected", "not_found", "errors")
"""The ``result`` values of ``chainloom.listener.recovery``."""


class ListenerMetrics:
    """The listener's instruments on a meter provider of their own, read by ``/metrics``."""

    def __init__(
        self,
        stats: StatsSource,
        depths: DepthsSource | None = None,
        *,
        readers: Sequence[MetricReader] = (),
        service_name: str = "chainloom-relayer-listener",
    ) -> None:
        self._stats = stats
        self._depths = depths
        self.provider: MeterProvider
        self.provider, self.registry = telemetry.prometheus_provider(
            Resource.create({"service.name": service_name}), readers
        )
        meter = self.provider.get_meter("chainloom.relayer.listener")

        def counter(name: str, unit: str, description: str, read: _Reader) -> None:
            meter.create_observable_counter(name, [self._callback(read)], unit, description)

        def gauge(name: str, unit: str, description: str, read: _Reader) -> None:
            meter.create_observable_gauge(name, [self._callback(read)], unit, description)

        counter(
            "chainloom.listener.outcomes", "{vaa}", "VAAs decided, by outcome.",
            lambda s: [(n, {"status": k}) for k, n in sorted(s["intake"]["by_status"].items())],
        )  # fmt: skip
        counter(
            "chainloom.listener.source", "{vaa}", "VAAs decided, by source (spy, rest).",
            lambda s: [(n, {"source": k}) for k, n in sorted(s["intake"]["by_source"].items())],
        )  # fmt: skip
        counter(
            "chainloom.listener.redeem_check_skipped", "{vaa}",
            "Queued VAAs whose target chain had no adapter to ask.",
            lambda s: [(s["intake"]["redeem_check_skipped"], {})],
        )  # fmt: skip
        counter(
            "chainloom.listener.rule", "{vaa}", "Validation rule outcomes.",
            lambda s: [
                (count, {"rule": rule, "result": result})
                for rule, counts in s["rules"].items()
                for result, count in sorted(counts.items())
            ],
        )  # fmt: skip
        gauge(
            "chainloom.spy.connected", "1", "1 while a spy stream is established.",
            lambda s: [(int(s["spy"]["connected"]), {})] if "spy" in s else [],
        )  # fmt: skip
        for key, help_text in SPY_COUNTERS.items():
            counter(f"chainloom.spy.{key}", "{event}", help_text, _spy_counter(key))
        counter(
            "chainloom.listener.recovery", "{vaa}",
            "Missed VAAs: fetches by result (fetched, not_found, errors) and what the intake "
            "made of the fetched (queued, known, rejected).",
            lambda s: [(s["recovery"][k], {"result": k}) for k in RECOVERY_RESULTS]
            if "recovery" in s else [],
        )  # fmt: skip
        gauge(
            "chainloom.listener.recovery.missing", "{sequence}",
            "Sequences of relayed emitters never seen (open gaps).",
            lambda s: [(s["recovery"]["missing"], {})] if "recovery" in s else [],
        )  # fmt: skip
        if depths is not None:
            meter.create_observable_gauge(
                "chainloom.relayer.queue.depth",
                [self._depth_callback],
                "{request}",
                "Requests in each relay table, by table and target chain.",
            )

    def _callback(self, read: _Reader) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            del options
            return [Observation(value, labels) for value, labels in read(self._stats())]

        return observe

    def _depth_callback(self, options: CallbackOptions) -> Iterable[Observation]:
        del options
        assert self._depths is not None
        try:
            depths = self._depths()
        except Exception as error:  # Redis down: the depth is unknown, the rest still reported
            log.warning("queue depths unavailable: %s", error)
            return []
        return [
            Observation(count, {"table": table.value, "chain": str(chain)})
            for table, chains in depths.items()
            for chain, count in sorted(chains.items())
        ]

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format (blocking: reads Redis for depths)."""
        return telemetry.prometheus_text(self.registry)

    def shutdown(self) -> None:
        """Stop the provider (a last OTLP export when one is configured)."""
        self.provider.shutdown()


_Reader = Callable[[dict[str, Any]], list[tuple[int, dict[str, str]]]]


def _spy_counter(key: str) -> _Reader:
    def read(stats: dict[str, Any]) -> list[tuple[int, dict[str, str]]]:
        return [(stats["spy"][key], {})] if "spy" in stats else []

    return read


def prometheus_text(stats: dict[str, Any]) -> str:
    """``stats`` (the shape of ``/v1/stats``) in the Prometheus text format, once."""
    metrics = ListenerMetrics(lambda: stats)
    try:
        return metrics.exposition().decode()
    finally:
        metrics.shutdown()
