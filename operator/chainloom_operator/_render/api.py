"""A BackendTable's read API as manifests: ConfigMap, Deployment, Service, PodDisruptionBudget.

A Bigtable table is served by ``chainloom events api``, a Cassandra keyspace by ``chainloom
ledger api``. Each pod loads a settings file built from the BackendTable's own ``bigtable`` or
``cassandra`` section and dumped by the service's model (``EventStoreSettings``,
``LedgerSettings``), as the relayer's and the indexer's pods get theirs, so the API reads exactly
the tables the operator manages. The pods are ready when their ``/readyz`` has done a real
round trip to the store (a read of each table; the ledger range), alive while ``/healthz``
answers; the PodDisruptionBudget lets a drain take one pod at a time. The events API's cursor
key, when the spec names a Secret, is a file of that Secret mounted into every pod; so is the
Google key of ``spec.google`` (or the pods run as its Workload Identity ServiceAccount). With
``spec.feed`` the API listens to the table's feed (:mod:`~chainloom_operator._render.feed`).
A secured Cassandra's files (``password_file``, ``tls.*``) come from the Secrets
``api.secret_mounts`` names, mounted read-only at the paths the settings give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.config import EventStoreSettings
from chainloom.ledger.config import LedgerSettings
from chainloom_operator._render import common
from chainloom_operator._render.common import (
    CONFIG_DIR,
    OWNER_KIND_LABEL,
    Owner,
    chainloom_container,
    config_mount,
    config_volume,
    content_hash,
    http_probe,
    labels,
    metadata,
    pod_selector,
    read_only_mount,
    resources,
    secret_mount_pieces,
    secret_volume,
    service_environment,
)
from chainloom_operator._render.feed import (
    feed_parts,
    feed_secret_references,
    with_feed,
    without_secret_url,
)
from chainloom_operator._render.google import pod_bigtable, with_pod_credentials
from chainloom_operator._render.google import secret_references as google_secrets
from chainloom_operator.models import ApiSpec, ApiStatus, BackendTableSpec

API = "api"
"""``app.kubernetes.io/component`` of the API's objects."""
CURSOR_DIR = "/var/run/chainloom/cursor"
"""Where the cursor key's Secret is mounted."""
CURSOR_FILE = f"{CURSOR_DIR}/key"
EVENTS_PORT = EventsApiSettings.model_fields["port"].default
"""The events API's port (its default, 4401), in the container and by default the Service."""
LEDGER_PORT = 51234
"""The ledger API's port (``chainloom ledger api``'s default, rippled's public port)."""
READY_TIMEOUT = 6
"""Seconds a readiness probe waits: above the ledger API's own 5 s bound on the store read."""


def api_name(owner: Owner) -> str:
    """The name of every object of the API."""
    return f"{owner.name}-api"


def api_port(spec: BackendTableSpec) -> int:
    """The port the API's container listens on."""
    return EVENTS_PORT if spec.backend == "bigtable" else LEDGER_PORT


def selector(owner: Owner) -> dict[str, str]:
    """The labels that select the API's pods."""
    return pod_selector(labels(owner, API), OWNER_KIND_LABEL)


def selector_text(owner: Owner) -> str:
    """:func:`selector` as a label selector string (the scale subresource's)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector(owner).items()))


def settings_file(spec: BackendTableSpec) -> tuple[str, dict[str, Any]]:
    """``(file name, document)`` of the settings the API's pods load."""
    api = spec.api
    assert api is not None
    feed = feed_parts(spec.feed, _feed_url_env(spec)).settings
    if spec.bigtable is not None:
        listen: dict[str, Any] = {"host": "0.0.0.0", "port": EVENTS_PORT}  # noqa: S104 (in a pod)
        if api.cursor_key is not None:
            listen["cursor_key_file"] = CURSOR_FILE
        if feed is not None:
            listen["feed_redis"] = feed
        bigtable = pod_bigtable(spec.bigtable, spec.google)
        events = EventStoreSettings.model_validate(
            {"bigtable": bigtable.model_dump(), "api": listen}
        )
        document = events.model_dump(mode="json", include={"bigtable", "api"})
        return "events.yaml", without_secret_url(document, spec.feed, "api", "feed_redis")
    assert spec.cassandra is not None
    ledger = LedgerSettings.model_validate(
        {"database": {"type": "cassandra", "cassandra": spec.cassandra.model_dump(),
                      "read_only": True},
         "feed": {"redis": feed}}
    )  # fmt: skip
    document = ledger.model_dump(mode="json", include={"database", "feed"})
    return "ledger.yaml", without_secret_url(document, spec.feed, "feed", "redis")


def _feed_url_env(spec: BackendTableSpec) -> str:
    """The variable of the feed's URL in the API's settings."""
    if spec.backend == "bigtable":
        return "CHAINLOOM_API__FEED_REDIS__URL"
    return "CHAINLOOM_FEED__REDIS__URL"


def _arguments(spec: BackendTableSpec, path: str) -> list[str]:
    if spec.backend == "bigtable":
        return ["events", "--config", path, "api"]
    everywhere = "0.0.0.0"  # noqa: S104 (in a pod: the Service and the probes reach it)
    return ["ledger", "api", "--config", path, "--host", everywhere, "--port", str(LEDGER_PORT)]


