"""Starting the operator: ``chainloom operator run`` and the chart's container both land here.

kopf runs the handlers of :mod:`chainloom_operator._handlers` (imported for their
registration) in this process's event loop; :func:`run` blocks until SIGINT or SIGTERM, and
:func:`start_in_thread` runs the same operator in a background thread for tests. Both hand the
handlers an :class:`~chainloom_operator.metrics.OperatorMetrics` (:func:`start_metrics`: its
``/metrics`` server when ``metrics`` is set, OTLP export when ``OTEL_*`` asks for it).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import threading
from dataclasses import dataclass

import aiohttp
import kopf

from chainloom import telemetry
from chainloom_operator import _handlers
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import ApiUnavailableError
from chainloom_operator.metrics import OperatorMetrics

__all__ = ["OutageInOneLine", "RunningOperator", "run", "start_in_thread", "start_metrics"]
assert _handlers.FINALIZER  # imported for its handlers' registration


def start_metrics(
    settings: OperatorSettings, observed: telemetry.Telemetry | None = None
) -> OperatorMetrics:
    """The operator's metrics (exported over OTLP through ``observed``), served on
    ``settings.metrics`` when set; raises OSError when that address cannot be bound."""
    metrics = OperatorMetrics(readers=observed.otlp_metric_readers() if observed else ())
    if settings.metrics is not None:
        try:
            metrics.serve(settings.metrics)
        except BaseException:
            metrics.shutdown()
            raise
    return metrics


class OutageInOneLine(logging.Filter):
    """Keeps an unreachable API server to one log line per event, without tracebacks.

    kopf logs the observer that gave up with the client's traceback, and a discovery task it
    leaves behind ends as asyncio's "Task exception was never retrieved"; :func:`run` already
    reports the outage in one line (exit 4). Connection errors lose their traceback and the
    orphaned task's report is dropped; any other exception (a handler's bug) keeps its own.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, aiohttp.ClientConnectionError):
            return True
        if record.name == "asyncio":
            return False
        record.exc_info = None
        record.exc_text = None
        return True


def _options(settings: OperatorSettings, metrics: OperatorMetrics) -> dict[str, object]:
    return {
        "clusterwide": not settings.namespaces,
        "namespaces": list(settings.namespaces),
        "standalone": settings.peering is None,
        "peering_name": settings.peering,
        "priority": (
            settings.priority if settings.priority is not None else random.randint(1, 2**30)  # noqa: S311 (a tie-breaker, not a secret)
        ),
        "liveness_endpoint": settings.liveness,
        "memo": kopf.Memo(settings=settings, metrics=metrics),
    }


def run(
    settings: OperatorSettings,
    kubeconfig: str | None = None,
    metrics: OperatorMetrics | None = None,
) -> None:
    """Run the operator until interrupted (against ``kubeconfig``, else the current one);
    ``metrics`` (:func:`start_metrics`) is shut down at the end. Raises ApiUnavailableError
    when kopf gives up reaching the API server."""
    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig  # kopf's login and our client both read it
    metrics = metrics if metrics is not None else OperatorMetrics()
    # Everything imported so far (kopf, aiohttp, lightkube, pydantic's schemas:
    # about a million objects) lives as long as the process. Frozen, the collector's full
    # passes no longer count them, so they run as often as the operator's own garbage needs
    # and reference cycles left by finished reconciles are freed before they pile up.
    gc.freeze()
    outage_filter = OutageInOneLine()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(outage_filter)
    try:
        kopf.run(**_options(settings, metrics))  # type: ignore[arg-type]
    except aiohttp.ClientConnectionError as error:  # kopf's own client, after its retries
        raise ApiUnavailableError(f"the Kubernetes API server is unreachable: {error}") from None
    finally:
        metrics.shutdown()


@dataclass
class RunningOperator:
    """An operator running in a background thread."""

    thread: threading.Thread
    """The thread running kopf's event loop."""
    stop_flag: threading.Event
    """Set it to stop the operator."""
    ready_flag: threading.Event
    """Set by kopf once the operator watches."""
    metrics: OperatorMetrics
    """Its metrics (and ``/metrics`` server, when ``metrics`` is set)."""

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_flag.set()
        self.thread.join(timeout)
        self.metrics.shutdown()


def start_in_thread(settings: OperatorSettings, ready_timeout: float = 60.0) -> RunningOperator:
    """Start the operator in a thread (for tests); returns once it is ready."""
    stop_flag, ready_flag = threading.Event(), threading.Event()
    metrics = start_metrics(settings)

    def main() -> None:
        asyncio.run(kopf.operator(stop_flag=stop_flag, ready_flag=ready_flag,
                                  **_options(settings, metrics)))  # type: ignore[arg-type]  # fmt: skip

    thread = threading.Thread(target=main, name="chainloom-operator", daemon=True)
    thread.start()
    ready_flag.wait(ready_timeout)
    return RunningOperator(thread, stop_flag, ready_flag, metrics)
