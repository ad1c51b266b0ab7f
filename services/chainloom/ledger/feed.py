"""The ETL's announcements of committed ledgers, for the API's subscription streams.

The ETL says "ledger n is committed" (after ``finish_writes`` moved ``ledger_range``) and the
API, which reads the same store, publishes that ledger's messages to its subscribers. Only the
sequence travels: the API builds the messages from what is stored, and fills any gap between
two announcements from the store too, so a lost announcement delays a ledger but never loses
it. :class:`LocalFeed` serves an ETL and an API in one process; :class:`~.feed_redis.RedisFeed`
carries the announcements through Redis pub/sub when they are different processes or pods.

``publish`` runs on the ETL's thread and never blocks it nor raises: the Redis feed hands the
sequence to a thread of its own, which retries while Redis is away (and the API's
once-a-second range refresh notices new ledgers anyway).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Protocol


class LedgerFeed(Protocol):
    """Announcements of committed ledgers: published by the ETL, listened to by the API."""

    def publish(self, sequence: int) -> None:
        """Announce that ``sequence`` is committed (from the ETL's thread; never raises)."""

    def listen(self) -> AsyncIterator[int]:
        """The committed sequences announced from now on (in the listener's event loop)."""

    def close(self) -> None:
        """Release the feed's connections."""


class LocalFeed:
    """The feed within one process: the ETL's thread hands sequences to the API's loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[int]]] = []

    def publish(self, sequence: int) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for loop, queue in listeners:
            if not loop.is_closed():
                loop.call_soon_threadsafe(queue.put_nowait, sequence)

    async def listen(self) -> AsyncIterator[int]:
        queue: asyncio.Queue[int] = asyncio.Queue()
        entry = (asyncio.get_running_loop(), queue)
        with self._lock:
            self._listeners.append(entry)
        try:
            while True:
                yield await queue.get()
        finally:
            with self._lock:
                if entry in self._listeners:
                    self._listeners.remove(entry)

    def close(self) -> None:
        with self._lock:
            self._listeners.clear()
