"""The IngestPipeline's handlers: render and apply its SparkApplication (a
ScheduledSparkApplication with a schedule) or its indexer; its status from what they report.

Its children are watched (``on.event`` filtered by the owner labels): a Deployment or a Spark
application changing refreshes the pipeline's status, a child deleted by hand is recreated. So
are a schedule's runs and the applications' driver pods, which carry the owner labels too (the
spark-operator and Spark copy them), so the status mirrors every state the spark-operator
writes and names why a driver cannot start. A run waiting for its driver past the pipeline's
start deadline is noticed by a wake-up at that moment (:func:`~._handlers.shared.refresh_later`),
not by polling.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import kopf

from chainloom_operator._handlers.shared import (
    PLURALS,
    Bookkeeping,
    apply_all,
    child_labels,
    key_of,
    listed,
    log,
    now,
    on_child_event,
    owner_of,
    previous_conditions,
    reconciling,
    refresh_owner,
    spec_of,
)
from chainloom_operator._kube import Cluster, pod_roles
from chainloom_operator._render.common import OWNER_KIND_LABEL, OWNER_NAME_LABEL, Owner
from chainloom_operator._render.feed import feed_secret_references
from chainloom_operator._render.google import secret_references as google_secrets
from chainloom_operator._render.ledger_follow import COMPONENT as LEDGER_ETL
from chainloom_operator._render.ledger_follow import PROBES_PORT
from chainloom_operator._render.ledger_writer import pods_to_ask, takeover_event, writer_of
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator._render.spark_options import secret_references
from chainloom_operator._render.spark_status import (
    WAITING_STATES,
    application_state,
    driver_pod_of,
)
from chainloom_operator._render.status import (
    FINISHED_STATES,
    Failure,
    driver_pod_name,
    driver_summary,
    last_run_name,
    pipeline_status,
    pipeline_warnings,
    recheck_after,
    summary_patch,
)
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import MissingSinkError
from chainloom_operator.models import (
    GROUP,
    VERSION,
    BackendTableSpec,
    IngestPipelineSpec,
)

KIND = "IngestPipeline"
SPARK_KINDS = (("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
               ("sparkoperator.k8s.io/v1beta2", "ScheduledSparkApplication"))  # fmt: skip
PIPELINE_KINDS = (("v1", "ConfigMap"), ("apps/v1", "Deployment"), *SPARK_KINDS)
"""The kinds a pipeline's children are."""
STATUS_SOURCES = ("Deployment", "SparkApplication", "ScheduledSparkApplication")
"""Children whose changes can change the pipeline's status."""
CHILD_LABELS = child_labels(KIND)
DRIVER_LABELS = {**CHILD_LABELS, "spark-role": "driver"}
"""The label filter of the watch on the applications' driver pods."""
DRIVER_POD_SELECTOR = f"spark-role=driver,{OWNER_KIND_LABEL}={KIND},{OWNER_NAME_LABEL}"
"""The same, as the label selector the API server applies to the operator's watch of pods."""


def _sink(cluster: Cluster, owner: Owner, name: str) -> BackendTableSpec:
    found = cluster.get_custom(PLURALS["BackendTable"], owner.namespace, name)
    if found is None:
        raise MissingSinkError(owner.namespace, name)
    return spec_of(BackendTableSpec, found["spec"])


def reconcile_pipeline(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                       settings: OperatorSettings) -> float | None:  # fmt: skip
    owner = owner_of(KIND, body)
    spec = spec_of(IngestPipelineSpec, body["spec"])
    sink = _sink(cluster, owner, spec.sink)
    # credentials are checked before anything is rendered
    cluster.check_secrets(
        owner.namespace, google_secrets(sink.google) + feed_secret_references(sink.feed)
    )
    if spec.batch is not None:
        cluster.check_secrets(owner.namespace, secret_references(spec.batch))
    rendered = render_pipeline(owner, spec, sink, otlp_endpoint=settings.otlp_endpoint)
    apply_all(cluster, owner, rendered, PIPELINE_KINDS)
    return refresh_pipeline_status(cluster, body, failure)


def _driver_pod(cluster: Cluster, namespace: str, run: Mapping[str, Any] | None
                ) -> dict[str, Any] | None:  # fmt: skip
    """The driver pod of ``run`` when it tells something: why the run cannot start (it
    waits), or the job's counts (it has finished)."""
    state = application_state(run)
    if run is None or (state not in WAITING_STATES and state not in FINISHED_STATES):
        return None
    name = driver_pod_of(run) or f"{run['metadata']['name']}-driver"
    return cluster.get_pod(namespace, name)


