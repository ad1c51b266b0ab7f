"""export's check of the volume rollups against its own daily aggregate.

The live writers keep per-day rollup rows (:mod:`chainloom.eventstore.rollups`); export
computes the same sums offline from every row it reads. After writing the aggregate, the job
sums its (day, source chain) totals and the ``vol:chain:`` rollup rows of the same days, and
reports every (day, chain) where transfers, priced transfers or the USD volume differ: rollup
rows a writer left behind (a reindex repairs them) or rows changed without their rollups.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.rollups import Volume, rollup_prefix, sum_rows
from chainloom.settings import BigtableSettings

MAX_REPORTED = 50
"""Differences listed in the summary (all are counted)."""


def read_rollups(location: BigtableSettings, first: dt.date, last: dt.date) -> dict[Any, Volume]:
    """(day, source chain) -> the rollup rows' sums over UTC days ``first..last``."""
    start = rollup_prefix("chain", f"{first:%Y%m%d}")
    end = rollup_prefix("chain", f"{last + dt.timedelta(days=1):%Y%m%d}")
    with BigtableTables(location) as tables:
        parts = sum_rows(tables.scan_index(start, end))
    return {(dt.date.fromisoformat(day), int(chain)): v for (chain, day), v in parts.items()}


def differences(
    exported: Mapping[tuple[dt.date, int], tuple[int, int, Decimal]],
    rollups: Mapping[tuple[dt.date, int], Volume],
) -> list[dict[str, Any]]:
    """Every (day, chain) whose export totals (transfers, priced, USD) and rollups differ."""
    found = []
    for day, chain in sorted(set(exported) | set(rollups)):
        ours = exported.get((day, chain), (0, 0, Decimal(0)))
        volume = rollups.get((day, chain), Volume())
        theirs = (volume.transfers, volume.priced, volume.usd)
        if ours[0] != theirs[0] or ours[1] != theirs[1] or Decimal(ours[2]) != theirs[2]:
            found.append(
                {
                    "day": day.isoformat(),
                    "chain": chain,
                    "export": {"transfers": ours[0], "priced": ours[1], "usd": str(ours[2])},
                    "rollups": {"transfers": theirs[0], "priced": theirs[1], "usd": str(theirs[2])},
                }
            )
    return found
