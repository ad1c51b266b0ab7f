"""The IngestPipeline's handlers: render and apply its SparkApplication (a
ScheduledSparkApplication with a schedule) or its indexer; its status from what they report.

Its children are watched (``on.event`` filtered by the owner labels): a Deployment or a Spark
application changing refreshes the pipeline's status, a child deleted by hand is recreated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from chainloom_operator._handlers.shared import (
    PLURALS,
    apply_all,
    child_labels,
    now,
    on_child_event,
    owner_of,
    previous_conditions,
    reconciling,
    spec_of,
)
from chainloom_operator._kube import Cluster
from chainloom_operator._render.common import Owner
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator._render.status import (
    Failure,
    driver_pod_name,
    driver_summary,
    last_run_name,
    pipeline_status,
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


def _sink(cluster: Cluster, owner: Owner, name: str) -> BackendTableSpec:
    found = cluster.get_custom(PLURALS["BackendTable"], owner.namespace, name)
    if found is None:
        raise MissingSinkError(owner.namespace, name)
    return spec_of(BackendTableSpec, found["spec"])


def reconcile_pipeline(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                       settings: OperatorSettings) -> None:  # fmt: skip
    owner = owner_of(KIND, body)
    spec = spec_of(IngestPipelineSpec, body["spec"])
    rendered = render_pipeline(owner, spec, _sink(cluster, owner, spec.sink),
                               otlp_endpoint=settings.otlp_endpoint)  # fmt: skip
    apply_all(cluster, owner, rendered, PIPELINE_KINDS)
    refresh_pipeline_status(cluster, body, failure)


def refresh_pipeline_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> None:
    owner = owner_of(KIND, body)
    spec = spec_of(IngestPipelineSpec, body["spec"])
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
                             generation=owner.generation, previous=previous_conditions(body),
                             now=now(), namespace=owner.namespace, failure=failure,
                             summary=summary or previous_summary)  # fmt: skip
    patch = status.model_dump(mode="json", by_alias=True)
    patch["summary"] = summary_patch(previous_summary, status.summary)
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name, patch)


@kopf.on.resume(GROUP, VERSION, "ingestpipelines")
@kopf.on.create(GROUP, VERSION, "ingestpipelines")
@kopf.on.update(GROUP, VERSION, "ingestpipelines")
def ingest_pipeline(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Render and apply the SparkApplication or indexer; patch the status."""
    reconciling(KIND, body, memo, retry,
                reconcile=reconcile_pipeline, refresh=refresh_pipeline_status)  # fmt: skip


@kopf.on.event("apps", "v1", "deployments", labels=CHILD_LABELS)
@kopf.on.event("v1", "configmaps", labels=CHILD_LABELS)
@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "sparkapplications", labels=CHILD_LABELS)
@kopf.on.event("sparkoperator.k8s.io", "v1beta2", "scheduledsparkapplications",
               labels=CHILD_LABELS)  # fmt: skip
def pipeline_child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A pipeline's child changed: refresh the pipeline's status; a child deleted: reconcile it."""
    on_child_event(KIND, type, body, memo, status_sources=STATUS_SOURCES,
                   reconcile=reconcile_pipeline, refresh=refresh_pipeline_status)  # fmt: skip
