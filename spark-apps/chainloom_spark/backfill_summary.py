"""The summary of ``gap-backfill``: per emitter what was missing, found, written and what stayed
missing, and why.

The partitions report counts per (chain, emitter) and one row per message still missing; the
driver adds them up here. Still-missing messages are listed as ranges of consecutive sequences
sharing one status and reason, so a thousand sequences a guardian never saw are one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainloom.wormhole import chain_name
from chainloom.wormhole.sequences import SequenceRange

COUNTS = ("found", "new", "updated", "unchanged", "conflicting", "refused", "written")
"""Per-emitter counters of fetched messages, in the order they are printed."""

MAX_PRINTED = 20
"""Still-missing ranges printed per emitter before the rest are only counted."""


@dataclass(frozen=True, slots=True)
class MissingRange:
    """Consecutive sequences of one emitter that stayed missing for the same reason."""

    sequences: SequenceRange
    """The sequences."""
    status: str
    """``not_found``, ``error`` or ``refused``."""
    reason: str
    """The endpoints' answers, or the rule that refused the fetched VAA."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "first": self.sequences.first,
            "last": self.sequences.last,
            "count": self.sequences.count,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(slots=True)
class EmitterReport:
    """What the job found and did for one (chain, emitter)."""

    chain: int
    """Emitter chain id."""
    emitter: str
    """Emitter address, 64 lower-case hex characters."""
    stored: int = 0
    """Sequences stored when the job started (within the bounds)."""
    lowest: int | None = None
    """Lowest stored sequence (None: none stored)."""
    highest: int | None = None
    """Highest stored sequence."""
    missing: int = 0
    """Sequences missing (the job looked for these)."""
    skipped: int = 0
    """Further missing sequences past ``--max-missing`` (not looked for this run)."""
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    """Fetched messages: found, and the event store's outcome of writing them."""
    still_missing: list[MissingRange] = field(default_factory=list)
    """What stayed missing, as ranges."""

    @property
    def still_missing_count(self) -> int:
        return sum(item.sequences.count for item in self.still_missing)

    @property
    def label(self) -> str:
        return f"{chain_name(self.chain)} {self.chain}/{self.emitter}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "chain_id": self.chain,
            "chain": chain_name(self.chain),
            "emitter": self.emitter,
            "stored": self.stored,
            "lowest": self.lowest,
            "highest": self.highest,
            "missing": self.missing,
            "skipped": self.skipped,
            **self.counts,
            "still_missing": self.still_missing_count,
            "still_missing_ranges": [item.as_dict() for item in self.still_missing],
        }


@dataclass(slots=True)
class BackfillSummary:
    """Totals of one gap-backfill run."""

    job: str
    """The job's name."""
    emitters: dict[tuple[int, str], EmitterReport] = field(default_factory=dict)
    """Per (chain, emitter), in the order they were scanned."""
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    """(message id, digest) of fetched VAAs that differ from a stored one."""
    details: dict[str, Any] = field(default_factory=dict)
    """Source, table, timings (shown in the JSON)."""

    def emitter(self, chain: int, emitter: str) -> EmitterReport:
        """The report of (chain, emitter), created empty on first use."""
        key = (chain, emitter)
        if key not in self.emitters:
            self.emitters[key] = EmitterReport(chain, emitter)
        return self.emitters[key]

    def add_missing(self, chain: int, emitter: str, rows: list[tuple[int, str, str]]) -> None:
        """Record still-missing (sequence, status, reason) rows of one emitter as ranges."""
        report = self.emitter(chain, emitter)
        current: list[Any] | None = None
        for sequence, status, reason in sorted(rows):
            if (
                current is not None
                and sequence == current[1] + 1
                and (status, reason) == (current[2], current[3])
            ):
                current[1] = sequence
                continue
            if current is not None:
                report.still_missing.append(_range(current))
            current = [sequence, sequence, status, reason]
        if current is not None:
            report.still_missing.append(_range(current))
        report.still_missing.sort(key=lambda item: item.sequences)

    def total(self, name: str) -> int:
        """A counter summed over every emitter."""
        return sum(report.counts[name] for report in self.emitters.values())

    def as_dict(self) -> dict[str, Any]:
        reports = self.emitters.values()
        return {
            "job": self.job,
            "emitters": len(self.emitters),
            "missing": sum(r.missing for r in reports),
            "skipped": sum(r.skipped for r in reports),
            **{name: self.total(name) for name in COUNTS},
            "still_missing": sum(r.still_missing_count for r in reports),
            "per_emitter": [r.as_dict() for r in reports],
            "conflicts": [{"message_id": m, "digest": d} for m, d in self.conflicts],
            **self.details,
        }

    def lines(self) -> list[str]:
        """The summary as text."""
        totals = self.as_dict()
        out = [
            f"{self.job}: {totals['emitters']} emitters, {totals['missing']} missing: "
            + ", ".join(f"{name} {totals[name]}" for name in COUNTS)
            + f", still missing {totals['still_missing']}"
            + (f", skipped {totals['skipped']} (over --max-missing)" if totals["skipped"] else "")
        ]
        for report in self.emitters.values():
            span = (
                f"{report.lowest}-{report.highest}" if report.lowest is not None else "none stored"
            )
            out.append(
                f"  {report.label}: stored {report.stored} ({span}), missing {report.missing}, "
                f"found {report.counts['found']}, written {report.counts['written']}, "
                f"still missing {report.still_missing_count}"
            )
            for item in report.still_missing[:MAX_PRINTED]:
                out.append(f"    missing {item.sequences}: {item.status}: {item.reason}")
            if len(report.still_missing) > MAX_PRINTED:
                out.append(f"    ... {len(report.still_missing) - MAX_PRINTED} more ranges")
        for message_id, digest in self.conflicts[:MAX_PRINTED]:
            out.append(f"conflict: {message_id} has a different VAA {digest} (kept)")
        return out

    def write_json(self, path: str | Path) -> None:
        """Write :meth:`as_dict` to ``path`` (parent directories created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.as_dict(), indent=2) + "\n")


def _range(current: list[Any]) -> MissingRange:
    return MissingRange(SequenceRange(current[0], current[1]), current[2], current[3])
