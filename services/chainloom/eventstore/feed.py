"""The feed of newly stored VAAs: write-ordered ``feed:`` index rows, and a wake-up signal.

Why both: the event stream (``GET /api/v1/vaas/stream``) must resume from a client's cursor
with nothing lost or repeated, so the order and the cursor have to live in the store, not in a
message bus that forgets; and it must deliver within milliseconds, which polling the store
alone would not. So:

* the writer, after a batch's events rows are written, adds one index row per VAA that got its
  signed VAA in that batch (:class:`FeedRecorder`): ``feed:{stamp:020d}:{events row key}``,
  ``stamp`` the write time in microseconds, strictly increasing within a writer process. The
  text after ``feed:`` is the VAA's **cursor**; ``feed:`` rows sort in write order, so "after
  this cursor" is one row-range scan;
* then it publishes the cursors on a :class:`VaaFeed`: :class:`LocalVaaFeed` when the writer
  and the API share a process, :class:`~chainloom.eventstore.feed_redis.RedisVaaFeed` (Redis
  pub/sub) when they do not. A message only wakes the readers up: they read the ``feed:`` rows
  after the last one they saw, so a message lost on the way costs latency (the reader also
  polls), never a VAA.

The row is written after the events row (a reader never finds a feed entry whose VAA is not
there), so a writer that dies between the two leaves that VAA out of the stream (it is stored,
and a re-put finds it unchanged). Feed rows are never deleted: about 120 bytes per VAA.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from chainloom.backoff import Backoff
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.cells import IndexEntry
from chainloom.eventstore.errors import StoreUnavailableError
from chainloom.eventstore.planner import MessageInput, RowPlan

log = logging.getLogger(__name__)

FEED_PREFIX = "feed:"
FEED_END = "feed;"
"""Just past every ``feed:`` row (``;`` sorts right after ``:``)."""

CURSOR_PATTERN = re.compile(r"^[0-9]{20}:[0-9]{1,5}:[0-9a-f]{64}:[0-9]{16,20}$")
"""A cursor: the 20-digit stamp, then the events row key."""


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One newly stored VAA in the feed."""

    cursor: str
    """``{stamp:020d}:{row key}``: its place in write order, and the stream's event id."""

    @property
    def row_key(self) -> str:
        """The events row of the VAA."""
        return self.cursor.split(":", 1)[1]

    @property
    def cell_micros(self) -> int:
        """Its cell timestamp: the stamp, to the millisecond Bigtable keeps."""
        return int(self.cursor[:20]) // 1000 * 1000

    @property
    def index_key(self) -> str:
        """Its ``feed:`` index row."""
        return FEED_PREFIX + self.cursor


def feed_cursor(stamp: int, row_key: str) -> str:
    """The cursor of a VAA written at ``stamp`` (microseconds)."""
    return f"{stamp:020d}:{row_key}"


def is_cursor(text: str) -> bool:
    """Whether ``text`` has the form of a cursor."""
    return CURSOR_PATTERN.match(text) is not None


def cursor_at(unix_micros: int) -> str:
    """A position just before anything stamped at or after ``unix_micros`` (for a reader
    that starts from now)."""
    return f"{unix_micros:020d}"


class FeedSubscription(Protocol):
    """What :meth:`VaaFeed.subscribe` returns."""

    def close(self) -> None: ...


class VaaFeed(Protocol):
    """Where writers say that VAAs were stored, and readers hear it (any thread)."""

    def publish(self, cursors: Sequence[str]) -> None:
        """Tell the subscribers these cursors were written; never raises, never blocks long."""
        ...

    def subscribe(self, wake: Callable[[Sequence[str]], None]) -> FeedSubscription:
        """Call ``wake`` (on any thread) with each published batch of cursors, and with an
        empty batch whenever messages may have been missed (a reconnect)."""
        ...


class LocalVaaFeed:
    """A feed within one process (the writer and the API in the same process, or tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[Sequence[str]], None]] = []

    def publish(self, cursors: Sequence[str]) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for wake in subscribers:
            wake(cursors)

    def subscribe(self, wake: Callable[[Sequence[str]], None]) -> FeedSubscription:
        with self._lock:
            self._subscribers.append(wake)
        return _LocalSubscription(self, wake)

    def _remove(self, wake: Callable[[Sequence[str]], None]) -> None:
        with self._lock:
            if wake in self._subscribers:
                self._subscribers.remove(wake)


@dataclass
class _LocalSubscription:
    feed: LocalVaaFeed
    wake: Callable[[Sequence[str]], None]

    def close(self) -> None:
        self.feed._remove(self.wake)


FEED_WRITE_BACKOFF = Backoff(initial=0.1, maximum=1.0)
FEED_WRITE_ATTEMPTS = 3


class FeedRecorder:
    """Adds a batch's newly signed VAAs to the feed (called by the writer after each batch)."""

    def __init__(
        self,
        tables: BigtableTables,
        feed: VaaFeed | None = None,
        *,
        clock: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tables = tables
        self.feed = feed
        self._clock = clock
        self._sleep = sleep
        self._last = 0
        self.recorded = 0
        """VAAs added to the feed by this recorder."""
        self.missed = 0
        """Newly signed VAAs whose feed row could not be written (stored, not streamed)."""

    def _stamp(self) -> int:
        self._last = max(self._clock() // 1000, self._last + 1)
        return self._last

    def entries(self, written: Sequence[tuple[MessageInput, RowPlan]]) -> list[FeedEntry]:
        """The feed entries of the plans that stored a VAA's first signed copy, stamped in
        input order."""
        return [
            FeedEntry(feed_cursor(self._stamp(), plan.row_key))
            for _, plan in written
            if plan.conditional
        ]

    def __call__(self, written: Sequence[tuple[MessageInput, RowPlan]]) -> None:
        """Write the feed rows of ``written`` and publish them. Never raises: a feed row that
        cannot be written within a few attempts is logged and counted in :attr:`missed`."""
        entries = self.entries(written)
        if not entries:
            return
        pending = entries
        for attempt in range(FEED_WRITE_ATTEMPTS):
            try:
                failed = self.tables.bulk_write(
                    self.tables.index,
                    [(e.index_key, [IndexEntry(e.index_key, "m", b"", e.cell_micros)])
                     for e in pending],
                )  # fmt: skip
            except StoreUnavailableError as error:
                failed_error: str | None = error.cause
                failed = list(range(len(pending)))
            else:
                failed_error = None
            pending = [pending[i] for i in failed]
            if not pending:
                break
            if attempt + 1 < FEED_WRITE_ATTEMPTS:
                self._sleep(FEED_WRITE_BACKOFF.delay(attempt))
        if pending:
            self.missed += len(pending)
            log.warning(
                "event feed: %d stored VAA(s) left out of the stream (feed rows not written: %s)",
                len(pending),
                failed_error or "some rows failed",
            )
        missing = {e.cursor for e in pending}
        done = [e.cursor for e in entries if e.cursor not in missing]
        self.recorded += len(done)
        if done and self.feed is not None:
            self.feed.publish(done)
