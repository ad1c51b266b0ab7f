"""Follow rippled for good: write while this process holds the fence, stand by otherwise.

Why a loop around :class:`~chainloom.ledger.etl.LedgerEtl` and not inside it: the ETL already
loads, resumes and refuses to commit over another writer (its run ends with ``write
conflict``). Following adds only the roles (:mod:`chainloom.ledger.election`): run the ETL as
the writer; after a lost fence, watch the range as a standby; when the range stalls while the
source is ahead, start a fresh ETL, which resumes from the stored range like a restart. Several
replicas of one Deployment run this same loop against one keyspace. Looks at the store that
fail (an outage) are retried with :mod:`chainloom.backoff`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chainloom.backoff import Backoff
from chainloom.errors import ChainloomError
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.election import Role, StallWatch, after_run
from chainloom.ledger.etl import LedgerEtl, Progress
from chainloom.ledger.feed import LedgerFeed
from chainloom.ledger.sources.base import LedgerSource, SourceLedger

_WATCH_BACKOFF = Backoff(initial=0.5, maximum=15.0)
"""Waits between failed looks at the range (a store or source outage)."""
_WATCH_FAILURES = 20
"""Failed looks in a row after which the standby gives up and raises the last error."""


@dataclass(frozen=True, slots=True)
class RoleChange:
    """A switch between writing and standing by."""

    role: Role
    """The role taken."""
    reason: str
    """Why it was taken."""
    stored_max: int | None
    """The range's max at the switch."""


@dataclass(slots=True)
class FollowSummary:
    """What a follower did before it stopped."""

    committed: list[int] = field(default_factory=list)
    """Every ledger this process committed, in order (each exactly once)."""
    takeovers: int = 0
    """Times this process went from standby to writer."""
    conflicts: int = 0
    """Times it lost the fence and went from writer to standby."""
    role: Role = Role.STANDBY
    """The role at the end."""


class LedgerFollower:
    """One replica of the following ETL: a writer or a warm standby over one backend."""

    def __init__(
        self,
        backend: BackendInterface,
        source: LedgerSource,
        *,
        fallback_seconds: float = 10.0,
        poll_interval: float = 1.0,
        on_role: Callable[[RoleChange], None] | None = None,
        on_commit: Callable[[Progress], None] | None = None,
        on_trouble: Callable[[str], None] | None = None,
        feed: LedgerFeed | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        """``fallback_seconds``: how long the range may stall, with the source ahead, before a
        standby takes over. ``poll_interval``: the writer's wait for a new ledger and the
        standby's wait between looks. ``on_trouble`` hears of each failed look (it is retried;
        the 20th in a row raises). ``stop`` ends the loop between ledgers or looks."""
        self._backend = backend
        self._source = source
        self._fallback = fallback_seconds
        self._poll = poll_interval
        self._on_role = on_role
        self._on_commit = on_commit
        self._on_trouble = on_trouble
        self._feed = feed
        self._stop = stop or threading.Event()
        self.summary = FollowSummary()
        self.healthy = True
        """False while the standby's looks at the store or the source fail (``/readyz``)."""

    def run(self, *, until: int | None = None) -> FollowSummary:
        """Follow until ``stop`` is set or a writer commits ledger ``until`` (tests, catch-up
        jobs). Starts as a standby, which takes over at once on an empty store or a stalled
        range, so the first replica up writes without waiting for a dead one."""
        role = Role.STANDBY
        while not self._stop.is_set():
            if role is Role.STANDBY:
                if not self._stand_by():
                    break
                role = Role.WRITER
                self.summary.takeovers += 1
            else:
                stopped_because = self._write(until)
                after = after_run(stopped_because)
                if after is None:
                    break
                role = after
                self.summary.conflicts += 1
                self._announce(Role.STANDBY, stopped_because)
        return self.summary

    def _write(self, until: int | None) -> str:
        """One ETL run as the writer; returns why it stopped."""
        source = _StoppableSource(self._source, self._stop)
        etl = LedgerEtl(self._backend, source, on_progress=self._committed, feed=self._feed)
        try:
            summary = etl.run(stop=until, follow=True, poll_interval=self._poll)
        except _StoppedError:
            return "stopped"
        return summary.stopped_because

    def _committed(self, progress: Progress) -> None:
        self.summary.committed.append(progress.sequence)
        if self._on_commit is not None:
            self._on_commit(progress)
        if self._stop.is_set():
            raise _StoppedError

    def _stand_by(self) -> bool:
        """Watch until taking over is right (True) or ``stop`` is set (False)."""
        watch = StallWatch(self._fallback)
        failures = 0
        first = True
        while not self._stop.is_set():
            try:
                found = self._backend.hard_fetch_ledger_range()
                stored_max = None if found is None else found.max_sequence
                latest = self._source.latest_sequence()
            except ChainloomError as failed:
                self.healthy = False
                failures += 1
                if failures >= _WATCH_FAILURES:
                    raise
                wait = _WATCH_BACKOFF.after_failures(failures)
                if self._on_trouble is not None:
                    self._on_trouble(f"look {failures} failed, retrying in {wait:.1f}s: {failed}")
                self._stop.wait(wait)
                continue
            failures = 0
            self.healthy = True
            decision = watch.observe(time.monotonic(), stored_max, latest)
            if decision.take_over:
                self._announce(Role.WRITER, decision.reason, stored_max)
                return True
            if first:
                self._announce(Role.STANDBY, decision.reason, stored_max)
                first = False
            self._stop.wait(self._poll)
        return False

    def _announce(self, role: Role, reason: str, stored_max: int | None = None) -> None:
        self.summary.role = role
        if self._on_role is not None:
            self._on_role(RoleChange(role, reason, stored_max))


class _StoppedError(Exception):
    """Raised from the progress callback to end a writer's run when ``stop`` is set."""


class _StoppableSource:
    """The writer's source, ending its run at the next fetch once ``stop`` is set (the ETL
    itself waits for new ledgers forever)."""

    def __init__(self, source: LedgerSource, stop: threading.Event) -> None:
        self._source = source
        self._stop = stop

    def first_sequence(self) -> int:
        return self._source.first_sequence()

    def latest_sequence(self) -> int | None:
        return self._source.latest_sequence()

    def fetch_full(self, sequence: int) -> SourceLedger:
        return self._source.fetch_full(sequence)

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        if self._stop.is_set():
            raise _StoppedError
        return self._source.fetch_diff(sequence)

    def close(self) -> None:
        self._source.close()
