"""An IngestPipeline as manifests: a SparkApplication (a ScheduledSparkApplication when it has
a schedule) through :func:`chainloom_spark.manifest.render_application`, the same renderer as
``chainloom spark manifest``, or the streaming indexer's Deployment and ConfigMap.

The sink is a BackendTable in the same namespace; its spec gives the job its Bigtable tables
or Cassandra keyspace, so a pipeline never repeats where its data goes. The rendered job
arguments are parsed by the job's own flag parser before anything is applied, so a bad
``arguments`` entry is refused here rather than failing in the driver pod.

The streaming indexer's command (``chainloom indexer run --config FILE``) lands with the
indexer issue; until then the Deployment is rendered and applied but its pods cannot start.
"""

from __future__ import annotations

from typing import Any

import yaml

from chainloom_operator._render.common import (
    CONFIG_HASH_ANNOTATION,
    Owner,
    container_security,
    content_hash,
    labels,
    metadata,
    pod_security,
    resources,
)
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, BatchSpec, IngestPipelineSpec
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.jobs import check_arguments
from chainloom_spark.manifest import API_VERSION as SPARK_API_VERSION
from chainloom_spark.manifest import render_application
from chainloom_spark.settings import SparkJobSettings

SCHEDULED_KIND = "ScheduledSparkApplication"
"""The spark-operator's kind for cron runs."""
INDEXER = "indexer"
INDEXER_CONFIG_FILE = "/etc/chainloom/indexer.yaml"
"""The indexer's settings file inside its pods."""
SINK_BACKEND = {"vaa-ingest": "bigtable", "ledger-load": "cassandra", "streaming": "bigtable"}
"""The backend each job (and the indexer) writes to."""


def _check_sink(what: str, sink: BackendTableSpec) -> None:
    if sink.backend != SINK_BACKEND[what]:
        raise SpecError(
            f"{what} writes to a {SINK_BACKEND[what]} BackendTable, but the sink is {sink.backend}"
        )


def job_arguments(batch: BatchSpec, sink: BackendTableSpec) -> list[str]:
    """The job's flags: input and sink location rendered, then ``batch.arguments``."""
    _check_sink(batch.job, sink)
    if batch.job == "vaa-ingest":
        assert sink.bigtable is not None
        rendered = ["--input", batch.input, "--table", sink.bigtable.table,
                    "--index-table", sink.bigtable.index_table,
                    "--guardian-set", batch.guardian_sets.source]  # fmt: skip
    else:
        assert sink.cassandra is not None
        cassandra = sink.cassandra
        hosts = ",".join(f"{host}:{cassandra.port}" for host in cassandra.hosts)
        rendered = ["--input", batch.input, "--backend", "cassandra", "--cassandra-hosts", hosts,
                    "--keyspace", cassandra.keyspace,
                    "--replication-factor", str(cassandra.replication_factor)]  # fmt: skip
    arguments = [*rendered, *batch.arguments]
    try:
        check_arguments(batch.job, arguments)
    except JobArgumentError as error:
        raise SpecError(f"batch.arguments: {error}") from None
    return arguments


def job_settings(owner: Owner, batch: BatchSpec, sink: BackendTableSpec) -> SparkJobSettings:
    """The Spark jobs' settings model for this pipeline (what ``spark manifest`` renders)."""
    kubernetes = {**batch.resources.model_dump(), "namespace": owner.namespace}
    values: dict[str, Any] = {
        "spark": batch.spark.model_dump(),
        "writer": batch.writer.model_dump(),
        "guardian_sets": batch.guardian_sets.model_dump(),
        "kubernetes": kubernetes,
    }
    if sink.bigtable is not None:
        values["bigtable"] = sink.bigtable.model_dump()
    if sink.cassandra is not None:
        values["database"] = {"type": "cassandra", "cassandra": sink.cassandra.model_dump()}
    return SparkJobSettings.model_validate(values)


def spark_application(owner: Owner, batch: BatchSpec, sink: BackendTableSpec) -> dict[str, Any]:
    """The SparkApplication of one run, owned by the pipeline."""
    settings = job_settings(owner, batch, sink)
    application = render_application(
        batch.job, job_arguments(batch, sink), settings, name=owner.name
    )
    job_labels = labels(owner, "spark-job", **{"chainloom.io/job": batch.job})
    application["metadata"] = metadata(owner, owner.name, job_labels)
    return application


def scheduled_application(
    owner: Owner, spec: IngestPipelineSpec, batch: BatchSpec, sink: BackendTableSpec
) -> dict[str, Any]:
    """The ScheduledSparkApplication running the same application on ``spec.schedule``."""
    application = spark_application(owner, batch, sink)
    return {
        "apiVersion": SPARK_API_VERSION,
        "kind": SCHEDULED_KIND,
        "metadata": application["metadata"],
        "spec": {
            "schedule": spec.schedule,
            "suspend": spec.suspend,
            "concurrencyPolicy": "Forbid",
            "successfulRunHistoryLimit": 3,
            "failedRunHistoryLimit": 3,
            "template": application["spec"],
        },
    }


def indexer_children(
    owner: Owner, spec: IngestPipelineSpec, sink: BackendTableSpec
) -> list[dict[str, Any]]:
    """The indexer's ConfigMap and Deployment (``chainloom indexer run``)."""
    streaming = spec.streaming
    assert streaming is not None
    _check_sink("streaming", sink)
    assert sink.bigtable is not None
    settings = {
        "spy_address": streaming.spy_address,
        "filters": [f.model_dump() for f in streaming.filters],
        "bigtable": sink.bigtable.model_dump(),
        "guardian_sets": streaming.guardian_sets.model_dump(),
    }
    name = f"{owner.name}-indexer"
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(owner, name, labels(owner, "indexer-config")),
        "data": {"indexer.yaml": yaml.safe_dump(settings, sort_keys=False)},
    }
    pod_labels = labels(owner, INDEXER)
    selector = {
        k: pod_labels[k] for k in ("app.kubernetes.io/instance", "app.kubernetes.io/component")
    }
    container = {
        "name": "indexer",
        "image": streaming.image,
        "command": ["chainloom"],
        "args": ["indexer", "run", "--config", INDEXER_CONFIG_FILE],
        "volumeMounts": [{"name": "config", "mountPath": "/etc/chainloom", "readOnly": True}],
        "securityContext": container_security(),
        "resources": resources(streaming.resources.cpu, streaming.resources.memory),
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(owner, name, pod_labels),
        "spec": {
            "replicas": 0 if spec.suspend else streaming.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": dict(pod_labels),
                    "annotations": {CONFIG_HASH_ANNOTATION: content_hash(config["data"])},
                },
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": pod_security(),
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": name}}],
                },
            },
        },
    }
    return [config, deployment]


def render_pipeline(
    owner: Owner, spec: IngestPipelineSpec, sink: BackendTableSpec
) -> list[dict[str, Any]]:
    """Every child of the pipeline."""
    if spec.mode == "streaming":
        return indexer_children(owner, spec, sink)
    assert spec.batch is not None
    if spec.schedule is not None:
        return [scheduled_application(owner, spec, spec.batch, sink)]
    return [spark_application(owner, spec.batch, sink)]
