"""``api.feed_redis``: the event feed's Redis settings (``CHAINLOOM_API__FEED_REDIS__...``) and
the feed they build, before any connection is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.credentials import CredentialsError
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.feed_redis import feed_from
from chainloom.settings import SettingsError, load_settings


def test_without_feed_redis_there_is_no_feed() -> None:
    assert feed_from(load_settings(EventStoreSettings).api) is None


def test_the_environment_sets_a_secured_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = tmp_path / "password"
    password.write_text("s3cret\n")
    monkeypatch.setenv("CHAINLOOM_API__FEED_REDIS__URL", "rediss://redis.example:6380/0")
    monkeypatch.setenv("CHAINLOOM_API__FEED_REDIS__USERNAME", "chainloom")
    monkeypatch.setenv("CHAINLOOM_API__FEED_REDIS__PASSWORD_FILE", str(password))
    monkeypatch.setenv("CHAINLOOM_API__FEED_REDIS__KEY_PREFIX", "prod")
    settings = load_settings(EventStoreSettings)
    feed = feed_from(settings.api)
    assert feed is not None
    assert feed.redis.uses_tls
    assert feed.redis.username == "chainloom"
    assert feed.channel == "prod:eventstore:vaas"
    assert feed.where == "rediss://redis.example:6380/0 channel prod:eventstore:vaas"
    feed.close()


def test_a_missing_password_file_stops_the_feed_before_it_connects(tmp_path: Path) -> None:
    settings = load_settings(
        EventStoreSettings,
        flags={
            "api.feed_redis.url": "redis://127.0.0.1:6379/0",
            "api.feed_redis.password_file": str(tmp_path / "absent"),
        },
    )
    with pytest.raises(CredentialsError, match=r"api\.feed_redis\.password_file"):
        feed_from(settings.api)


def test_a_url_that_is_not_redis_is_refused_naming_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"api\.feed_redis\.url:"):
        load_settings(EventStoreSettings, flags={"api.feed_redis.url": "http://host:6379/0"})
