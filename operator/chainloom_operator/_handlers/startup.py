"""The operator's start and stop: kopf's settings, the API client, logins, the liveness probe,
and the recheck thread (every ``recheck_interval`` seconds: each BackendTable's schema, each
RelayerPool's queue depths, each unfinished batch IngestPipeline's status).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import kopf

from chainloom_operator._handlers.backend_table import recheck_tables
from chainloom_operator._handlers.ingest_pipeline import DRIVER_POD_SELECTOR, recheck_pipelines
from chainloom_operator._handlers.relayer_pool import recheck_queues
from chainloom_operator._handlers.shared import (
    FINALIZER,
    Bookkeeping,
    PauseAwareDiffBase,
    PauseAwareProgress,
)
from chainloom_operator._kube import Cluster, api_client
from chainloom_operator.config import OperatorSettings
from chainloom_operator.metrics import OperatorMetrics
from chainloom_operator.models import GROUP

HANDLER_THREADS = 8
"""Threads running the (synchronous) handlers: at most this many API calls at once."""
OBJECTS_AT_ONCE = 8
"""Objects of one kind whose events are handled at once (kopf's ``queueing.worker_limit``).

kopf starts a task per object with pending events; unbounded, a thousand new pools and their
children mean thousands of tasks, each holding its event bodies and API connections while it
waits for one of the :data:`HANDLER_THREADS`. Bounded, fewer tasks run at once, but kopf still
reads every watch event as it comes and queues it in memory for its object's turn, so a burst
that outpaces the handlers grows that backlog (docs/operator.md, "Scale")."""
WORKER_IDLE = 0.5
"""Seconds an object's task waits for its next event before it ends (kopf's default is 5 s:
with :data:`OBJECTS_AT_ONCE` tasks, idle ones would hold the places of busy objects)."""


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """kopf's settings, the API client, and the recheck thread."""
    ours: OperatorSettings = memo.get("settings") or OperatorSettings()
    memo["settings"] = ours
    if memo.get("metrics") is None:
        memo["metrics"] = OperatorMetrics()
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = PauseAwareProgress(prefix=GROUP)
    settings.persistence.diffbase_storage = PauseAwareDiffBase(prefix=GROUP)
    settings.networking.request_timeout = ours.request_timeout
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.posting.level = logging.WARNING  # only warnings become Kubernetes events
    settings.execution.max_workers = HANDLER_THREADS
    settings.queueing.worker_limit = OBJECTS_AT_ONCE
    settings.queueing.idle_timeout = WORKER_IDLE
    # Only the pipelines' driver pods reach the operator (filtered by the API server, not after
    # every pod of the namespaces has been sent): their labels come from the application.
    settings.watching.label_selectors["v1", "pods"] = DRIVER_POD_SELECTOR
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # else a log line per API request
    memo["cluster"] = Cluster(api_client())
    memo["books"] = Bookkeeping()
    stop = threading.Event()
    memo["recheck_stop"] = stop
    thread = threading.Thread(
        target=_recheck, args=(memo["cluster"], ours, stop, memo["books"]), name="recheck",
        daemon=True,
    )  # fmt: skip
    thread.start()


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's own logins: the service account in a pod, else the kubeconfig (``$KUBECONFIG``,
    which ``--kubeconfig`` sets): the same order as the operator's client (``_kube``).

    Registered here rather than left to kopf's defaults, which are chosen when kopf is
    imported, from what is installed and whether ``$KUBECONFIG`` is set at that moment.
    """
    info: kopf.ConnectionInfo | None = kopf.login_with_service_account(**kwargs)
    return info or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.cleanup()
def stop_background(memo: kopf.Memo, **_: Any) -> None:
    """Stop the recheck thread and the pending status wake-ups."""
    stop = memo.get("recheck_stop")
    if stop is not None:
        stop.set()
    books = memo.get("books")
    if books is not None:
        books.stop()


@kopf.on.probe(id="resources")
def probe(memo: kopf.Memo, **_: Any) -> str:
    """Liveness payload: the operator's loop answers (kopf serves it on ``liveness``)."""
    return "ok"


def _recheck(cluster: Cluster, settings: OperatorSettings, stop: threading.Event,
             books: Bookkeeping) -> None:  # fmt: skip
    """Every ``recheck_interval`` seconds: each BackendTable's schema, each pool's queues, each
    unfinished batch pipeline's status."""
    while not stop.wait(settings.recheck_interval):
        recheck_tables(cluster, settings, stop, books)
        recheck_queues(cluster, settings, stop)
        recheck_pipelines(cluster, settings, stop, books)
