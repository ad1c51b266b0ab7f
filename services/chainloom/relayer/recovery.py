"""Missed-VAA recovery for the listener: the relayer-engine's "missed VAAs", built on the same
gap tracker and public-API client as the indexer.

Why it works this way:

* **Only the emitters relayed for.** The spy subscription is filtered to the known token
  bridges, so every sequence of those emitters (transfers, attestations, anything) passes
  through the intake; the :class:`~chainloom.wormhole.sequences.GapBook` hears each one the
  intake decided (queued, known or rejected: all were *seen*). A sequence never heard of is a
  VAA the spy dropped.
* **Recovered VAAs take the same door.** An overdue gap's sequences are fetched
  (:class:`~chainloom.publicrpc.PublicRpcClient`, endpoints in turn, bounded calls) and handed
  to the listener's :meth:`~chainloom.relayer.listener.Listener.submit` with source
  ``recovery``: the same validation, the same atomic dedupe by digest, so a VAA that also
  arrives from the spy (or was queued before) is never queued twice.
* **Resumes after a restart.** Each emitter's state (last seen sequence, open gaps) is saved
  in Redis (:mod:`chainloom.relayer.recovery_state`) after every round and at stop, and loaded
  before the first round; sequences heard before it is loaded wait and are applied on top. The
  first sequence heard after a restart opens the gap from the stored one on, so only what was
  published while the listener was down is asked of the public API. An emitter with no stored
  state starts at its configured ``start_sequences`` entry, or else at the first sequence seen.
* **Optional.** Without ``public_rpc.endpoints`` there is no recovery object at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from chainloom.errors import UnavailableError
from chainloom.publicrpc import FetchStatus, PublicRpcClient
from chainloom.relayer.config import RecoverySettings
from chainloom.relayer.errors import TableError
from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.recovery_state import RecoveryStateStore
from chainloom.wormhole.sequences import GapBook, SequenceTracker

log = logging.getLogger(__name__)

RECOVERY_SOURCE = "recovery"
"""The intake source name of recovered VAAs (in ``/v1/stats`` ``by_source``)."""


@dataclass(slots=True)
class RecoveryCounters:
    """What recovery did since start."""

    fetched: int = 0
    """Missing sequences an endpoint returned."""
    queued: int = 0
    """Of those, queued into Incoming by the intake."""
    known: int = 0
    """Of those, already in a table (the dedupe held)."""
    rejected: int = 0
    """Of those, refused by validation (not a relayable transfer, malformed)."""
    not_found: int = 0
    """Fetches every endpoint answered NotFound for."""
    errors: int = 0
    """Fetches no endpoint answered (errors, timeouts)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Guards the counters (read from the stats thread)."""

    def add(self, name: str) -> None:
        """Count one event."""
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


class MissedVaaRecovery:
    """Tracks the sequences of the relayed emitters and fetches overdue gaps."""

    def __init__(
        self,
        emitters: frozenset[tuple[int, bytes]],
        settings: RecoverySettings,
        client: PublicRpcClient,
        *,
        state: RecoveryStateStore | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.emitters = frozenset((chain, address.hex()) for chain, address in emitters)
        """The emitters tracked: ``(chain, 64 hex)``."""
        self.settings = settings
        self.client = client
        self.state = state
        """Where the state is kept between runs (None: in memory only)."""
        self.book = GapBook(settings.max_gaps)
        self.counters = RecoveryCounters()
        self._wall_clock = wall_clock
        self._early: list[tuple[int, str, int, float]] | None = [] if state is not None else None
        if state is None:
            self._apply_start_sequences()

    @property
    def loaded(self) -> bool:
        """Whether the saved state was loaded (always true without a store)."""
        return self._early is None

    def seen(self, message_id: str | None) -> None:
        """The intake decided the VAA ``chain/emitter/sequence`` (call on the event loop)."""
        if not message_id:
            return
        chain_text, emitter, sequence_text = message_id.split("/")
        chain = int(chain_text)
        if (chain, emitter) not in self.emitters:
            return
        if self._early is not None:
            self._early.append((chain, emitter, int(sequence_text), self._wall_clock()))
        else:
            self._see(chain, emitter, int(sequence_text), self._wall_clock())

    def _see(self, chain: int, emitter: str, sequence: int, at: float) -> None:
        tracker = self.book.tracks.get((chain, emitter))
        if tracker is not None and tracker.first is not None and sequence < tracker.first:
            return  # before where this emitter's track starts: not a gap of ours
        self.book.see(chain, emitter, sequence, at)

    def _apply_start_sequences(self) -> None:
        for start in self.settings.start_sequences:
            key = (start.chain, start.address)
            if key in self.emitters and key not in self.book.tracks:
                self.book.tracks[key] = SequenceTracker.expecting(start.sequence)
                self.book.dirty.add(key)

    async def load(self) -> bool:
        """Load the saved state (once; then apply what was heard meanwhile); False when the
        store did not answer (tried again next round)."""
        if self._early is None or self.state is None:
            return True
        try:
            saved = await asyncio.to_thread(self.state.load)
        except (UnavailableError, TableError, ValueError) as error:
            log.warning("listener: recovery state not loaded yet: %s", error)
            return False
        for data in saved:
            if (data.get("chain"), data.get("emitter")) in self.emitters:
                try:
                    self.book.restore(data)
                except ValueError as error:
                    log.warning(
                        "listener: recovery state of %s/%s ignored: %s",
                        data.get("chain"),
                        data.get("emitter"),
                        error,
                    )
        self._apply_start_sequences()
        early, self._early = self._early, None
        for chain, emitter, sequence, at in early:
            self._see(chain, emitter, sequence, at)
        log.info(
            "listener: recovery resumes %d emitters from saved state",
            len(saved),
        )
        return True

    async def save(self) -> None:
        """Write the state of the emitters changed since the last save (kept dirty on error)."""
        if self.state is None or self._early is not None or not self.book.dirty:
            return
        changed = [self.book.emitter_json(c, e) for c, e in sorted(self.book.dirty)]
        try:
            await asyncio.to_thread(self.state.save, changed)
        except (UnavailableError, TableError) as error:
            log.warning("listener: recovery state not saved: %s", error)
            return
        self.book.clean()

    async def run(
        self,
        submit: Callable[[bytes], Awaitable[IntakeResult]],
        stop: asyncio.Event,
    ) -> None:
        """Look for overdue gaps every ``check_interval`` seconds until ``stop`` is set."""
        try:
            while not stop.is_set():
                if await self.load():
                    await self.fill_round(submit, stop)
                    await self.save()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.check_interval)
        finally:
            await self.save()
            self.client.close()

    async def fill_round(
        self, submit: Callable[[bytes], Awaitable[IntakeResult]], stop: asyncio.Event
    ) -> int:
        """Fetch up to ``per_round`` overdue sequences and submit what is found; returns how
        many were queued."""
        settings = self.settings
        due = self.book.due(
            self._wall_clock(), settings.grace, settings.retry_after, settings.per_round
        )
        queued = 0
        for chain, emitter, sequence in due:
            if stop.is_set():
                break
            result = await asyncio.to_thread(self.client.fetch, chain, emitter, sequence)
            message = (chain, emitter, sequence)
            if result.status is not FetchStatus.FOUND or result.vaa is None:
                self.counters.add(
                    "not_found" if result.status is FetchStatus.NOT_FOUND else "errors"
                )
                self.book.failed(message, result.status.value, result.reason, self._wall_clock())
                continue
            self.counters.add("fetched")
            decided = await submit(result.vaa)
            if decided.outcome is Outcome.UNAVAILABLE:
                self.book.failed(message, "error", decided.reason or "", self._wall_clock())
                continue
            name = {Outcome.QUEUED: "queued", Outcome.KNOWN: "known"}.get(decided.outcome)
            self.counters.add(name or "rejected")
            queued += decided.outcome is Outcome.QUEUED
            if decided.message_id != result.message_id:
                # Malformed answers never reach here (the client checks the id); be safe.
                self.book.failed(message, "error", "answer of another message", self._wall_clock())
        if due:
            log.info(
                "listener: recovery round: %d asked, %d queued; %d sequences still missing",
                len(due),
                queued,
                self.book.missing(),
            )
        return queued

    def stats(self) -> dict[str, Any]:
        """The ``recovery`` part of ``/v1/stats``."""
        c = self.counters
        with c.lock:
            counts = {
                "fetched": c.fetched,
                "queued": c.queued,
                "known": c.known,
                "rejected": c.rejected,
                "not_found": c.not_found,
                "errors": c.errors,
            }
        gaps = self.book.open_gaps()
        return {
            **counts,
            "state_loaded": self.loaded,
            "emitters_tracked": len(self.book.tracks),
            "open_gaps": len(gaps),
            "missing": sum(g.range.count for g in gaps),
            "gaps": [g.to_json() for g in gaps[:50]],
        }
