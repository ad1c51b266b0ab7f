"""Starting the operator: ``chainloom operator run`` and the chart's container both land here.

kopf runs the handlers of :mod:`chainloom_operator._handlers` (imported for their
registration) in this process's event loop; :func:`run` blocks until SIGINT or SIGTERM, and
:func:`start_in_thread` runs the same operator in a background thread for tests.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from dataclasses import dataclass

import kopf

from chainloom_operator import _handlers
from chainloom_operator.config import OperatorSettings

__all__ = ["RunningOperator", "run", "start_in_thread"]
assert _handlers.FINALIZER  # imported for its handlers' registration


def _options(settings: OperatorSettings) -> dict[str, object]:
    return {
        "clusterwide": not settings.namespaces,
        "namespaces": list(settings.namespaces),
        "standalone": settings.peering is None,
        "peering_name": settings.peering,
        "priority": (
            settings.priority if settings.priority is not None else random.randint(1, 2**30)  # noqa: S311 (a tie-breaker, not a secret)
        ),
        "liveness_endpoint": settings.liveness,
        "memo": kopf.Memo(settings=settings),
    }


def run(settings: OperatorSettings, kubeconfig: str | None = None) -> None:
    """Run the operator until interrupted (against ``kubeconfig``, else the current one)."""
    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig  # kopf's login and our client both read it
    kopf.run(**_options(settings))  # type: ignore[arg-type]


@dataclass
class RunningOperator:
    """An operator running in a background thread."""

    thread: threading.Thread
    """The thread running kopf's event loop."""
    stop_flag: threading.Event
    """Set it to stop the operator."""
    ready_flag: threading.Event
    """Set by kopf once the operator watches."""

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_flag.set()
        self.thread.join(timeout)


def start_in_thread(settings: OperatorSettings, ready_timeout: float = 60.0) -> RunningOperator:
    """Start the operator in a thread (for tests); returns once it is ready."""
    stop_flag, ready_flag = threading.Event(), threading.Event()

    def main() -> None:
        asyncio.run(kopf.operator(stop_flag=stop_flag, ready_flag=ready_flag,
                                  **_options(settings)))  # type: ignore[arg-type]  # fmt: skip

    thread = threading.Thread(target=main, name="chainloom-operator", daemon=True)
    thread.start()
    ready_flag.wait(ready_timeout)
    return RunningOperator(thread, stop_flag, ready_flag)
