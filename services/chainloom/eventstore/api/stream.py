"""The push stream's core: one hub per API process fanning newly stored VAAs out to clients.

How nothing is lost or repeated (``docs/events-api.md``, Stream):

* **The store holds the order.** The writer adds a ``feed:`` index row per newly signed VAA
  (:mod:`chainloom.eventstore.feed`); its cursor is the event id. The hub reads the ``feed:``
  rows after the last one it saw whenever the feed wakes it (Redis pub/sub, or in-process) and
  at least every ``api.stream_poll_interval``, reads those VAAs' rows once, renders each event
  once and offers it to every client whose filter matches.
* **Subscribe, then backfill, then dedupe.** A client resuming from a cursor is registered with
  the hub first (live events queue up for it), then reads the ``feed:`` rows after its cursor
  from the store, page by page, then drains its queue, skipping what is not after the last
  cursor it sent. What was written meanwhile is in the backfill, the queue, or both - never in
  neither, and never sent twice.
* **Bounded per client.** A client has at most ``api.stream_buffer`` events waiting. Over that
  while it is live, it is dropped (its stream ends with a ``close`` event saying why); the hub
  never waits for a client, so the writer and the other clients never do either. Over that
  while it is still backfilling, the queue is emptied and the backfill simply continues from
  the store (a catching-up client is not slow, just behind).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from chainloom.eventstore.api import shapes, tool_models
from chainloom.eventstore.feed import FeedEntry, FeedSubscription, VaaFeed, cursor_at
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot

log = logging.getLogger(__name__)

T = TypeVar("T")

PAGE = 500
"""``feed:`` rows read per store call (hub and backfill)."""


class StreamReads(Protocol):
    """The store reads of the stream (:class:`~chainloom.eventstore.api.stream_reads.FeedReads`)."""

    def feed_after(self, position: str, limit: int) -> list[str]: ...

    def rows(self, row_keys: Sequence[str]) -> dict[str, RowSnapshot]: ...


Read = Callable[..., Awaitable[Any]]
"""The API's bounded store call (:meth:`EventsApi.read`)."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One VAA as the stream sends it."""

    cursor: str
    chain: int
    emitter: str
    frame: bytes
    """The whole SSE frame (``id``, ``event: vaa``, ``data``)."""


def vaa_frame(cursor: str, key: MessageKey, row: RowSnapshot) -> bytes:
    """The SSE frame of one stored VAA."""
    doc = tool_models.StreamEventDoc(cursor=cursor, data=shapes.vaa_doc(key, row))
    return b"id: %s\nevent: vaa\ndata: %s\n\n" % (cursor.encode(), shapes.body(doc))


def close_frame(reason: str) -> bytes:
    """The last frame of a stream the server ends: ``event: close`` and why."""
    data = shapes.body(tool_models.StreamCloseDoc(reason=reason))
    return b"event: close\ndata: %s\n\n" % data


HEARTBEAT = b": keep-alive\n\n"


