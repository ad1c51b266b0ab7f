"""The kopf handlers: they orchestrate, nothing else.

Each reconcile is the same four steps: validate the spec with its model, render the children
(:mod:`chainloom_operator._render`), server-side apply them and delete the ones the rendering
no longer has (:mod:`chainloom_operator._kube`), and patch the status computed from what the
cluster reports. It is level-based and idempotent, so the same function serves create, update,
resume (operator restart) and the repair of a child someone deleted.

Failures a user can act on (a missing Secret, sink or CRD, an unreachable database) become a
Warning event on the resource and its ``Degraded`` condition, then a retry after a growing,
jittered wait, at most ``retries`` times; a spec the models refuse is not retried (only a new
spec can fix it).

Children are watched (``on.event`` filtered by the owner labels): a Deployment or
SparkApplication changing refreshes its owner's status, a child deleted by hand is recreated.
BackendTables are checked again every ``recheck_interval`` seconds by one background thread,
not a kopf timer: a timer would hold a finalizer on every table, and the finalizer belongs to
``deletion_policy: Delete`` only.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import kopf
from pydantic import ValidationError

from chainloom.settings.loader import describe_validation_error
from chainloom_operator import _queues
from chainloom_operator._kube import Cluster, api_client
from chainloom_operator._render.common import (
    OWNER_KIND_LABEL,
    OWNER_NAME_LABEL,
    Owner,
    stale_children,
)
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator._render.relayer import render_relayer_pool, secret_references
from chainloom_operator._render.status import (
    Failure,
    driver_pod_name,
    driver_summary,
    last_run_name,
    pipeline_status,
    relayer_pool_status,
    summary_patch,
    table_status,
)
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import MissingSinkError, OperatorError, SpecError
from chainloom_operator.metrics import OperatorMetrics
from chainloom_operator.models import (
    GROUP,
    VERSION,
    BackendTableSpec,
    IngestPipelineSpec,
    RelayerPoolSpec,
    Spec,
)

log = logging.getLogger("chainloom.operator")

PLURALS = {"IngestPipeline": "ingestpipelines", "RelayerPool": "relayerpools",
           "BackendTable": "backendtables"}  # fmt: skip
"""Kind -> plural of the custom resources."""
FINALIZER = "chainloom.io/finalizer"
"""The finalizer of a BackendTable with ``deletion_policy: Delete``."""
POOL_KINDS = (("v1", "ConfigMap"), ("v1", "Service"), ("apps/v1", "Deployment"),
              ("networking.k8s.io/v1", "NetworkPolicy"))  # fmt: skip
SPARK_KINDS = (("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
               ("sparkoperator.k8s.io/v1beta2", "ScheduledSparkApplication"))  # fmt: skip
PIPELINE_KINDS = (("v1", "ConfigMap"), ("apps/v1", "Deployment"), *SPARK_KINDS)
CHILD_LABELS = {OWNER_KIND_LABEL: kopf.PRESENT, OWNER_NAME_LABEL: kopf.PRESENT}
"""The label filter of the children's watches."""
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
S = TypeVar("S", bound=Spec)
_random = random.Random()  # noqa: S311 (jitter, not secrets)


# --------------------------------------------------------------------------------------------
# Operator start and stop


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """kopf's settings, the API client, and the BackendTable recheck thread."""
    ours: OperatorSettings = memo.get("settings") or OperatorSettings()
    memo["settings"] = ours
    if memo.get("metrics") is None:
        memo["metrics"] = OperatorMetrics()
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.networking.request_timeout = ours.request_timeout
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.posting.level = logging.WARNING  # only warnings become Kubernetes events
    settings.execution.max_workers = HANDLER_THREADS
    settings.queueing.worker_limit = OBJECTS_AT_ONCE
    settings.queueing.idle_timeout = WORKER_IDLE
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
    """Stop the recheck thread."""
    stop = memo.get("recheck_stop")
    if stop is not None:
        stop.set()


