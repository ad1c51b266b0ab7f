"""Subscriptions: who listens to what, and the one task that publishes each ledger to them.

Every committed ledger is published once, in order: announcements (from the ETL's feed, or the
API's range refresh) only raise a target, and a single task publishes each ledger from the last
one published up to the target, reading it from the store and building its messages with
:mod:`.streams` (serialized once per API version, shared by every subscriber).

Each subscriber (one WebSocket connection) has a bounded outbox. Publishing only puts into
outboxes, never waits for a socket: a subscriber whose outbox is full is dropped on the spot
(rippled closes such a client with 1008 ``Policy error: client is too slow.``), so a slow
client never holds up the ETL, the publisher or the other clients.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Iterable
from typing import Any

from chainloom.backoff import Backoff
from chainloom.errors import UnavailableError
from chainloom.ledger.api import streams
from chainloom.ledger.api.subscribe import STREAMS, StreamRequest
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.errors import LedgerError, LedgerInputError
from chainloom.ledger.xrpl import keylets

log = logging.getLogger(__name__)

FEE_SETTINGS_KEY = keylets.fee_settings()

MAX_CATCH_UP = 256
"""Ledgers published at most to catch up after a gap; older ones are skipped (logged)."""

NOT_VISIBLE_WAIT = 0.1
"""Seconds before looking again for an announced ledger this reader does not see yet."""

RETRY = Backoff(initial=0.2, maximum=5.0, jitter=0.2)
"""How the publisher waits before reading a ledger again after the store failed."""


class Subscriber:
    """One connection's subscriptions and its bounded outbox of serialized messages."""

    def __init__(self, limit: int) -> None:
        self.outbox: asyncio.Queue[str] = asyncio.Queue(maxsize=limit)
        """Messages waiting for the connection's writer."""
        self.dropped = asyncio.Event()
        """Set when the outbox overflowed: the connection is to be closed."""
        self.api_version = 1
        """The shape of the messages it receives (from its last ``subscribe``)."""
        self.streams: set[str] = set()
        self.accounts: set[bytes] = set()
        self.books: set[streams.Book] = set()

    @property
    def listening(self) -> bool:
        """Whether it subscribed to anything."""
        return bool(self.streams or self.accounts or self.books)

    def offer(self, message: str) -> bool:
        """Queue a message; a full outbox drops the subscriber (False)."""
        if self.dropped.is_set():
            return False
        try:
            self.outbox.put_nowait(message)
        except asyncio.QueueFull:
            self.dropped.set()
            while not self.outbox.empty():
                self.outbox.get_nowait()
            return False
        return True


