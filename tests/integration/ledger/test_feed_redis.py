"""The Redis ledger feed against the private TLS Redis with an ACL user: announcements reach a
listener, and a refused login is one warning naming the refusal, never the password, while the
feed keeps retrying."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from chainloom.ledger.feed_redis import RedisFeed
from chainloom.settings import RedisSettings
from chainloom.settings.parts import TlsSettings
from tests.secured_support import PrivateStack


def _secured(stack: PrivateStack, password_file: str | None = None) -> RedisSettings:
    extra = stack.extra("redis")
    host, _ = stack.address("redis")
    return RedisSettings(
        url=SecretStr(f"rediss://{host}:{extra['tls_port']}/0"),
        username=extra["acl_user"],
        password_file=password_file or extra["password_file"],
        tls=TlsSettings(ca_file=extra["ca_file"]),
        timeout=5.0,
    )


def test_announcements_reach_a_listener_over_tls_as_the_acl_user(
    secured_redis: PrivateStack,
) -> None:
    channel = f"test:{uuid.uuid4().hex}"
    listening = RedisFeed(_secured(secured_redis), channel)
    announcing = RedisFeed(_secured(secured_redis), channel)

    async def hear_three() -> list[int]:
        heard: list[int] = []

        async def collect() -> None:
            async for sequence in listening.listen():
                heard.append(sequence)
                if sequence == 3:
                    return

        task = asyncio.create_task(collect())
        await asyncio.sleep(1.0)  # subscribed
        for sequence in (1, 2, 3):
            announcing.publish(sequence)
            await asyncio.sleep(0.2)  # one at a time: the feed keeps only the newest pending
        await asyncio.wait_for(task, timeout=20)
        return heard

    try:
        assert asyncio.run(hear_three()) == [1, 2, 3]
    finally:
        announcing.close()
        listening.close()


def test_a_refused_password_is_one_warning_naming_it(
    secured_redis: PrivateStack, tmp_path: Path, caplog: Any
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password-4711\n")
    feed = RedisFeed(_secured(secured_redis, str(wrong)), f"test:{uuid.uuid4().hex}")
    with caplog.at_level(logging.WARNING, logger="chainloom.ledger.feed_redis"):
        started = time.monotonic()
        feed.publish(1)
        while not caplog.records and time.monotonic() - started < 20:
            time.sleep(0.1)
        feed.close()
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1, messages
    assert "cannot announce ledger 1" in messages[0]
    assert "the credentials were refused" in messages[0]
    assert "not-the-password-4711" not in messages[0]


def test_a_listener_refused_keeps_retrying_with_one_warning(
    secured_redis: PrivateStack, tmp_path: Path, caplog: Any
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password-4711\n")
    feed = RedisFeed(_secured(secured_redis, str(wrong)), f"test:{uuid.uuid4().hex}")

    async def listen_for(seconds: float) -> bool:
        async def first() -> int:
            async for sequence in feed.listen():
                return sequence
            raise AssertionError("the listener ended")

        task = asyncio.create_task(first())
        await asyncio.sleep(seconds)
        still_listening = not task.done()
        task.cancel()
        return still_listening

    with caplog.at_level(logging.WARNING, logger="chainloom.ledger.feed_redis"):
        assert asyncio.run(listen_for(2.0))  # reconnecting with the backoff, not crashed
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1, messages
    assert "the credentials were refused" in messages[0]
    assert "not-the-password-4711" not in messages[0]
    feed.close()


@pytest.mark.parametrize("missing", ["password_file", "tls.ca_file"])
def test_an_unreadable_file_is_refused_before_any_connection(
    secured_redis: PrivateStack, tmp_path: Path, missing: str
) -> None:
    settings = _secured(secured_redis)
    absent = str(tmp_path / "absent")
    if missing == "password_file":
        settings = settings.model_copy(update={"password_file": absent})
    else:
        settings = settings.model_copy(update={"tls": TlsSettings(ca_file=absent)})
    from chainloom.credentials import CredentialsError

    with pytest.raises(CredentialsError, match=f"feed.redis.{missing}"):
        RedisFeed(settings, "unused")