def refresh_pipeline_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> float | None:
    """Mirror the child (and a schedule's last run, and its driver pod) into the status; post
    the Warning events the new conditions call for; the seconds until the start deadline
    passes, when the run waits for its driver."""
    owner = owner_of(KIND, body)
    spec = spec_of(IngestPipelineSpec, body["spec"])
    # The status as it is now (another refresh may have written it since ``body`` was read):
    # the attempts so far, the conditions the new ones are compared with.
    current = cluster.get_custom(PLURALS[KIND], owner.namespace, owner.name) or body
    before = current.get("status") or {}
    if spec.mode == "streaming":
        kinds: tuple[tuple[str, str], ...] = (("apps/v1", "Deployment"),)
    else:
        kinds = (SPARK_KINDS[1],) if spec.schedule is not None else (SPARK_KINDS[0],)
    children = cluster.children(owner, kinds)
    child = children[0] if children else None
    # The application mirrored: the child, or a schedule's last run (the SparkApplication the
    # spark-operator names in the schedule's status).
    run = child if spec.mode == "batch" else None
    if spec.mode == "batch" and spec.schedule is not None:
        name = last_run_name(child)
        run = cluster.get(*SPARK_KINDS[0], owner.namespace, name) if name else None
    pod = _driver_pod(cluster, owner.namespace, run)
    # A finished run's counts: its driver pod's termination message (kept once the pod is gone).
    summary = driver_summary(pod) if driver_pod_name(run) else {}
    previous_summary = before.get("summary") or {}
    now_ = now()
    status = pipeline_status(spec, child,
                             generation=owner.generation, previous=previous_conditions(current),
                             now=now_, namespace=owner.namespace, failure=failure,
                             summary=summary or previous_summary, last_run=run, driver_pod=pod,
                             previous_attempts=before.get("attempts") or ())  # fmt: skip
    patch = status.model_dump(mode="json", by_alias=True)
    patch["summary"] = summary_patch(previous_summary, status.summary)
    patch["executorState"] = summary_patch(before.get("executorState") or {},
                                           status.executor_state)  # fmt: skip
    takeover = None
    if spec.ledger is not None:
        selector = {**owner.selector(), "app.kubernetes.io/component": LEDGER_ETL}
        pods = pods_to_ask(cluster.pods(owner.namespace, selector))
        writer = writer_of(pod_roles(pods, PROBES_PORT))
        last = before.get("lastWriter") or ""
        takeover = takeover_event(last, writer)
        patch["writer"] = writer
        # Kept across the moments nobody writes (the fallback after a writer's death).
        patch["lastWriter"] = writer if writer and "," not in writer else last
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name, patch)
    if takeover is not None:
        _post(cluster, current, owner, *takeover, kind="Normal")
    if failure is None:
        for reason, message in pipeline_warnings(previous_conditions(current), status.conditions):
            _post(cluster, current, owner, reason, message)
    return recheck_after(spec, run, now_)


def _post(cluster: Cluster, involved: Mapping[str, Any], owner: Owner, reason: str,
          message: str, *, kind: str = "Warning") -> None:  # fmt: skip
    try:
        cluster.post_event(involved, reason, message, kind=kind)
    except Exception as error:  # the status says it too
        log.warning("%s %s/%s: cannot post an event: %s", KIND, owner.namespace,
                    owner.name, error)  # fmt: skip


@kopf.on.resume(GROUP, VERSION, "ingestpipelines")
@kopf.on.create(GROUP, VERSION, "ingestpipelines")
@kopf.on.update(GROUP, VERSION, "ingestpipelines")
def ingest_pipeline(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Render and apply the SparkApplication or indexer; patch the status."""
    reconciling(KIND, body, memo, retry,
                reconcile=reconcile_pipeline, refresh=refresh_pipeline_status)  # fmt: skip


@kopf.on.event("apps", "v1", "deployments", labels=CHILD_LABELS)
@kopf.on.event("v1", "configmaps", labels=CHILD_LABELS)
@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "scheduledsparkapplications",
               labels=CHILD_LABELS)  # fmt: skip
def pipeline_child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A pipeline's child changed: refresh the pipeline's status; a child deleted: reconcile it."""
    on_child_event(KIND, type, body, memo, status_sources=STATUS_SOURCES,
                   reconcile=reconcile_pipeline, refresh=refresh_pipeline_status)  # fmt: skip


@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "sparkapplications", labels=CHILD_LABELS)
def pipeline_application_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A SparkApplication changed: the pipeline's own (as any child), or a run of its
    schedule (the spark-operator copies the schedule's labels onto each run, and makes the
    schedule its owner): then the pipeline's status follows the run."""
    references = body["metadata"].get("ownerReferences") or []
    if not any(r.get("kind") == SPARK_KINDS[1][1] for r in references):
        on_child_event(KIND, type, body, memo, status_sources=STATUS_SOURCES,
                       reconcile=reconcile_pipeline, refresh=refresh_pipeline_status)  # fmt: skip
        return
    labels = body["metadata"].get("labels") or {}
    key = (KIND, body["metadata"]["namespace"], labels[OWNER_NAME_LABEL])
    refresh_owner(KIND, key, books=memo["books"], cluster=memo["cluster"],
                  refresh=refresh_pipeline_status)  # fmt: skip


@kopf.on.event("v1", "pods", labels=DRIVER_LABELS)
def pipeline_driver_event(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A driver pod of a pipeline's application changed (pulling its image failed, the
    scheduler found no node, it started): refresh the pipeline's status. Spark copies the
    application's labels, the owner labels among them, onto its driver pod."""
    labels = body["metadata"].get("labels") or {}
    key = (KIND, body["metadata"]["namespace"], labels[OWNER_NAME_LABEL])
    refresh_owner(KIND, key, books=memo["books"], cluster=memo["cluster"],
                  refresh=refresh_pipeline_status)  # fmt: skip


def recheck_pipelines(cluster: Cluster, settings: OperatorSettings, stop: threading.Event,
                      books: Bookkeeping) -> None:  # fmt: skip
    """Refresh the status of each batch pipeline whose run has not finished, and of each
    ledger ETL (its writer), in the watched namespaces: a watch event lost while the
    connection was down is made good here."""
    for body in listed(cluster, KIND, settings.namespaces):
        if stop.is_set():
            return
        spec, status = body.get("spec") or {}, body.get("status") or {}
        finished = not spec.get("schedule") and status.get("state") in FINISHED_STATES
        following = spec.get("ledger") is not None  # a takeover changes no child: look here
        if (
            body["metadata"].get("deletionTimestamp")
            or finished
            or (spec.get("mode") != "batch" and not following)
        ):
            continue
        try:
            refresh_owner(KIND, key_of(KIND, body), books=books, cluster=cluster,
                          refresh=refresh_pipeline_status)  # fmt: skip
        except Exception:
            log.exception("IngestPipeline recheck failed")
