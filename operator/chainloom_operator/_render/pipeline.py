"""An IngestPipeline as manifests: a SparkApplication (a ScheduledSparkApplication when it has
a schedule) through :func:`chainloom_spark.manifest.render_application`, the same renderer as
``chainloom spark manifest``, or the streaming indexer's Deployment and ConfigMap.

The sink is a BackendTable in the same namespace; its spec gives the job its Bigtable tables
or Cassandra keyspace, so a pipeline never repeats where its data goes. The rendered job
arguments are parsed by the job's own flag parser before anything is applied, so a bad
``arguments`` entry is refused here rather than failing in the driver pod.

With the operator's ``otlp_endpoint`` the rendered pods export their telemetry there: the
indexer's container and the Spark driver and executors get the standard ``OTEL_*`` variables
(:func:`~chainloom_operator._render.common.telemetry_environment`); the pipeline's own ``env``
wins over them. Only the driver records spans (its stages: :mod:`chainloom_spark.runner`); the
executors' Python workers never call ``telemetry.setup``, so the variables cost them nothing.

The streaming indexer runs ``chainloom indexer run --config FILE`` with an
:class:`~chainloom.indexer.config.IndexerSettings` built from the spec and the sink and dumped
by the model into its ConfigMap, as the relayer's pods get theirs. The sink's Google
credentials (``spec.google``: a ServiceAccount, or a key from a Secret) reach the indexer's and
the Spark job's pods through :mod:`chainloom_operator._render.google`; its feed
(``spec.feed``) becomes the indexer's ``feed_redis`` (:mod:`chainloom_operator._render.feed`).
"""

from __future__ import annotations

from typing import Any

import yaml

from chainloom.indexer.config import IndexerSettings
from chainloom_operator._render.common import (
    CONFIG_DIR,
    Owner,
    chainloom_container,
    config_and_pods,
    config_mount,
    http_probe,
    labels,
    metadata,
    resources,
    service_environment,
    telemetry_environment,
)
from chainloom_operator._render.feed import feed_parts, with_feed, without_secret_url
from chainloom_operator._render.google import pod_bigtable, spark_credentials, with_pod_credentials
from chainloom_operator._render.ledger_follow import follow_children
from chainloom_operator._render.spark_options import with_options
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, BatchSpec, IngestPipelineSpec, StreamingSpec
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.jobs import check_arguments
from chainloom_spark.manifest import API_VERSION as SPARK_API_VERSION
from chainloom_spark.manifest import render_application
from chainloom_spark.runner import service_name
from chainloom_spark.settings import SparkJobSettings

SCHEDULED_KIND = "ScheduledSparkApplication"
"""The spark-operator's kind for cron runs."""
INDEXER = "indexer"
INDEXER_CONFIG_FILE = f"{CONFIG_DIR}/indexer.yaml"
"""The indexer's settings file inside its pods."""
INDEXER_FEED_URL_ENV = "CHAINLOOM_FEED_REDIS__URL"
"""The variable of the feed's URL (``feed_redis.url``) when it is in a Secret."""
INDEXER_PORT = 4301
"""Port of the indexer's probes (``/healthz``, ``/readyz``, ``/metrics``)."""
SINK_BACKEND = {
    "vaa-ingest": "bigtable", "gap-backfill": "bigtable", "enrich": "bigtable",
    "export": "bigtable", "ledger-load": "cassandra", "streaming": "bigtable",
}  # fmt: skip
"""The backend each job (and the indexer) writes to."""


def _check_sink(what: str, sink: BackendTableSpec) -> None:
    if sink.backend != SINK_BACKEND[what]:
        raise SpecError(
            f"{what} writes to a {SINK_BACKEND[what]} BackendTable, but the sink is {sink.backend}"
        )


def job_arguments(batch: BatchSpec, sink: BackendTableSpec) -> list[str]:
    """The job's flags: input and sink location rendered, then ``batch.arguments``."""
    _check_sink(batch.job, sink)
    if sink.bigtable is not None:
        tables = ["--table", sink.bigtable.table, "--index-table", sink.bigtable.index_table]
        verified = [*tables, "--guardian-set", batch.guardian_sets.source]
        if batch.job == "vaa-ingest":
            rendered = ["--input", batch.input or "", *verified]
        elif batch.job == "gap-backfill":  # files to fill from, or --public-api in the arguments
            rendered = verified + (["--files", batch.input] if batch.input else [])
        elif batch.job == "enrich":
            rendered = [*tables, "--prices", batch.input or ""]
        else:  # export: --output among the arguments
            rendered = tables
    else:
        assert sink.cassandra is not None
        cassandra = sink.cassandra
        hosts = ",".join(f"{host}:{cassandra.port}" for host in cassandra.hosts)
        rendered = ["--input", batch.input or "", "--backend", "cassandra",
                    "--cassandra-hosts", hosts, "--keyspace", cassandra.keyspace,
                    "--replication-factor", str(cassandra.replication_factor)]  # fmt: skip
    arguments = [*rendered, *batch.arguments]
    try:
        check_arguments(batch.job, arguments)
    except JobArgumentError as error:
        raise SpecError(f"batch.arguments: {error}") from None
    return arguments


