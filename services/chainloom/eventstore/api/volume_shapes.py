"""Rollup sums (:func:`chainloom.eventstore.rollups.sum_rows`) as the volume answers: pure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from chainloom.eventstore.api import volume_models as vm
from chainloom.eventstore.rollups import Volume
from chainloom.wormhole import chain_name, native_address

_CENTS = Decimal("0.000001")


def _volume(volume: Volume) -> dict[str, Any]:
    return {
        "transfers": volume.transfers,
        "priced_transfers": volume.priced,
        "volume_usd": str(volume.usd.quantize(_CENTS)),
    }


def _merged(parts: Mapping[tuple[str, str], Volume], key: Any) -> dict[Any, Volume]:
    """Volumes summed over everything but ``key(value, period)``."""
    merged: dict[Any, Volume] = {}
    for (value, period), volume in parts.items():
        into = merged.setdefault(key(value, period), Volume())
        into.transfers += volume.transfers
        into.priced += volume.priced
        into.usd += volume.usd
    return merged


def totals(
    parts: Mapping[tuple[str, str], Volume],
    first: dt.date,
    last: dt.date,
    chain: int | None,
    by: str,
) -> vm.VolumeTotals:
    """Per (chain, period) sums of the ``chain`` rollup as the totals answer."""
    kept = {k: v for k, v in parts.items() if chain is None or int(k[0]) == chain}
    rows = [
        vm.PeriodVolume(
            period=period, chain=int(value), chain_name=chain_name(int(value)), **_volume(volume)
        )
        for (value, period), volume in sorted(kept.items(), key=lambda i: (i[0][1], i[0][0]))
    ]
    whole = _merged(kept, lambda value, period: "all").get("all", Volume())
    return vm.VolumeTotals(
        from_=first.isoformat(),
        to=last.isoformat(),
        by=by,
        chain=chain,
        total=vm.VolumeDoc(**_volume(whole)),
        data=rows,
    )


def _ranked(merged: Mapping[str, Volume], limit: int) -> list[tuple[str, Volume]]:
    return sorted(merged.items(), key=lambda i: (-i[1].usd, -i[1].transfers, i[0]))[:limit]


def top_tokens(
    parts: Mapping[tuple[str, str], Volume], first: dt.date, last: dt.date, limit: int
) -> vm.TopTokens:
    """The ``tok`` rollup's tokens with the largest volume over the range."""
    rows = []
    for value, volume in _ranked(_merged(parts, lambda value, period: value), limit):
        chain_text, address = value.split(":")
        token_chain = int(chain_text)
        rows.append(
            vm.TokenVolume(
                token_chain=token_chain,
                token_address=address,
                token_native_address=native_address(token_chain, bytes.fromhex(address)),
                **_volume(volume),
            )
        )
    return vm.TopTokens(from_=first.isoformat(), to=last.isoformat(), data=rows)


def top_corridors(
    parts: Mapping[tuple[str, str], Volume], first: dt.date, last: dt.date, limit: int
) -> vm.TopCorridors:
    """The ``cor`` rollup's (source, target) pairs with the largest volume over the range."""
    rows = []
    for value, volume in _ranked(_merged(parts, lambda value, period: value), limit):
        source, target = value.split(":")
        rows.append(
            vm.CorridorVolume(source_chain=int(source), target_chain=int(target), **_volume(volume))
        )
    return vm.TopCorridors(from_=first.isoformat(), to=last.isoformat(), data=rows)