def _environment(spec: BackendTableSpec, api: ApiSpec, path: str, owner: Owner,
                 otlp_endpoint: str | None) -> list[dict[str, Any]]:  # fmt: skip
    """The settings file's variable, the ``OTEL_*`` ones, then ``api.env`` (which wins)."""
    if spec.backend == "bigtable":
        settings, service = {"CHAINLOOM_EVENTSTORE_CONFIG": path}, "chainloom-events-api"
    else:
        settings, service = {"CHAINLOOM_LEDGER_CONFIG": path}, "chainloom-ledger-api"
    return service_environment(settings, otlp_endpoint, service, owner, api.env)


def config_map(owner: Owner, spec: BackendTableSpec) -> dict[str, Any]:
    name, document = settings_file(spec)
    return common.config_map(owner, api_name(owner), "api-config",
                             {name: yaml.safe_dump(document, sort_keys=False)})  # fmt: skip


def deployment(owner: Owner, spec: BackendTableSpec, config_hash: str,
               otlp_endpoint: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The API's pods; with ``otlp_endpoint`` they export to it (``OTEL_*``)."""
    api = spec.api
    assert api is not None
    name, _ = settings_file(spec)
    path = f"{CONFIG_DIR}/{name}"
    mounts = [config_mount()]
    volumes = [config_volume(api_name(owner))]
    if api.cursor_key is not None:
        mounts.append(read_only_mount("cursor-key", CURSOR_DIR))
        volumes.append(secret_volume("cursor-key", api.cursor_key.name,
                                     [{"key": api.cursor_key.key, "path": "key"}]))  # fmt: skip
    secret_mounts, secret_volumes = secret_mount_pieces(api.secret_mounts)
    mounts += secret_mounts
    volumes += secret_volumes
    container = chainloom_container(
        API,
        api.image,
        _arguments(spec, path),
        pull_policy=api.image_pull_policy,
        env=_environment(spec, api, path, owner, otlp_endpoint),
        mounts=mounts,
        limits=resources(api.resources.cpu, api.resources.memory),
        port=("http", api_port(spec)),
        readiness=http_probe("/readyz", "http", period=10, timeout=READY_TIMEOUT, failures=3),
        liveness=http_probe("/healthz", "http", period=20, timeout=5),
    )
    feed = feed_parts(spec.feed, _feed_url_env(spec))

    def finish(pod: dict[str, Any]) -> dict[str, Any]:
        return with_feed(with_pod_credentials(pod, owner.name, spec.google), feed)

    return common.deployment(owner, api_name(owner), labels(owner, API), selector=selector(owner),
                             replicas=api.replicas, container=container, volumes=volumes,
                             config_hash=config_hash, where=api.placement,
                             finish_pod=finish)  # fmt: skip


def service(owner: Owner, spec: BackendTableSpec) -> dict[str, Any]:
    api = spec.api
    assert api is not None
    port = api.service.port or api_port(spec)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(owner, api_name(owner), labels(owner, API)),
        "spec": {
            "type": api.service.type,
            "selector": selector(owner),
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def disruption_budget(owner: Owner) -> dict[str, Any]:
    """At most one API pod away at a time for a voluntary disruption (a drain)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(owner, api_name(owner), labels(owner, API)),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(owner)}},
    }


def render_api(owner: Owner, spec: BackendTableSpec, *, otlp_endpoint: str | None = None
               ) -> list[dict[str, Any]]:  # fmt: skip
    """The API's children, ConfigMap first (the pods mount it); none without ``spec.api``."""
    if spec.api is None:
        return []
    config = config_map(owner, spec)
    return [config, deployment(owner, spec, content_hash(config["data"]), otlp_endpoint),
            service(owner, spec), disruption_budget(owner)]  # fmt: skip


def secret_references(spec: BackendTableSpec) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of every Secret the table's pods need: the Google key, the
    feed Redis's, the API's cursor key and its mounted files."""
    found = google_secrets(spec.google) + feed_secret_references(spec.feed)
    if spec.api is not None and spec.api.cursor_key is not None:
        found.append((spec.api.cursor_key.name, spec.api.cursor_key.key, "events API cursor key"))
    if spec.api is not None:
        found += [(m.secret, "", f"files at {m.mount_path}") for m in spec.api.secret_mounts]
    return found


def api_status(owner: Owner, spec: BackendTableSpec, found: Mapping[str, Any] | None
               ) -> tuple[str, ApiStatus | None]:  # fmt: skip
    """``(apiReady, api)`` of the status from the API's Deployment as observed (None: not
    created yet); ``("", None)`` without ``spec.api``."""
    if spec.api is None:
        return "", None
    status = (found or {}).get("status") or {}
    ready = int(status.get("readyReplicas") or 0)
    return f"{ready}/{spec.api.replicas}", ApiStatus(
        deployment=api_name(owner),
        service=api_name(owner),
        replicas=int(status.get("replicas") or 0),
        ready_replicas=ready,
        selector=selector_text(owner),
    )
