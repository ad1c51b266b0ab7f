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
    CONFIG_HASH_ANNOTATION,
    Owner,
    container_security,
    content_hash,
    labels,
    metadata,
    placement,
    pod_security,
    resources,
    telemetry_environment,
)
from chainloom_operator._render.feed import feed_parts, with_feed, without_secret_url
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec, LedgerFollowSpec

COMPONENT = "ledger-etl"
"""``app.kubernetes.io/component`` of the ETL's pods."""
CONFIG_DIR = "/etc/chainloom"
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
    name = follow_name(owner)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(owner, name, labels(owner, f"{COMPONENT}-config")),
        "data": {"ledger.yaml": yaml.safe_dump(follow_settings(sink), sort_keys=False)},
    }
    env = [{"name": "CHAINLOOM_LEDGER_CONFIG", "value": CONFIG_FILE}]
    env += [v for v in telemetry_environment(otlp_endpoint, "chainloom-ledger-etl", owner)
            if v["name"] not in follow.env]  # fmt: skip
    env += [{"name": k, "value": v} for k, v in sorted(follow.env.items())]
    mounts = [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}]
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": name}}]
    for index, mount in enumerate(follow.secret_mounts):
        mounts.append({"name": f"secret-{index}", "mountPath": mount.mount_path, "readOnly": True})
        volumes.append({"name": f"secret-{index}",
                        "secret": {"secretName": mount.secret, "defaultMode": 0o440}})  # fmt: skip
    container = {
        "name": COMPONENT,
        "image": follow.image,
        "imagePullPolicy": follow.image_pull_policy,
        "command": ["chainloom"],
        "args": follow_arguments(follow),
        "env": env,
        "ports": [{"name": "probes", "containerPort": PROBES_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "probes"}, "periodSeconds": 20},
        "volumeMounts": mounts,
        "securityContext": container_security(),
        "resources": resources(follow.resources.cpu, follow.resources.memory),
    }
    pod_labels = labels(owner, COMPONENT)
    selector = {
        k: pod_labels[k] for k in ("app.kubernetes.io/instance", "app.kubernetes.io/component")
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(owner, name, pod_labels),
        "spec": {
            "replicas": 0 if spec.suspend else follow.replicas,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": dict(pod_labels),
                    "annotations": {CONFIG_HASH_ANNOTATION: content_hash(config["data"])},
                },
                "spec": with_feed(
                    {
                        "automountServiceAccountToken": False,
                        "terminationGracePeriodSeconds": 30,
                        "securityContext": pod_security(),
                        "containers": [container],
                        "volumes": volumes,
                        **placement(follow.placement),
                    },
                    feed_parts(sink.feed, FEED_URL_ENV),
                ),
            },
        },
    }
    return [config, deployment]