@kopf.on.probe(id="resources")
def probe(memo: kopf.Memo, **_: Any) -> str:
    """Liveness payload: the operator's loop answers (kopf serves it on ``liveness``)."""
    return "ok"


# --------------------------------------------------------------------------------------------
# Shared steps


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner(kind: str, body: Mapping[str, Any]) -> Owner:
    meta = body["metadata"]
    return Owner(kind, meta["name"], meta["namespace"], meta["uid"], meta.get("generation", 0))


def _spec(model: type[S], raw: Mapping[str, Any]) -> S:
    try:
        return model.model_validate(dict(raw))
    except ValidationError as error:
        raise SpecError(describe_validation_error(error, "spec")) from None


def _previous(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    conditions: list[dict[str, Any]] = (body.get("status") or {}).get("conditions") or []
    return conditions


Reconcile = Callable[[Cluster, Mapping[str, Any], Failure | None, OperatorSettings], None]
"""A kind's reconcile: render and apply its children (with the operator's settings: the OTLP
endpoint the pods get), then patch its status."""


class Bookkeeping:
    """Per-resource locks and last failures, shared by the handler threads of one operator.

    A reconcile and a status refresh triggered by a child's event must not interleave (the
    refresh could patch a stale Degraded over a fresh Ready), so both hold the resource's
    lock; the failure of the last reconcile is kept here, not read back from the status.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self.failures: dict[tuple[str, str, str], Failure] = {}

    def lock(self, key: tuple[str, str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def _key(kind: str, body: Mapping[str, Any]) -> tuple[str, str, str]:
    return kind, body["metadata"]["namespace"], body["metadata"]["name"]


def _apply_all(cluster: Cluster, owner: Owner, rendered: list[dict[str, Any]],
               kinds: tuple[tuple[str, str], ...]) -> None:  # fmt: skip
    for manifest in rendered:
        cluster.apply(manifest)
    for stale in stale_children(rendered, cluster.children(owner, kinds)):
        log.info("deleting %s/%s no longer rendered", stale["kind"], stale["metadata"]["name"])
        cluster.delete(stale)


def _give_up_or_retry(
    body: kopf.Body, error: OperatorError, retry: int, settings: OperatorSettings
) -> None:
    """Tell the user (event), then stop (bad spec, or ``retries`` attempts made) or retry later."""
    kopf.warn(body, reason=error.reason, message=str(error))
    if isinstance(error, SpecError):
        raise kopf.PermanentError(str(error)) from None
    if retry + 1 >= settings.retries:
        raise kopf.PermanentError(f"gave up after {retry + 1} attempts: {error}") from None
    delay = settings.backoff.schedule().delay(retry, _random)
    raise kopf.TemporaryError(str(error), delay=delay) from None


def _reconciling(
    kind: str, body: kopf.Body, memo: kopf.Memo, retry: int,
    reconcile: Reconcile,
) -> None:  # fmt: skip
    """Run ``reconcile``; on an OperatorError record it in status, then retry or give up."""
    cluster: Cluster = memo["cluster"]
    books: Bookkeeping = memo["books"]
    metrics: OperatorMetrics = memo["metrics"]
    key = _key(kind, body)
    started = time.monotonic()
    with books.lock(key):
        try:
            reconcile(cluster, body, None, memo["settings"])
        except OperatorError as error:
            settings: OperatorSettings = memo["settings"]
            outcome = (
                "invalid"
                if isinstance(error, SpecError)
                else ("gave_up" if retry + 1 >= settings.retries else "retry")
            )
            metrics.reconciled(kind, outcome, time.monotonic() - started, error.reason)
            log.warning("%s %s/%s: %s", kind, key[1], key[2], error)
            failure = books.failures[key] = Failure(error.reason, str(error))
            # With a spec the models refuse not even the status can be computed: the event
            # says it.
            with contextlib.suppress(OperatorError):
                STATUS_REFRESH[kind](cluster, body, failure)
            failed = error
        else:
            books.failures.pop(key, None)
            metrics.reconciled(kind, "ok", time.monotonic() - started, None)
            return
    _give_up_or_retry(body, failed, retry, memo["settings"])


# --------------------------------------------------------------------------------------------
# RelayerPool


def reconcile_pool(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                   settings: OperatorSettings) -> None:  # fmt: skip
    owner = _owner("RelayerPool", body)
    spec = _spec(RelayerPoolSpec, body["spec"])
    cluster.check_secrets(owner.namespace, secret_references(spec))
    rendered = render_relayer_pool(owner, spec, otlp_endpoint=settings.otlp_endpoint)
    _apply_all(cluster, owner, rendered, POOL_KINDS)
    refresh_pool_status(cluster, body, failure)


def refresh_pool_status(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None) -> None:
    owner = _owner("RelayerPool", body)
    spec = _spec(RelayerPoolSpec, body["spec"])
    deployments = cluster.children(owner, (("apps/v1", "Deployment"),))
    status = relayer_pool_status(spec, deployments, generation=owner.generation,
                                 previous=_previous(body), now=_now(), failure=failure)  # fmt: skip
    cluster.patch_status(PLURALS["RelayerPool"], owner.namespace, owner.name,
                         status.model_dump(mode="json", by_alias=True))  # fmt: skip


@kopf.on.resume(GROUP, VERSION, "relayerpools")
@kopf.on.create(GROUP, VERSION, "relayerpools")
@kopf.on.update(GROUP, VERSION, "relayerpools")
def relayer_pool(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Render and apply the pool's children; patch its status."""
    _reconciling("RelayerPool", body, memo, retry, reconcile_pool)


# --------------------------------------------------------------------------------------------
# IngestPipeline


def _sink(cluster: Cluster, owner: Owner, name: str) -> BackendTableSpec:
    found = cluster.get_custom(PLURALS["BackendTable"], owner.namespace, name)
    if found is None:
        raise MissingSinkError(owner.namespace, name)
    return _spec(BackendTableSpec, found["spec"])


def reconcile_pipeline(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                       settings: OperatorSettings) -> None:  # fmt: skip
    owner = _owner("IngestPipeline", body)
    spec = _spec(IngestPipelineSpec, body["spec"])
    rendered = render_pipeline(owner, spec, _sink(cluster, owner, spec.sink),
                               otlp_endpoint=settings.otlp_endpoint)  # fmt: skip
    _apply_all(cluster, owner, rendered, PIPELINE_KINDS)
    refresh_pipeline_status(cluster, body, failure)


def refresh_pipeline_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> None:
    owner = _owner("IngestPipeline", body)
    spec = _spec(IngestPipelineSpec, body["spec"])
    if spec.mode == "streaming":
        kinds: tuple[tuple[str, str], ...] = (("apps/v1", "Deployment"),)
    else:
        kinds = (SPARK_KINDS[1],) if spec.schedule is not None else (SPARK_KINDS[0],)
    children = cluster.children(owner, kinds)
    child = children[0] if children else None
    # A finished run's counts: its driver pod's termination message (kept once the pod is gone);
    # a schedule's from its last run, the SparkApplication the spark-operator names in its status.
    application = child
    if spec.mode == "batch" and spec.schedule is not None:
        run = last_run_name(child)
        application = cluster.get(*SPARK_KINDS[0], owner.namespace, run) if run else None
    driver = driver_pod_name(application) if spec.mode == "batch" else ""
    summary = driver_summary(cluster.get_pod(owner.namespace, driver)) if driver else {}
    previous_summary = (body.get("status") or {}).get("summary") or {}
    status = pipeline_status(spec, child,
                             generation=owner.generation, previous=_previous(body), now=_now(),
                             namespace=owner.namespace, failure=failure,
                             summary=summary or previous_summary)  # fmt: skip
    patch = status.model_dump(mode="json", by_alias=True)
    patch["summary"] = summary_patch(previous_summary, status.summary)
    cluster.patch_status(PLURALS["IngestPipeline"], owner.namespace, owner.name, patch)


@kopf.on.resume(GROUP, VERSION, "ingestpipelines")
@kopf.on.create(GROUP, VERSION, "ingestpipelines")
@kopf.on.update(GROUP, VERSION, "ingestpipelines")
def ingest_pipeline(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Render and apply the SparkApplication or indexer; patch the status."""
    _reconciling("IngestPipeline", body, memo, retry, reconcile_pipeline)


# --------------------------------------------------------------------------------------------
# BackendTable


def reconcile_table(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                    settings: OperatorSettings) -> None:  # fmt: skip
    del settings  # nothing rendered: the backend's tables only
    from chainloom_operator import _backends  # noqa: PLC0415 (its clients cost ~40 MB: loaded with the first table)

    owner = _owner("BackendTable", body)
    spec = _spec(BackendTableSpec, body["spec"])
    outcome = _backends.ensure(spec)
    # Tables the operator has created over the resource's life (a later check creates none);
    # read afresh, as the recheck thread may have written the status since ``body`` was read.
    current = cluster.get_custom(PLURALS["BackendTable"], owner.namespace, owner.name) or body
    before = (current.get("status") or {}).get("created") or []
    created = [t for t in dict.fromkeys([*before, *outcome.created]) if t in outcome.tables]
    status = table_status(outcome.tables, created, outcome.drift,
                          generation=owner.generation, previous=_previous(body), now=_now(),
                          failure=failure)  # fmt: skip
    cluster.patch_status(PLURALS["BackendTable"], owner.namespace, owner.name,
                         status.model_dump(mode="json", by_alias=True))  # fmt: skip


def refresh_table_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> None:
    """Record ``failure`` on a table (its schema is not read again here)."""
    owner = _owner("BackendTable", body)
    status = body.get("status") or {}
    found = table_status(status.get("tables", ()), status.get("created", ()), (),
                         generation=owner.generation, previous=_previous(body), now=_now(),
                         failure=failure)  # fmt: skip
    patch = found.model_dump(
        mode="json", by_alias=True, include={"conditions", "observed_generation"}
    )
    cluster.patch_status(PLURALS["BackendTable"], owner.namespace, owner.name, patch)


@kopf.on.resume(GROUP, VERSION, "backendtables")
@kopf.on.create(GROUP, VERSION, "backendtables")
@kopf.on.update(GROUP, VERSION, "backendtables")
def backend_table(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Create the missing tables; report drift in status."""
    _reconciling("BackendTable", body, memo, retry, reconcile_table)


@kopf.on.delete(GROUP, VERSION, "backendtables", field="spec.deletion_policy", value="Delete")
def drop_backend_table(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """deletion_policy Delete: drop the tables, then kopf removes the finalizer."""
    from chainloom_operator import _backends  # noqa: PLC0415 (see reconcile_table)

    try:
        _backends.drop(_spec(BackendTableSpec, body["spec"]))
    except OperatorError as error:
        _give_up_or_retry(body, error, retry, memo["settings"])


def _recheck(cluster: Cluster, settings: OperatorSettings, stop: threading.Event,
             books: Bookkeeping) -> None:  # fmt: skip
    """Every ``recheck_interval`` seconds: each BackendTable's schema, each pool's queues."""
    while not stop.wait(settings.recheck_interval):
        _recheck_tables(cluster, settings, stop, books)
        _recheck_queues(cluster, settings, stop)


def _listed(cluster: Cluster, kind: str, namespaces: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The resources of ``kind``, a page at a time; an error listing them ends the pass with
    a warning (the API may be away: the next round tries again)."""
    pages = cluster.list_custom(PLURALS[kind], namespaces)
    while True:
        try:
            body = next(pages)
        except StopIteration:
            return
        except Exception as error:
            log.warning("cannot list %ss: %s", kind, error)
            return
        yield body


def _recheck_queues(cluster: Cluster, settings: OperatorSettings, stop: threading.Event) -> None:
    """Patch each RelayerPool's ``queueDepths`` (pools whose Redis can be read)."""
    for body in _listed(cluster, "RelayerPool", settings.namespaces):
        if stop.is_set():
            return
        try:
            depths = _queues.queue_depths(_spec(RelayerPoolSpec, body["spec"]))
        except SpecError:
            continue
        if depths is not None:
            cluster.patch_status(PLURALS["RelayerPool"], body["metadata"]["namespace"],
                                 body["metadata"]["name"], {"queueDepths": depths})  # fmt: skip


def _recheck_tables(cluster: Cluster, settings: OperatorSettings, stop: threading.Event,
                    books: Bookkeeping) -> None:  # fmt: skip
    """Check each BackendTable's schema (in the watched namespaces) and patch its status."""
    for body in _listed(cluster, "BackendTable", settings.namespaces):
        if body["metadata"].get("deletionTimestamp") or stop.is_set():
            continue
        key = _key("BackendTable", body)
        with books.lock(key):
            fresh = cluster.get_custom(PLURALS["BackendTable"], key[1], key[2])  # after the lock
            if fresh is None or fresh["metadata"].get("deletionTimestamp"):
                continue
            try:
                reconcile_table(cluster, fresh, None, settings)
            except OperatorError as error:
                log.warning("BackendTable %s/%s: %s", key[1], key[2], error)
                refresh_table_status(cluster, fresh, Failure(error.reason, str(error)))
            except Exception:
                log.exception("BackendTable recheck failed")


# --------------------------------------------------------------------------------------------
# Children


STATUS_REFRESH: dict[str, Callable[[Cluster, Mapping[str, Any], Failure | None], None]] = {
    "RelayerPool": refresh_pool_status,
    "IngestPipeline": refresh_pipeline_status,
    "BackendTable": refresh_table_status,
}
STATUS_SOURCES = ("Deployment", "SparkApplication", "ScheduledSparkApplication")
"""Children whose changes can change their owner's status."""
RECONCILE: dict[str, Reconcile] = {
    "RelayerPool": reconcile_pool,
    "IngestPipeline": reconcile_pipeline,
}


@kopf.on.event("apps", "v1", "deployments", labels=CHILD_LABELS)
@kopf.on.event("v1", "configmaps", labels=CHILD_LABELS)
@kopf.on.event("v1", "services", labels=CHILD_LABELS)
@kopf.on.event("networking.k8s.io", "v1", "networkpolicies", labels=CHILD_LABELS)
@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "sparkapplications", labels=CHILD_LABELS)
@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "scheduledsparkapplications",
               labels=CHILD_LABELS)  # fmt: skip
def child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A child changed: refresh its owner's status; a child deleted: reconcile the owner."""
    labels = body["metadata"].get("labels", {})
    kind, name = labels.get(OWNER_KIND_LABEL), labels.get(OWNER_NAME_LABEL)
    if kind not in RECONCILE:
        return
    if type != "DELETED" and body.get("kind") not in STATUS_SOURCES:
        return
    cluster: Cluster = memo["cluster"]
    books: Bookkeeping = memo["books"]
    key = (kind, body["metadata"]["namespace"], name)
    with books.lock(key):
        owner = cluster.get_custom(PLURALS[kind], key[1], name)
        if owner is None or owner["metadata"].get("deletionTimestamp"):
            return
        references = body["metadata"].get("ownerReferences") or []
        if not any(r.get("uid") == owner["metadata"]["uid"] for r in references):
            return  # a child of an earlier incarnation of the owner: the GC takes it
        try:
            if type == "DELETED":
                log.info("%s %s deleted: reconciling %s %s", body.get("kind"),
                         body["metadata"]["name"], kind, name)  # fmt: skip
                RECONCILE[kind](cluster, owner, books.failures.get(key), memo["settings"])
            else:
                STATUS_REFRESH[kind](cluster, owner, books.failures.get(key))
        except OperatorError as error:
            log.warning("%s %s: %s", kind, name, error)
