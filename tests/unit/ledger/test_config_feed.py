"""``feed``: the committed-ledger feed's settings, from the file, the environment
(``CHAINLOOM_FEED__REDIS__...``) and the flags, and the feed they build."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.credentials import CredentialsError
from chainloom.ledger.config import LedgerSettings
from chainloom.ledger.feed_redis import feed_from
from chainloom.settings import SettingsError, load_settings


def test_without_feed_redis_there_is_no_feed() -> None:
    settings = load_settings(LedgerSettings)
    assert settings.feed.redis is None
    assert settings.feed.channel_name == "chainloom:ledger:committed"
    assert feed_from(settings.feed) is None


def test_the_environment_sets_a_secured_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = tmp_path / "password"
    password.write_text("s3cret\n")
    monkeypatch.setenv("CHAINLOOM_FEED__REDIS__URL", "rediss://redis.example:6380/2")
    monkeypatch.setenv("CHAINLOOM_FEED__REDIS__USERNAME", "chainloom")
    monkeypatch.setenv("CHAINLOOM_FEED__REDIS__PASSWORD_FILE", str(password))
    monkeypatch.setenv("CHAINLOOM_FEED__REDIS__KEY_PREFIX", "prod")
    monkeypatch.setenv("CHAINLOOM_FEED__REDIS__TIMEOUT", "3.5")
    settings = load_settings(LedgerSettings)
    redis = settings.feed.redis
    assert redis is not None
    assert redis.uses_tls
    assert (redis.username, redis.password_file, redis.timeout) == ("chainloom", str(password), 3.5)
    assert settings.feed.channel_name == "prod:ledger:committed"
    feed = feed_from(settings.feed)
    assert feed is not None
    assert feed.channel == "prod:ledger:committed"
    assert feed.shown_url == "rediss://redis.example:6380/2"


def test_the_flags_override_the_file_leaf_by_leaf(tmp_path: Path) -> None:
    config = tmp_path / "ledger.yaml"
    config.write_text(
        "feed:\n"
        "  redis: {url: 'redis://old.example:6379/0', username: chainloom}\n"
        "  channel: from-file\n"
    )
    flags = {"feed.redis.url": "redis://new.example:6379/1", "feed.channel": None}
    settings = load_settings(LedgerSettings, config_file=config, flags=flags)
    assert settings.feed.redis is not None
    assert settings.feed.redis.url.get_secret_value() == "redis://new.example:6379/1"
    assert settings.feed.redis.username == "chainloom"  # kept from the file
    assert settings.feed.channel_name == "from-file"


def test_a_flag_alone_turns_the_feed_on() -> None:
    settings = load_settings(
        LedgerSettings, flags={"feed.redis.url": "redis://127.0.0.1:6379/0", "feed.channel": "c"}
    )
    feed = feed_from(settings.feed)
    assert feed is not None
    assert feed.channel == "c"


def test_a_bad_url_from_the_flags_is_named_without_its_password() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(LedgerSettings, flags={"feed.redis.url": "redis://u:s3cret@host:x/0"})
    assert str(caught.value).startswith("command line: feed.redis.url:")
    assert "s3cret" not in str(caught.value)


def test_a_misspelt_key_and_two_passwords_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "ledger.yaml"
    config.write_text("feed: {redis: {urll: 'redis://h:6379/0'}}\n")
    with pytest.raises(SettingsError, match=r"feed\.redis\.urll: unknown key"):
        load_settings(LedgerSettings, config_file=config)
    config.write_text("feed: {redis: {url: 'redis://:pw@h:6379/0', password_file: /p}}\n")
    with pytest.raises(SettingsError, match=r"feed\.redis: .*both in url and as password_file"):
        load_settings(LedgerSettings, config_file=config)
    config.write_text("feed: {channel: ''}\n")
    with pytest.raises(SettingsError, match=r"feed\.channel:"):
        load_settings(LedgerSettings, config_file=config)


def test_a_missing_password_file_stops_the_feed_before_it_connects(tmp_path: Path) -> None:
    settings = load_settings(
        LedgerSettings,
        flags={
            "feed.redis.url": "redis://127.0.0.1:6379/0",
            "feed.redis.password_file": str(tmp_path / "absent"),
        },
    )
    with pytest.raises(CredentialsError, match=r"feed\.redis\.password_file"):
        feed_from(settings.feed)


def test_the_old_environment_variable_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINLOOM_LEDGER_FEED_REDIS", "redis://127.0.0.1:6379/0")
    assert load_settings(LedgerSettings).feed.redis is None
