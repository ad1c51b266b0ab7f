"""A streaming IngestPipeline with a rippled source as manifests: ConfigMap and Deployment.

Each replica runs ``chainloom ledger follow`` (:mod:`chainloom.ledger.follower`) against the
sink's Cassandra keyspace, with the sink's own ``cassandra`` settings dumped by
:class:`~chainloom.ledger.config.LedgerSettings` into a ConfigMap, as the ledger API's pods get
theirs. The replicas elect their writer through the ``ledger_range`` fence, so the Deployment
needs no leader election of its own; ``Recreate`` keeps a rollout from running an old and a new
writer side by side for longer than the fence would allow anyway. A secured keyspace's files
(``password_file``, ``tls.*``) come from the Secrets ``secret_mounts`` names, mounted read-only.
The sink's ``spec.feed`` becomes ``feed.redis``: the ETL announces each committed ledger there.
Probes: ``/healthz`` (alive), ``/readyz`` (the last look at the store worked), ``/status`` (the
replica's role).
"""

from __future__ import annotations

from typing import Any

import yaml

from chainloom.ledger.config import LedgerSettings
from chainloom_operator._render.common import (
    CONFIG_DIR,
    Owner,
    chainloom_container,
    config_and_pods,
    config_mount,
    http_probe,
    resources,
    secret_mount_pieces,
    service_environment,
)
from chainloom_operator._render.feed import feed_parts, with_feed, without_secret_url
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec, LedgerFollowSpec

COMPONENT = "ledger-etl"
"""``app.kubernetes.io/component`` of the ETL's pods."""
CONFIG_FILE = f"{CONFIG_DIR}/ledger.yaml"
"""The ETL's settings file inside its pods."""
FEED_URL_ENV = "CHAINLOOM_FEED__REDIS__URL"
"""The variable of the feed's URL (``feed.redis.url``) when it is in a Secret."""
PROBES_PORT = 4302
"""Port of ``/healthz``, ``/readyz`` and ``/status``."""


def follow_name(owner: Owner) -> str:
    """The name of the ConfigMap and the Deployment."""
    return f"{owner.name}-ledger-etl"


def follow_settings(sink: BackendTableSpec) -> dict[str, Any]:
    """The settings document the pods load: the sink's keyspace, writable, and its feed."""
    if sink.cassandra is None:
        raise SpecError(f"the ledger ETL writes to a cassandra BackendTable, not {sink.backend}")
    feed = feed_parts(sink.feed, FEED_URL_ENV).settings
    settings = LedgerSettings.model_validate(
        {"database": {"type": "cassandra", "cassandra": sink.cassandra.model_dump()},
         "feed": {"redis": feed}}
    )  # fmt: skip
    document: dict[str, Any] = settings.model_dump(mode="json", include={"database", "feed"})
    return without_secret_url(document, sink.feed, "feed", "redis")


def follow_arguments(spec: LedgerFollowSpec) -> list[str]:
    """``chainloom ledger follow``'s arguments."""
    everywhere = "0.0.0.0"  # noqa: S104 (in a pod: the kubelet's probes reach it)
    arguments = ["ledger", "follow", "--config", CONFIG_FILE, "--grpc", spec.grpc,
                 "--fallback-seconds", str(spec.fallback_seconds),
                 "--poll-interval", str(spec.poll_interval),
                 "--probes", f"{everywhere}:{PROBES_PORT}"]  # fmt: skip
    if spec.start is not None:
        arguments += ["--start", str(spec.start)]
    return arguments


def follow_children(
    owner: Owner, spec: IngestPipelineSpec, sink: BackendTableSpec, otlp_endpoint: str | None = None
) -> list[dict[str, Any]]:
    """The ETL's ConfigMap and Deployment; with ``otlp_endpoint`` its pods export to it
    (``OTEL_*``, before ``ledger.env``, which wins)."""
    follow = spec.ledger
    assert follow is not None
    env = service_environment(
        {"CHAINLOOM_LEDGER_CONFIG": CONFIG_FILE},
        otlp_endpoint,
        "chainloom-ledger-etl",
        owner,
        follow.env,
    )
    secret_mounts, secrets = secret_mount_pieces(follow.secret_mounts)
    mounts = [config_mount(), *secret_mounts]
    container = chainloom_container(
        COMPONENT,
        follow.image,
        follow_arguments(follow),
        pull_policy=follow.image_pull_policy,
        env=env,
        mounts=mounts,
        limits=resources(follow.resources.cpu, follow.resources.memory),
        port=("probes", PROBES_PORT),
        readiness=http_probe("/readyz", "probes", period=10),
        liveness=http_probe("/healthz", "probes", period=20),
    )
    document = yaml.safe_dump(follow_settings(sink), sort_keys=False)
    return config_and_pods(
        owner,
        follow_name(owner),
        COMPONENT,
        {"ledger.yaml": document},
        container,
        replicas=0 if spec.suspend else follow.replicas,
        where=follow.placement,
        more_volumes=secrets,
        strategy="Recreate",
        grace_seconds=30,
        finish_pod=lambda pod: with_feed(pod, feed_parts(sink.feed, FEED_URL_ENV)),
    )
