"""Per-chain counters for the jobs that read the event store (enrich, export).

vaa-ingest's summary (:mod:`chainloom_spark.summary`) counts the event store writer's
outcomes; the table readers count other things (transfers enriched, rows exported), so they
share this smaller shape instead: a fixed list of counter names, one set per emitter chain,
totals at the top of the JSON, and the same text lines on every job.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainloom.wormhole import chain_name


@dataclass(slots=True)
class ChainCounters:
    """Named counters per emitter chain, and what the job did besides."""

    job: str
    """The job's name (``enrich``)."""
    names: tuple[str, ...]
    """The counters, in the order they are printed."""
    per_chain: dict[int, dict[str, int]] = field(default_factory=dict)
    """Emitter chain id -> counter -> value."""
    details: dict[str, Any] = field(default_factory=dict)
    """Where the job read and wrote, timings (free-form, shown in the JSON)."""

    def add(self, chain: int, name: str, count: int = 1) -> None:
        """Add ``count`` to counter ``name`` of ``chain``."""
        if name not in self.names:
            raise KeyError(f"{self.job}: no counter {name!r}")
        counters = self.per_chain.setdefault(chain, dict.fromkeys(self.names, 0))
        counters[name] += count

    def merge(self, rows: Iterable[tuple[int, Mapping[str, int]]]) -> None:
        """Add (chain, {counter: value}) pairs reported by partitions."""
        for chain, counters in rows:
            for name, count in counters.items():
                self.add(chain, name, count)

    @property
    def totals(self) -> dict[str, int]:
        """Every chain's counters added up."""
        return {
            name: sum(counters[name] for counters in self.per_chain.values()) for name in self.names
        }

    def as_dict(self) -> dict[str, Any]:
        """The JSON document: totals, then per chain (by name), then the details."""
        return {
            "job": self.job,
            **self.totals,
            "per_chain": {
                chain_name(chain): {"chain_id": chain, **counters}
                for chain, counters in sorted(self.per_chain.items())
            },
            **self.details,
        }

    def lines(self) -> list[str]:
        """The totals on one line, then one line per chain."""
        totals = self.totals
        out = [f"{self.job}: " + ", ".join(f"{name} {totals[name]}" for name in self.names)]
        for chain, counters in sorted(self.per_chain.items()):
            out.append(
                f"  {chain_name(chain)}: "
                + ", ".join(f"{name} {counters[name]}" for name in self.names)
            )
        return out

    def write_json(self, path: str | Path) -> None:
        """Write :meth:`as_dict` to ``path`` (parent directories created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.as_dict(), indent=2) + "\n")