class Publisher:
    """The subscribers by stream, account and book, and the ledger publishing task."""

    def __init__(self, backend: BackendInterface, executor: concurrent.futures.Executor) -> None:
        self._backend = backend
        self._executor = executor
        self._streams: dict[str, set[Subscriber]] = {name: set() for name in STREAMS}
        self._accounts: dict[bytes, set[Subscriber]] = {}
        self._books: dict[streams.Book, set[Subscriber]] = {}
        self._published: int | None = None
        self._target: int | None = None
        self._wake = asyncio.Event()
        self.newest: dict[str, Any] | None = None
        """The ``ledger`` stream's fields of the last ledger published (``subscribe``'s
        answer)."""
        self.dropped = 0
        """Subscribers dropped for being too slow."""

    # ----------------------------------------------------------------- subscribers

    def subscribe(self, subscriber: Subscriber, request: StreamRequest, api_version: int) -> None:
        """Add what ``request`` names to the subscriber's subscriptions."""
        subscriber.api_version = api_version
        for name in request.streams:
            subscriber.streams.add(name)
            self._streams[name].add(subscriber)
        for account in request.accounts:
            subscriber.accounts.add(account)
            self._accounts.setdefault(account, set()).add(subscriber)
        for entry in request.books:
            for book in entry.books():
                subscriber.books.add(book)
                self._books.setdefault(book, set()).add(subscriber)

    def unsubscribe(self, subscriber: Subscriber, request: StreamRequest) -> None:
        """Remove what ``request`` names from the subscriber's subscriptions."""
        for name in request.streams:
            subscriber.streams.discard(name)
            self._streams[name].discard(subscriber)
        for account in request.accounts:
            subscriber.accounts.discard(account)
            _discard(self._accounts, account, subscriber)
        for entry in request.books:
            for book in entry.books():
                subscriber.books.discard(book)
                _discard(self._books, book, subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        """Forget a subscriber (its connection ended)."""
        every = StreamRequest(
            streams=frozenset(subscriber.streams), accounts=frozenset(subscriber.accounts)
        )
        self.unsubscribe(subscriber, every)
        for book in list(subscriber.books):
            _discard(self._books, book, subscriber)
        subscriber.books.clear()

    # ----------------------------------------------------------------- publishing

    def notify(self, sequence: int) -> None:
        """Ledger ``sequence`` is committed: publish up to it (from the loop's thread)."""
        if self._target is None or sequence > self._target:
            self._target = sequence
            self._wake.set()

    def start_after(self, sequence: int | None) -> None:
        """Publish the ledgers after ``sequence`` (the newest stored when the server starts)."""
        self._published = sequence

    async def run(self) -> None:
        """Publish every announced ledger, once and in order, until cancelled."""
        failures = 0
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._target is not None and (
                self._published is None or self._published < self._target
            ):
                sequence = self._next_sequence(self._target)
                try:
                    loop = asyncio.get_running_loop()
                    messages = await loop.run_in_executor(
                        self._executor, read_ledger_messages, self._backend, sequence
                    )
                except LedgerInputError as unreadable:  # stored data no decoder accepts
                    log.error("ledger api: ledger %d is not published: %s", sequence, unreadable)
                    self._published = sequence
                    continue
                except (LedgerError, UnavailableError) as failed:  # the store, for now
                    failures += 1
                    if failures == 1:
                        log.warning("ledger api: cannot read ledger %d to publish: %s",
                                    sequence, failed)  # fmt: skip
                    await asyncio.sleep(RETRY.after_failures(failures))
                    continue
                failures = 0
                if messages is None:  # not visible to this reader yet
                    await asyncio.sleep(NOT_VISIBLE_WAIT)
                    continue
                await self.publish_messages(messages)
                self._published = sequence

    def _next_sequence(self, target: int) -> int:
        if self._published is None:
            return target
        if target - self._published > MAX_CATCH_UP:
            skipped = target - MAX_CATCH_UP
            log.warning("ledger api: publishing from ledger %d; ledgers %d-%d are not published",
                        skipped + 1, self._published + 1, skipped)  # fmt: skip
            self._published = skipped
        return self._published + 1

    async def publish_messages(self, messages: streams.LedgerMessages) -> None:
        """Queue a ledger's messages, yielding to the connections' writers after each one, so
        a client that keeps up never holds more than a message or two of a large ledger."""
        self.newest = messages.ledger_now
        self._send(self._streams["ledger"], lambda _: messages.ledger_closed)
        self._send(self._streams["book_changes"], lambda _: messages.book_changes)
        for tx in messages.transactions:
            await asyncio.sleep(0)
            self._send(self._streams["transactions"], tx.text)
            self._send(_union(self._accounts, tx.accounts), tx.text)
            self._send(_union(self._books, tx.books), tx.text)

    def _send(self, subscribers: Iterable[Subscriber], text: Any) -> None:
        for subscriber in list(subscribers):
            if not subscriber.offer(text(subscriber.api_version)):
                self.dropped += 1
                self.remove(subscriber)


def _discard(index: dict[Any, set[Subscriber]], key: Any, subscriber: Subscriber) -> None:
    found = index.get(key)
    if found is not None:
        found.discard(subscriber)
        if not found:
            del index[key]


def _union(index: dict[Any, set[Subscriber]], keys: Iterable[Any]) -> set[Subscriber]:
    """The subscribers of any of ``keys``, each once."""
    found: set[Subscriber] = set()
    for key in keys:
        found |= index.get(key, set())
    return found


def read_ledger_messages(backend: BackendInterface, sequence: int) -> streams.LedgerMessages | None:
    """The messages of a committed ledger, read from the store (``None`` while this reader does
    not see it yet). Synchronous, like the backends: run it on a thread."""
    found = backend.fetch_ledger_range()
    if found is None or sequence > found.max_sequence:
        found = backend.hard_fetch_ledger_range()
    if found is None or not found.min_sequence <= sequence <= found.max_sequence:
        return None
    header = backend.fetch_ledger_by_sequence(sequence)
    if header is None:
        raise LedgerError(f"ledger {sequence} is in the stored range but has no header")
    hashes = backend.fetch_all_transaction_hashes_in_ledger(sequence)
    stored = backend.fetch_transactions(hashes)
    transactions = [
        streams.StoredTransaction(tx_hash, tx)
        for tx_hash, tx in zip(hashes, stored, strict=True)
        if tx is not None
    ]
    fees = streams.fees_of(backend.fetch_ledger_object(FEE_SETTINGS_KEY, sequence))
    return streams.ledger_messages(header, transactions, fees, found.min_sequence)


def read_ledger_now(backend: BackendInterface) -> dict[str, Any]:
    """The ``subscribe`` answer's fields for the ``ledger`` stream: the newest stored ledger."""
    found = backend.fetch_ledger_range()
    if found is None:
        return {}
    header = backend.fetch_ledger_by_sequence(found.max_sequence)
    if header is None:
        return {}
    fees = streams.fees_of(backend.fetch_ledger_object(FEE_SETTINGS_KEY, header.sequence))
    return streams.ledger_fields(header, fees, found.min_sequence)
