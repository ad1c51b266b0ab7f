"""A BackendTable's feed (``spec.feed``) in the pods that announce and hear of new data.

The writers of the table announce what they stored on a Redis pub/sub channel and its API
listens, so subscriptions (the ledger API's ``subscribe``, the events API's stream) hear of it
at once rather than at their next look at the store; apart in pods, they meet only if both are
given the same Redis. The operator renders it from the one place both sides read: the
BackendTable. The ledger ETL (``feed.redis``) and the streaming indexer (``feed_redis``)
announce; the ledger API (``feed.redis``) and the events API (``api.feed_redis``) listen. Each
setting is a ``RedisSettings`` document built by
:func:`~chainloom_operator._render.redis_access.redis_settings`, its Secrets mounted as files
and a URL from a Secret given as the setting's own variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainloom_operator._render.common import read_only_mount
from chainloom_operator._render.redis_access import (
    redis_secret_references,
    redis_settings,
    redis_volume,
    url_variable,
)
from chainloom_operator.models import FeedRedisRef

FEED_DIR = "/var/run/chainloom/feed-redis"
"""Where the feed Redis's password and TLS files are mounted."""
VOLUME = "feed-redis"
"""The name of their volume."""


@dataclass(frozen=True, slots=True)
class FeedParts:
    """What a pod gains from ``spec.feed``."""

    settings: dict[str, Any] | None = None
    """The ``RedisSettings`` document of the feed (None: no feed)."""
    env: list[dict[str, Any]] = field(default_factory=list)
    """The URL's variable when the URL is in a Secret."""
    volumes: list[dict[str, Any]] = field(default_factory=list)
    """The password and TLS files' volume."""
    mounts: list[dict[str, Any]] = field(default_factory=list)
    """Its mount, read-only."""


def feed_parts(feed: FeedRedisRef | None, url_env: str) -> FeedParts:
    """The parts of a pod whose setting of the feed's URL is read from ``url_env``
    (``CHAINLOOM_FEED__REDIS__URL``, ...)."""
    if feed is None:
        return FeedParts()
    volume = redis_volume(feed, VOLUME)
    mount = read_only_mount(VOLUME, FEED_DIR)
    return FeedParts(
        settings=redis_settings(feed, FEED_DIR, feed.key_prefix),
        env=url_variable(feed, url_env),
        volumes=[] if volume is None else [volume],
        mounts=[] if volume is None else [mount],
    )


def without_secret_url(document: dict[str, Any], feed: FeedRedisRef | None,
                       *path: str) -> dict[str, Any]:  # fmt: skip
    """``document`` (a dumped settings file) without the feed's URL at ``path`` when the URL
    comes from a Secret (its variable gives it; the model's default would only mislead)."""
    if feed is None or feed.secret_ref is None:
        return document
    section = document
    for key in path:
        section = section[key]
    section.pop("url", None)
    return document


def with_feed(pod_spec: dict[str, Any], parts: FeedParts) -> dict[str, Any]:
    """``pod_spec`` (one container) with the feed's variable, volume and mount."""
    if parts.settings is None:
        return pod_spec
    container = pod_spec["containers"][0]
    return {
        **pod_spec,
        "volumes": [*pod_spec.get("volumes", ()), *parts.volumes],
        "containers": [{**container,
                        "env": [*container.get("env", ()), *parts.env],
                        "volumeMounts": [*container.get("volumeMounts", ()), *parts.mounts]},
                       *pod_spec["containers"][1:]],
    }  # fmt: skip


def feed_secret_references(feed: FeedRedisRef | None) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of the feed's Secrets."""
    return [] if feed is None else redis_secret_references(feed, "feed Redis")
