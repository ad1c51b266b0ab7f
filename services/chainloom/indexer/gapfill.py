"""Gap detection and missed-VAA recovery for the running indexer.

Why it works this way:

* **Seen means stored.** The :class:`~chainloom.wormhole.sequences.GapBook` is one of the
  pipeline's observers, so it hears of a sequence only once its write returned; a hole is a
  message the store lacks, not one in flight.
* **Fetched VAAs take the spy's path.** An overdue hole's sequences are asked of the public
  API (:class:`~chainloom.publicrpc.PublicRpcClient`, endpoints in turn) and what comes back is
  handed to :meth:`Pipeline.submit`: deduplicated, verified and written in batches exactly as
  a spy VAA, so the book hears of it the same way and the hole closes.
* **What cannot be found stays listed.** A sequence every endpoint answers NotFound for, or
  that no endpoint could be asked about, keeps its hole, with its attempts and last error, and
  is asked again after ``gaps.retry_after`` seconds. Each call is bounded by
  ``public_rpc.timeout`` and ``public_rpc.rounds``, and a stop is honoured between calls, so
  nothing hangs on a dead endpoint.
* **The state survives restarts.** The changed emitters are saved every
  ``gaps.state_interval`` seconds and once after the drain, one index-table row per emitter
  (:class:`~chainloom.eventstore.backfill.GapStateRows`), and loaded at start. A save that
  fails is retried at the next interval (the book keeps them dirty).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from opentelemetry import trace

from chainloom import telemetry
from chainloom.eventstore.errors import EventStoreError
from chainloom.indexer.config import GapSettings
from chainloom.indexer.metrics import IndexerCounters
from chainloom.publicrpc import FetchResult, FetchStatus
from chainloom.wormhole.sequences import GapBook

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("chainloom.indexer")

HANDED_HOLD = 60.0
"""Seconds a fetched VAA handed to the pipeline is not fetched again, even with a shorter
``gaps.retry_after`` (which is for fetches that failed): its write normally returns within
the batch latency and the write deadline; a gap still open after this (a store down that long,
a copy the pipeline had refused) is asked again."""


GapMessage = tuple[int, str, int]
"""A missing message: (emitter chain, emitter address, sequence)."""


class Fetcher(Protocol):
    """Fetches one message by id (:class:`~chainloom.publicrpc.PublicRpcClient`)."""

    def fetch(self, chain: int, emitter: str, sequence: int) -> FetchResult:
        """Found, not found or error, with the VAA or the reason."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class GapState(Protocol):
    """Where the book is kept (:class:`~chainloom.eventstore.backfill.GapStateRows`)."""

    def load(self, book: GapBook) -> list[str]:
        """Restore the saved emitters into ``book``; the keys that could not be read."""
        ...

    def save(self, states: Iterable[dict[str, Any]]) -> int:
        """Write emitters' states (raises the store's errors)."""
        ...


class Submit(Protocol):
    """The pipeline's :meth:`~chainloom.indexer.pipeline.Pipeline.submit`."""

    async def __call__(self, raw: bytes) -> str | None: ...


class GapFiller:
    """Keeps the book's state in the store and fetches overdue holes (see the module doc)."""

    def __init__(
        self,
        book: GapBook,
        settings: GapSettings,
        state: GapState,
        counters: IndexerCounters,
        *,
        fetcher: Fetcher | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.book = book
        self.settings = settings
        self.state = state
        self.counters = counters
        self.fetcher = fetcher
        """None: no endpoint configured; holes are tracked and listed, not fetched."""
        self._wall_clock = wall_clock
        self._save_failing = False
        self._handed: dict[GapMessage, float] = {}  # fetched, write not yet seen

    def load(self) -> None:
        """Restore the saved state (blocking; raises the store's errors)."""
        broken = self.state.load(self.book)
        for row_key in broken:
            log.warning("indexer: gap state row %s is not readable; starting it afresh", row_key)
        if self.book.tracks:
            log.info(
                "indexer: gap state of %d emitters loaded, %d sequences missing",
                len(self.book.tracks),
                self.book.missing(),
            )

    async def run(self, submit: Submit, stop: asyncio.Event) -> None:
        """Look for overdue holes and save the state until ``stop`` is set."""
        next_save = time.monotonic() + self.settings.state_interval
        while not stop.is_set():
            if self.fetcher is not None:
                await self.fill_round(submit, stop)
            if time.monotonic() >= next_save:
                await self.save()
                next_save = time.monotonic() + self.settings.state_interval
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.check_interval)

    async def fill_round(self, submit: Submit, stop: asyncio.Event) -> int:
        """Fetch up to ``per_round`` overdue sequences; returns how many were handed on."""
        fetcher = self.fetcher
        if fetcher is None:
            return 0
        settings = self.settings
        now = self._wall_clock()
        # A VAA handed to the pipeline closes its gap only once its write returns; until then
        # (at most retry_after seconds, and never less than HANDED_HOLD) it is not fetched again.
        hold = max(settings.retry_after, HANDED_HOLD)
        self._handed = {m: t for m, t in self._handed.items() if now - t < hold}
        due = [
            message
            for message in self.book.due(
                now, settings.grace, settings.retry_after, settings.per_round + len(self._handed)
            )
            if message not in self._handed
        ][: settings.per_round]
        handed = 0
        for chain, emitter, sequence in due:
            if stop.is_set():
                break
            attributes = {"chainloom.emitter_chain": chain, "chainloom.sequence": sequence}
            with telemetry.start_span(_tracer, "indexer.gap_fill", attributes=attributes) as span:
                outcome = await self._fill(submit, fetcher, (chain, emitter, sequence))
                span.set_attribute("chainloom.outcome", outcome)
            handed += outcome == "handed"
        if due:
            log.info(
                "indexer: gap round: %d asked, %d fetched; %d sequences still missing",
                len(due),
                handed,
                self.book.missing(),
            )
        return handed

    async def _fill(self, submit: Submit, fetcher: Fetcher, message: GapMessage) -> str:
        """Fetch one missing sequence and hand it on; returns what became of it (``handed``,
        ``duplicate``, or the failure's status: ``not_found``, ``refused``, ...)."""
        result = await asyncio.to_thread(fetcher.fetch, *message)
        now = self._wall_clock()
        if result.status is FetchStatus.FOUND and result.vaa is not None:
            refused = await submit(result.vaa)
            if refused is None or refused == "duplicate":
                self._handed[message] = now
                if refused is None:
                    self.counters.gaps_filled += 1
                    return "handed"
                return "duplicate"
            status, reason = "refused", refused
        else:
            status, reason = result.status.value, result.reason
        if status == FetchStatus.NOT_FOUND.value:
            self.counters.gaps_not_found += 1
        else:
            self.counters.gaps_failed += 1
        self.book.failed(message, status, reason, now)
        return status

    async def save(self) -> None:
        """Write the emitters changed since the last save (a failure keeps them for later)."""
        dirty = set(self.book.dirty)
        if not dirty:
            return
        states: list[dict[str, Any]] = [self.book.emitter_json(c, e) for c, e in sorted(dirty)]
        self.book.clean()
        try:
            await asyncio.to_thread(self.state.save, states)
        except EventStoreError as error:
            self.book.dirty |= dirty
            if not self._save_failing:
                log.warning("indexer: gap state not saved (retrying): %s", error)
            self._save_failing = True
            return
        if self._save_failing:
            log.warning("indexer: gap state saved again")
        self._save_failing = False

    def close(self) -> None:
        """Release the fetcher's connections."""
        if self.fetcher is not None:
            self.fetcher.close()
