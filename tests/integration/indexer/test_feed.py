"""The indexer announces what it stores on ``feed_redis`` (the events API's ``api.feed_redis``):
its writer, opened as ``chainloom indexer run`` opens it, publishes each batch's new VAAs on
the real Redis, where a subscriber of the channel hears their feed cursors; a password file
that cannot be read stops it before it writes anything."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import redis

from chainloom.credentials import CredentialsError
from chainloom.eventstore.api.stream_reads import FeedReads
from chainloom.eventstore.feed import is_cursor
from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.service import open_writer
from tests.integration.indexer.conftest import Store, workload


def _settings(store: Store, guardian_file: Path, feed: dict[str, object]) -> IndexerSettings:
    return IndexerSettings.model_validate({
        "bigtable": store.settings.model_dump(),
        "guardian_sets": {"source": str(guardian_file)},
        "feed_redis": feed,
    })  # fmt: skip


def test_each_batch_is_announced_on_the_feed(
    store: Store, guardian_file: Path, redis_url: str
) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    settings = _settings(store, guardian_file, {"url": redis_url, "key_prefix": prefix})
    listener = redis.Redis.from_url(redis_url).pubsub()
    listener.subscribe(f"{prefix}:eventstore:vaas")
    assert listener.get_message(timeout=5)["type"] == "subscribe"
    opened = open_writer(settings)
    try:
        summary = opened.writer.put_many(workload(20, 3))
        assert summary.refused == 0
        stored = FeedReads(opened.writer.tables).feed_after("", 100_000)
    finally:
        opened.writer.tables.close()
    heard: list[str] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(heard) < len(stored):
        message = listener.get_message(timeout=1)
        if message is not None and message["type"] == "message":
            heard += message["data"].decode().split("\n")
    listener.close()
    assert summary.new > 0
    assert len(stored) >= summary.new
    assert sorted(heard) == sorted(stored)  # every feed row written was announced, once
    assert all(is_cursor(cursor) for cursor in heard)


def test_an_unreadable_password_file_stops_it_naming_the_setting(
    store: Store, guardian_file: Path, redis_url: str, tmp_path: Path
) -> None:
    missing = tmp_path / "absent"
    settings = _settings(store, guardian_file, {"url": redis_url, "password_file": str(missing)})
    with pytest.raises(CredentialsError, match=rf"^feed_redis.password_file {missing}: No such"):
        open_writer(settings)
