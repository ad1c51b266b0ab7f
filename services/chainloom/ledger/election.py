"""Who writes: the pure decisions behind one writer and warm standbys (Clio's ETL fallback).

Why no lock service: the ``ledger_range`` compare-and-set already admits exactly one commit per
ledger, so it is the election. A writer whose fenced commit fails has lost and becomes a
standby. A standby only watches the stored range and the source: when the source has
validated ledgers the store lacks and the range has not moved for ``fallback_seconds``, the
writer is taken to be gone and the standby starts writing (the fence settles a race between
two standbys that decide at once). A range that stands still because the source has nothing
new is an idle writer, not a dead one, so the clock only runs while there is work.
These are plain functions of observations and time, tested without a database
(:mod:`chainloom.ledger.follower` wires them to the ETL).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.StrEnum):
    """What a follower process is doing now."""

    WRITER = "writer"
    """Loads ledgers and moves the range."""
    STANDBY = "standby"
    """Watches the range, ready to take over."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A standby's verdict after one look at the range."""

    take_over: bool
    """Start writing now."""
    reason: str
    """Why (for the log line and the status)."""


@dataclass(slots=True)
class StallWatch:
    """A standby's memory of the range: the last max seen and since when work has waited."""

    fallback_seconds: float
    """How long the range may stand still, while the source is ahead, before taking over."""
    last_max: int | None = None
    """The range's max at the previous look (``None`` before the first)."""
    waiting_since: float | None = None
    """When the source was first seen ahead of an unmoved range (``None``: no work waits)."""

    def __post_init__(self) -> None:
        if self.fallback_seconds <= 0:
            raise ValueError(f"fallback_seconds must be > 0, got {self.fallback_seconds}")

    def observe(self, now: float, stored_max: int | None, source_latest: int | None) -> Decision:
        """Look once: ``stored_max`` is the range's max (``None``: empty store),
        ``source_latest`` the source's newest validated ledger (``None``: unknown)."""
        if stored_max is None:
            return Decision(True, "the store is empty: nobody has written yet")
        if stored_max != self.last_max:
            self.last_max = stored_max
            self.waiting_since = None
        if source_latest is None or source_latest <= stored_max:
            self.waiting_since = None
            return Decision(False, f"writer is current at ledger {stored_max}")
        if self.waiting_since is None:
            self.waiting_since = now
            return Decision(False, f"range at {stored_max}, source at {source_latest}")
        stalled = now - self.waiting_since
        if stalled >= self.fallback_seconds:
            return Decision(
                True,
                f"ledger range stuck at {stored_max} for {stalled:.1f}s "
                f"while the source has {source_latest}",
            )
        return Decision(
            False, f"range at {stored_max} for {stalled:.1f}s, source at {source_latest}"
        )


def after_run(stopped_because: str) -> Role | None:
    """The role after a writer's ETL run returned: standby after losing the fence,
    ``None`` (stop following) when it ended for another reason (a ``--stop`` reached)."""
    if stopped_because.startswith("write conflict"):
        return Role.STANDBY
    return None
