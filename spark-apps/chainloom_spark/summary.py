"""The summary a job prints and writes as JSON (``--summary PATH``).

Each partition reports its own counts per emitter chain; the driver adds them up here. The
outcome names are the event store's (:class:`chainloom.eventstore.planner.Outcome`) plus
``refused``, so ``chainloom events put --json`` and a job's summary read the same. A conflict
stays a conflict on every run (the stored VAA is kept and the other one recorded beside it),
so a rerun reports it again while writing nothing: ``written`` counts the inputs that changed
a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainloom.wormhole import chain_name

OUTCOMES = ("new", "updated", "unchanged", "conflicting", "refused")
"""The counted outcomes, in the order they are printed."""

UNKNOWN_CHAIN = -1
"""The chain of an input refused before its emitter chain could be read."""

MAX_PRINTED = 20
"""Conflicts and refusals printed one per line before the rest are only counted."""


@dataclass(slots=True)
class ChainCounts:
    """What happened to the inputs of one emitter chain."""

    new: int = 0
    """Rows created."""
    updated: int = 0
    """Rows that gained cells."""
    unchanged: int = 0
    """Inputs that added nothing."""
    conflicting: int = 0
    """Inputs whose VAA differs from the one stored for the same message id."""
    refused: int = 0
    """Inputs that were malformed or did not verify (sent to the dead letter)."""
    written: int = 0
    """Inputs that wrote cells (new, updated, and first sightings of a conflict)."""

    def add(self, other: ChainCounts) -> None:
        for name in (*OUTCOMES, "written"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in (*OUTCOMES, "written")}


@dataclass(slots=True)
class JobSummary:
    """Totals of one job run."""

    job: str
    """The job's name (``vaa-ingest``)."""
    per_chain: dict[int, ChainCounts] = field(default_factory=dict)
    """Counts per emitter chain id (:data:`UNKNOWN_CHAIN` for unreadable inputs)."""
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    """(message id, digest of the conflicting VAA) for each conflicting input."""
    refusals: list[tuple[str, str, str]] = field(default_factory=list)
    """(input location, rule, reason) of the first refusals (at most :data:`MAX_PRINTED`)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Where the job read and wrote, timings and rate (free-form, shown in the JSON)."""

    def chain(self, chain: int) -> ChainCounts:
        """The counts of ``chain``, created empty on first use."""
        counts = self.per_chain.get(chain)
        if counts is None:
            counts = self.per_chain[chain] = ChainCounts()
        return counts

    def merge_counts(self, rows: Iterable[tuple[int, Mapping[str, int]]]) -> None:
        """Add per-chain counts reported by partitions: (chain, {outcome: count})."""
        for chain, counts in rows:
            self.chain(chain).add(ChainCounts(**dict(counts)))

    @property
    def total(self) -> ChainCounts:
        """The counts of every chain together."""
        total = ChainCounts()
        for counts in self.per_chain.values():
            total.add(counts)
        return total

    @property
    def read(self) -> int:
        """Inputs read."""
        total = self.total
        return sum(getattr(total, name) for name in OUTCOMES)

    def as_dict(self) -> dict[str, Any]:
        """The JSON document: totals at the top level, then per chain, conflicts, details."""
        total = self.total
        return {
            "job": self.job,
            "read": self.read,
            **total.as_dict(),
            "per_chain": {
                _chain_label(chain): {"chain_id": chain, **counts.as_dict()}
                for chain, counts in sorted(self.per_chain.items())
            },
            "conflicts": [{"message_id": m, "digest": d} for m, d in self.conflicts],
            "refusals": [{"input": i, "rule": r, "reason": e} for i, r, e in self.refusals],
            **self.details,
        }

    def lines(self) -> list[str]:
        """The summary as text, as ``chainloom events put`` prints its own."""
        total = self.total
        out = [
            f"{self.job}: read {self.read}: new {total.new}, updated {total.updated}, "
            f"unchanged {total.unchanged}, conflicting {total.conflicting}, "
            f"refused {total.refused}"
        ]
        for chain, counts in sorted(self.per_chain.items()):
            out.append(
                f"  {_chain_label(chain)}: "
                + ", ".join(f"{name} {getattr(counts, name)}" for name in OUTCOMES)
            )
        for message_id, digest in self.conflicts[:MAX_PRINTED]:
            out.append(f"conflict: {message_id} has a different VAA {digest} (kept)")
        if len(self.conflicts) > MAX_PRINTED:
            out.append(f"... and {len(self.conflicts) - MAX_PRINTED} more conflicts")
        for location, rule, reason in self.refusals:
            out.append(f"refused: {location}: {rule}: {reason}")
        if total.refused > len(self.refusals):
            out.append(f"... {total.refused - len(self.refusals)} more refusals")
        return out

    def write_json(self, path: str | Path) -> None:
        """Write :meth:`as_dict` to ``path`` (parent directories created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n")


def _chain_label(chain: int) -> str:
    return "unknown" if chain == UNKNOWN_CHAIN else chain_name(chain)
