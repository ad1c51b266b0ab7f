"""The committed-ledger feed through Redis pub/sub: the ETL and the API in different processes.

The ETL ``PUBLISH``es each committed sequence (decimal text) on one channel; every API process
``SUBSCRIBE``s to it. Pub/sub keeps nothing: an API that is disconnected misses announcements,
which is harmless, because the API publishes every ledger between the last one it published and
the one announced (:mod:`chainloom.ledger.api.publisher`), reading them from the store. Channels
are global to a Redis server (not per database), so the channel name carries the deployment's
prefix (``KEY_PREFIX:ledger:committed`` by default). The connections are opened by
:mod:`chainloom.redis_client` from the ``feed.redis`` settings, so the feed works over TLS, as an
ACL user and with a password file like every other Redis client; the URL's password never
appears in a message.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import AsyncIterator

import redis

from chainloom.backoff import Backoff
from chainloom.ledger.config import LedgerFeedSettings
from chainloom.redis_client import async_redis_client, connect_options, redis_client, refusal
from chainloom.settings.parts import RedisSettings
from chainloom.urls import redact_url

log = logging.getLogger(__name__)

SETTING = "feed.redis"
"""Where the feed's Redis settings live in the ledger settings, for messages."""

HEALTH_CHECK_SECONDS = 30
"""How often a listening connection is checked (a silently dead one is then replaced)."""

RECONNECT = Backoff(initial=0.2, maximum=10.0, jitter=0.2)
"""How the listener waits between reconnections."""


class RedisFeed:
    """:class:`~chainloom.ledger.feed.LedgerFeed` over one Redis channel.

    ``publish`` only records the newest committed sequence; a thread of the feed announces it,
    so a slow or unreachable Redis never holds up the ETL. Only the newest sequence matters (the
    API publishes every ledger up to the one announced), so announcements that pile up while
    Redis is slow collapse into one."""

    def __init__(self, redis_settings: RedisSettings, channel: str) -> None:
        """``redis_settings`` says how to reach Redis; its password and TLS files are read and
        checked now (a :class:`~chainloom.credentials.CredentialsError` naming the setting)."""
        connect_options(redis_settings, SETTING)
        self.redis = redis_settings
        self.channel = channel
        self._jitter = random.Random()  # noqa: S311 - jitter, not cryptography
        self._client: redis.Redis | None = None
        self._changed = threading.Condition()
        self._pending: int | None = None
        self._closing = False
        self._announcer: threading.Thread | None = None

    @property
    def shown_url(self) -> str:
        """The URL without its password."""
        return redact_url(self.redis.url.get_secret_value())

    def publish(self, sequence: int) -> None:
        with self._changed:
            if self._announcer is None:
                self._announcer = threading.Thread(
                    target=self._announce, name="ledger-feed", daemon=True
                )
                self._announcer.start()
            self._pending = sequence
            self._changed.notify()

    def _announce(self) -> None:
        failures = 0
        while True:
            with self._changed:
                while self._pending is None and not self._closing:
                    self._changed.wait()
                sequence, self._pending = self._pending, None
                closing = self._closing
            if sequence is not None:
                if self._send(sequence, failures):
                    failures = 0
                else:
                    failures += 1
                    if not closing:
                        time.sleep(RECONNECT.after_failures(failures, self._jitter))
                        with self._changed:  # retry it unless a newer one came
                            if self._pending is None:
                                self._pending = sequence
            if closing:
                return

    def _send(self, sequence: int, failures: int) -> bool:
        try:
            if self._client is None:
                self._client = redis_client(self.redis, SETTING)
            self._client.publish(self.channel, str(sequence))
        except redis.RedisError as error:
            if failures == 0:
                log.warning(
                    "ledger feed: cannot announce ledger %d on %s: %s",
                    sequence, self.shown_url, _why(error),
                )  # fmt: skip
            return False
        return True

    async def listen(self) -> AsyncIterator[int]:
        failures = 0
        while True:
            client = async_redis_client(
                self.redis,
                SETTING,
                socket_timeout=None,  # a quiet channel is no failure: the health check finds one
                socket_keepalive=True,
                health_check_interval=HEALTH_CHECK_SECONDS,
            )
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                if failures:
                    log.warning("ledger feed: listening again on %s", self.shown_url)
                failures = 0
                async for message in pubsub.listen():
                    sequence = _sequence(message.get("data"))
                    if sequence is not None:
                        yield sequence
            except (redis.RedisError, OSError) as error:
                failures += 1
                if failures == 1:
                    log.warning(
                        "ledger feed: lost %s (%s); reconnecting",
                        self.shown_url, _why(error),
                    )  # fmt: skip
            finally:
                await pubsub.aclose()
                await client.aclose()
            await asyncio.sleep(RECONNECT.after_failures(max(failures, 1), self._jitter))

    def close(self) -> None:
        """Announce what is pending (one attempt), then release the connection."""
        with self._changed:
            self._closing = True
            self._changed.notify()
            announcer = self._announcer
        if announcer is not None:
            announcer.join(timeout=self.redis.connect_timeout + self.redis.timeout + 1)
        if self._client is not None:
            self._client.close()
            self._client = None


def feed_from(settings: LedgerFeedSettings) -> RedisFeed | None:
    """The Redis feed ``feed.redis`` names (``load`` announces on it, ``api`` listens), or None
    when it is unset."""
    if settings.redis is None:
        return None
    return RedisFeed(settings.redis, settings.channel_name)


def _why(error: BaseException) -> str:
    """What to log about a failure: the refusal (a setting to fix) or the error's kind."""
    return refusal(error) or type(error).__name__


def _sequence(data: object) -> int | None:
    """The sequence of an announcement (``None`` for anything else on the channel)."""
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    if isinstance(text, str) and text.isascii() and text.isdigit():
        return int(text)
    return None