@dataclass(eq=False)
class StreamClient:
    """One connected client: its filter, its queue and its state."""

    chain: int | None
    emitter: str | None
    limit: int
    queue: collections.deque[StreamEvent] = field(default_factory=collections.deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    since: str = ""
    """The hub's position when the client was registered (where a stream without a cursor
    starts)."""
    live: bool = False
    overflowed: bool = False
    dropped: str | None = None

    def matches(self, chain: int, emitter: str) -> bool:
        return (self.chain is None or self.chain == chain) and (
            self.emitter is None or self.emitter == emitter
        )

    def offer(self, event: StreamEvent) -> None:
        """Queue ``event`` (never waits): past the limit a live client is dropped, a
        backfilling one told to read on from the store."""
        if self.dropped is not None:
            return
        if len(self.queue) >= self.limit:
            if self.live:
                self.drop(f"too slow: {self.limit} events were waiting to be sent")
            else:
                self.overflowed = True
                self.queue.clear()
            return
        self.queue.append(event)
        self.ready.set()

    def drop(self, reason: str) -> None:
        if self.dropped is None:
            self.dropped = reason
            self.queue.clear()
            self.ready.set()


class StreamHub:
    """Reads the feed rows as they come and fans the VAAs out to the connected clients."""

    def __init__(
        self,
        reads: StreamReads,
        read: Read,
        *,
        feed: VaaFeed | None,
        poll_interval: float,
        buffer: int,
        max_clients: int,
    ) -> None:
        self.reads = reads
        self.read = read
        self.feed = feed
        self.poll_interval = poll_interval
        self.buffer = buffer
        self.max_clients = max_clients
        self.clients: set[StreamClient] = set()
        self.position = cursor_at(time.time_ns() // 1000)
        """The newest feed entry fanned out (at start: now)."""
        self.dropped = 0
        """Clients dropped for being slow."""
        self.closed = False
        """Set when the server stops: no client is taken any more."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._subscription: FeedSubscription | None = None

    def start(self) -> None:
        """Subscribe to the feed and start reading (on the running loop)."""
        loop = asyncio.get_running_loop()

        def wake(cursors: Sequence[str]) -> None:
            del cursors  # the store is read from the hub's position, whatever was announced
            loop.call_soon_threadsafe(self._wake.set)

        if self.feed is not None:
            self._subscription = self.feed.subscribe(wake)
        self._task = asyncio.create_task(self._run(), name="events-stream-hub")

    async def close(self) -> None:
        """End every client's stream (``server stopping``) and stop reading."""
        self.closed = True
        if self._subscription is not None:
            self._subscription.close()
        for client in list(self.clients):
            client.drop("the server is stopping; reconnect with your last event id")
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def register(self, chain: int | None, emitter: str | None) -> StreamClient | None:
        """A new client, or None when ``api.stream_max_clients`` are connected."""
        if self.closed or len(self.clients) >= self.max_clients:
            return None
        client = StreamClient(chain, emitter, self.buffer, since=self.position)
        self.clients.add(client)
        return client

    def unregister(self, client: StreamClient) -> None:
        self.clients.discard(client)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)
            self._wake.clear()
            try:
                await self._advance()
            except Exception as error:  # the store is down: the circuit says so once
                log.debug("events stream: reading the feed failed: %s", error)

    async def _advance(self) -> None:
        """Fan out every feed entry after :attr:`position`."""
        page = min(PAGE, self.buffer)  # a page never fills a queue that was empty
        while True:
            cursors = await self.read(self.reads.feed_after, self.position, page)
            if not cursors:
                return
            events = await self.events(cursors, None, None)
            for event in events:
                for client in list(self.clients):
                    if client.matches(event.chain, event.emitter):
                        client.offer(event)
            self.position = cursors[-1]
            if len(cursors) < page:
                return

    async def events(
        self, cursors: Sequence[str], chain: int | None, emitter: str | None
    ) -> list[StreamEvent]:
        """The events of ``cursors`` matching the filter (one read of their rows)."""
        wanted: list[tuple[str, MessageKey]] = []
        for cursor in cursors:
            key = MessageKey.parse(FeedEntry(cursor).row_key)
            if (chain is None or key.chain == chain) and (
                emitter is None or key.emitter == emitter
            ):
                wanted.append((cursor, key))
        if not wanted:
            return []
        rows = await self.read(self.reads.rows, [key.row_key for _, key in wanted])
        return [
            StreamEvent(cursor, key.chain, key.emitter, vaa_frame(cursor, key, rows[key.row_key]))
            for cursor, key in wanted
            if key.row_key in rows
        ]

    async def follow(
        self, client: StreamClient, after: str | None, heartbeat: float
    ) -> AsyncIterator[bytes]:
        """The frames for ``client`` (already registered): the backfill after ``after``, then
        live events (a comment line after ``heartbeat`` seconds of silence), until it is
        dropped."""
        state = _Sent(client.since if after is None else after)
        if after is not None:
            client.overflowed = True
            while client.overflowed:  # live events overflowed meanwhile: read on from the store
                client.overflowed = False
                async for frame in self._backfill(client, state):
                    yield frame
        client.live = True
        while True:
            while client.queue:
                event = client.queue.popleft()
                if event.cursor > state.last:
                    state.last = event.cursor
                    yield event.frame
            if client.dropped is not None:
                if client.dropped.startswith("too slow"):
                    self.dropped += 1
                yield close_frame(client.dropped)
                return
            client.ready.clear()
            if not client.queue:
                try:
                    await asyncio.wait_for(client.ready.wait(), heartbeat)
                except TimeoutError:
                    yield HEARTBEAT

    async def _backfill(self, client: StreamClient, state: _Sent) -> AsyncIterator[bytes]:
        """The stored events after ``state.last`` for ``client``, page by page."""
        while True:
            cursors = await self.read(self.reads.feed_after, state.last, PAGE)
            for event in await self.events(cursors, client.chain, client.emitter):
                yield event.frame
            if cursors:
                state.last = cursors[-1]
            if len(cursors) < PAGE:
                return


@dataclass
class _Sent:
    """Where a client's stream is: the last feed position it passed (sent or filtered out)."""

    last: str