def job_settings(
    owner: Owner, batch: BatchSpec, sink: BackendTableSpec, otlp_endpoint: str | None = None
) -> SparkJobSettings:
    """The Spark jobs' settings model for this pipeline (what ``spark manifest`` renders); with
    ``otlp_endpoint`` the ``OTEL_*`` variables join the pods' environment, under
    ``resources.env`` (which wins)."""
    telemetry = {
        variable["name"]: variable["value"]
        for variable in telemetry_environment(otlp_endpoint, service_name(batch.job), owner)
    }
    kubernetes = {
        **batch.resources.model_dump(),
        "namespace": owner.namespace,
        "env": {**telemetry, **batch.resources.env},
    }
    values: dict[str, Any] = {
        "spark": batch.spark.model_dump(),
        "writer": batch.writer.model_dump(),
        "guardian_sets": batch.guardian_sets.model_dump(),
        "kubernetes": kubernetes,
    }
    if sink.bigtable is not None:
        values["bigtable"] = pod_bigtable(sink.bigtable, sink.google).model_dump()
    if sink.cassandra is not None:
        values["database"] = {"type": "cassandra", "cassandra": sink.cassandra.model_dump()}
    return SparkJobSettings.model_validate(values)


def spark_application(
    owner: Owner,
    batch: BatchSpec,
    sink: BackendTableSpec,
    sink_name: str,
    otlp_endpoint: str | None = None,
) -> dict[str, Any]:
    """The SparkApplication of one run, owned by the pipeline (``otlp_endpoint``: where its
    driver exports its spans), with the spark-operator options of ``batch``
    (:func:`~chainloom_operator._render.spark_options.with_options`) and the Google
    credentials of the sink ``sink_name``
    (:func:`~chainloom_operator._render.google.spark_credentials`)."""
    settings = job_settings(owner, batch, sink, otlp_endpoint)
    application = render_application(
        batch.job, job_arguments(batch, sink), settings, name=owner.name
    )
    job_labels = labels(owner, "spark-job", **{"chainloom.io/job": batch.job})
    application["metadata"] = metadata(owner, owner.name, job_labels)
    application["spec"] = spark_credentials(
        with_options(application["spec"], batch), sink_name, sink.google
    )
    return application


def scheduled_application(
    owner: Owner,
    spec: IngestPipelineSpec,
    batch: BatchSpec,
    sink: BackendTableSpec,
    otlp_endpoint: str | None = None,
) -> dict[str, Any]:
    """The ScheduledSparkApplication running the same application on ``spec.schedule``."""
    application = spark_application(owner, batch, sink, spec.sink, otlp_endpoint)
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


def indexer_settings(spec: StreamingSpec, sink: BackendTableSpec) -> IndexerSettings:
    """The indexer's settings model for this pipeline (probes on every interface of the pod)."""
    assert sink.bigtable is not None
    fields = spec.model_dump(exclude={"image", "replicas", "env", "resources", "placement"})
    return IndexerSettings.model_validate(
        {**fields, "bigtable": pod_bigtable(sink.bigtable, sink.google).model_dump(),
         "probes": {"enabled": True, "host": "0.0.0.0", "port": INDEXER_PORT},  # noqa: S104
         "feed_redis": feed_parts(sink.feed, INDEXER_FEED_URL_ENV).settings}
    )  # fmt: skip


def indexer_children(
    owner: Owner,
    spec: IngestPipelineSpec,
    sink: BackendTableSpec,
    otlp_endpoint: str | None = None,
) -> list[dict[str, Any]]:
    """The indexer's ConfigMap and Deployment (``chainloom indexer run --config``); with
    ``otlp_endpoint`` its pods export to it (``OTEL_*``, before ``streaming.env``, which wins)."""
    streaming = spec.streaming
    assert streaming is not None
    _check_sink("streaming", sink)
    settings = indexer_settings(streaming, sink)
    env = service_environment(
        {"CHAINLOOM_INDEXER_CONFIG": INDEXER_CONFIG_FILE},
        otlp_endpoint,
        "chainloom-indexer",
        owner,
        streaming.env,
    )
    container = chainloom_container(
        "indexer",
        streaming.image,
        ["indexer", "run", "--config", INDEXER_CONFIG_FILE],
        pull_policy=None,
        env=env,
        mounts=[config_mount()],
        limits=resources(streaming.resources.cpu, streaming.resources.memory),
        port=("probes", INDEXER_PORT),
        readiness=http_probe("/readyz", "probes"),
        liveness=http_probe("/healthz", "probes", period=20),
    )
    document = without_secret_url(settings.model_dump(mode="json"), sink.feed, "feed_redis")
    feed = feed_parts(sink.feed, INDEXER_FEED_URL_ENV)

    def finish(pod: dict[str, Any]) -> dict[str, Any]:
        return with_feed(with_pod_credentials(pod, spec.sink, sink.google), feed)

    return config_and_pods(
        owner,
        f"{owner.name}-indexer",
        INDEXER,
        {"indexer.yaml": yaml.safe_dump(document, sort_keys=False)},
        container,
        replicas=0 if spec.suspend else streaming.replicas,
        where=streaming.placement,
        grace_seconds=int(streaming.drain_timeout) + 10,
        finish_pod=finish,
    )


def render_pipeline(
    owner: Owner,
    spec: IngestPipelineSpec,
    sink: BackendTableSpec,
    *,
    otlp_endpoint: str | None = None,
) -> list[dict[str, Any]]:
    """Every child of the pipeline (``otlp_endpoint``: where the indexer's or the ledger ETL's
    pods or the Spark driver export)."""
    if spec.ledger is not None:
        return follow_children(owner, spec, sink, otlp_endpoint)
    if spec.mode == "streaming":
        return indexer_children(owner, spec, sink, otlp_endpoint)
    assert spec.batch is not None
    if spec.schedule is not None:
        return [scheduled_application(owner, spec, spec.batch, sink, otlp_endpoint)]
    return [spark_application(owner, spec.batch, sink, spec.sink, otlp_endpoint)]
