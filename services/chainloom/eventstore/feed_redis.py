"""The event feed over Redis pub/sub, for a writer and an API in different processes.

A published message is the batch's cursors, one per line, on one channel. Pub/sub forgets
what nobody heard, which is fine here: a message only wakes the API's stream up, and the
stream then reads the ``feed:`` rows from the store (:mod:`chainloom.eventstore.feed`), so a
lost message costs the stream's poll interval, never a VAA. For the same reason the
subscriber calls ``wake`` with no cursors after every (re)connection.

The writer is hardly slowed by Redis: a publish waits at most ``api.feed_redis.timeout``
(``connect_timeout`` to connect), and after a failure publishing is skipped for
:data:`PAUSE_AFTER_FAILURE` seconds (one log line each time), so an unreachable Redis costs at
most one timeout per pause. Connections are opened by :mod:`chainloom.redis_client` from the
``api.feed_redis`` settings, so TLS, an ACL user and a password file work as for any Redis.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import redis

from chainloom.backoff import Backoff
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.feed import FeedSubscription
from chainloom.redis_client import redis_client, refusal
from chainloom.settings.parts import RedisSettings
from chainloom.urls import redact_url

log = logging.getLogger(__name__)

SETTING = "api.feed_redis"
"""Where the feed's settings live in the event store's settings, for messages."""
PAUSE_AFTER_FAILURE = 10.0
"""Seconds publishing is skipped after Redis failed to take a message."""
RECONNECT = Backoff(initial=0.2, maximum=5.0)
"""Waits between the subscriber's reconnection attempts."""
POLL_SECONDS = 1.0
"""How long the subscriber waits for a message before checking whether it was closed."""


class RedisVaaFeed:
    """:class:`~chainloom.eventstore.feed.VaaFeed` on a Redis channel."""

    def __init__(
        self, redis_settings: RedisSettings, channel: str | None = None, setting: str = SETTING
    ) -> None:
        """``channel`` defaults to ``KEY_PREFIX:eventstore:vaas``; the password and TLS files
        are read and checked now (a :class:`~chainloom.credentials.CredentialsError` naming
        ``setting``, where the settings came from)."""
        self.redis = redis_settings
        self.channel = channel or f"{redis_settings.key_prefix}:eventstore:vaas"
        self._client = redis_client(redis_settings, setting)
        self._paused_until = 0.0

    @property
    def where(self) -> str:
        """The Redis URL (password masked) and channel, for messages."""
        return f"{redact_url(self.redis.url.get_secret_value())} channel {self.channel}"

    def publish(self, cursors: Sequence[str]) -> None:
        if not cursors or time.monotonic() < self._paused_until:
            return
        try:
            self._client.publish(self.channel, "\n".join(cursors))
        except redis.RedisError as error:
            self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE
            log.warning(
                "event feed: cannot publish on Redis %s (%s); the stream falls back to polling "
                "for %g s",
                self.where, _why(error), PAUSE_AFTER_FAILURE,
            )  # fmt: skip

    def subscribe(self, wake: Callable[[Sequence[str]], None]) -> FeedSubscription:
        subscription = _Listener(self, wake)
        subscription.start()
        return subscription

    def close(self) -> None:
        """Close the publishing connection."""
        self._client.close()


class _Listener:
    """A thread listening on the channel, reconnecting with back-off until closed."""

    def __init__(self, feed: RedisVaaFeed, wake: Callable[[Sequence[str]], None]) -> None:
        self.feed = feed
        self.wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="event-feed-redis", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(POLL_SECONDS + self.feed.redis.timeout + 1)

    def _run(self) -> None:
        attempt = 0
        reported = False
        while not self._stop.is_set():
            client = redis_client(
                self.feed.redis,
                SETTING,
                socket_timeout=max(self.feed.redis.timeout, 2 * POLL_SECONDS),
            )
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.feed.channel)
                if reported:
                    log.info("event feed: listening on Redis %s again", self.feed.where)
                attempt, reported = 0, False
                self.wake(())  # what was published while not listening is read from the store
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=POLL_SECONDS)
                    if message is not None and message.get("type") == "message":
                        data = message["data"]
                        text = data.decode() if isinstance(data, bytes) else str(data)
                        self.wake(text.split("\n"))
                pubsub.close()
            except redis.RedisError as error:
                if not reported:
                    log.warning(
                        "event feed: cannot listen on Redis %s (%s); the stream polls the store "
                        "meanwhile",
                        self.feed.where, _why(error),
                    )  # fmt: skip
                    reported = True
                self._stop.wait(RECONNECT.delay(attempt))
                attempt += 1
            finally:
                client.close()


def feed_from(settings: EventsApiSettings) -> RedisVaaFeed | None:
    """The Redis feed ``api.feed_redis`` names (writers publish on it, the API listens), or
    None when it is unset."""
    if settings.feed_redis is None:
        return None
    return RedisVaaFeed(settings.feed_redis)


def _why(error: BaseException) -> str:
    """What to log about a failure: the refusal (a setting to fix) or the error's kind."""
    return refusal(error) or type(error).__name__
