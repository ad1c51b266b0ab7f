"""Volume rollups: token-transfer counts and USD notional per day (and hour), kept at write time.

A rollup row holds one cell per transfer, never a running sum, so a message is counted once
however often it is written: ``vol:{dimension}:{YYYYMMDD}:{value}`` with the qualifier
``{HH}:{events row key}`` and the transfer's ``NotionalUSD`` as the value (empty when no price
is known). Storing a VAA again writes the very same cell (its timestamp is the VAA's time);
a later price rewrites the cell's value. A day's totals are the sum of its row's cells, an
hour's the sum of the cells whose qualifier starts with the hour; a range of days is one key
range per dimension.

Dimensions: ``chain`` (the source chain), ``cor`` (corridor: source and target chain) and
``tok`` (the origin token). Only token transfers (token bridge payloads 1 and 3) are rolled
up; message counts of every kind are the ``count:`` rows'.

:func:`rollup_entries` is pure and reads only the stored row, so the event writer, the Spark
``enrich`` job (which adds prices) and ``chainloom events reindex`` keep the same cells.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from chainloom.eventstore import schema
from chainloom.eventstore.cells import IndexEntry, vaa_time_micros
from chainloom.eventstore.encoding import decode_int, decode_text, decode_timestamp
from chainloom.eventstore.schema import Q

RowSnapshot = dict[str, dict[str, bytes]]

ROLLUP_PREFIX = "vol:"
ROLLUP_DIMENSIONS = ("chain", "cor", "tok")


def rollup_prefix(dimension: str, day: str) -> str:
    """The rollup rows of one dimension and UTC day (``YYYYMMDD``)."""
    return f"{ROLLUP_PREFIX}{dimension}:{day}:"


def rollup_entries(row_key: str, row: RowSnapshot) -> list[IndexEntry]:
    """The rollup cells of a stored token transfer (none for any other row)."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    transfer = row.get(schema.TOKEN_TRANSFER_PAYLOAD, {})
    stamp, chain = publication.get(Q.TIMESTAMP), publication.get(Q.EMITTER_CHAIN)
    needed = (Q.PAYLOAD_ID, Q.TARGET_CHAIN, Q.ORIGIN_CHAIN, Q.ORIGIN_ADDRESS)
    if stamp is None or chain is None or any(q not in transfer for q in needed):
        return []
    timestamp = decode_timestamp(stamp)
    moment = time.gmtime(timestamp)
    day = time.strftime("%Y%m%d", moment)
    source = decode_int(chain)
    target = decode_int(transfer[Q.TARGET_CHAIN])
    token = f"{decode_int(transfer[Q.ORIGIN_CHAIN]):05d}:{decode_text(transfer[Q.ORIGIN_ADDRESS])}"
    notional = row.get(schema.TOKEN_TRANSFER_DETAILS, {}).get(Q.NOTIONAL_USD, b"")
    qualifier = f"{moment.tm_hour:02d}:{row_key}"
    stamp_micros = vaa_time_micros(timestamp)
    values = (
        ("chain", f"{source:05d}"),
        ("cor", f"{source:05d}:{target:05d}"),
        ("tok", token),
    )
    return [
        IndexEntry(rollup_prefix(dimension, day) + value, qualifier, notional, stamp_micros)
        for dimension, value in values
    ]


@dataclass(slots=True)
class Volume:
    """Transfers and their USD notional."""

    transfers: int = 0
    """Token transfers."""
    priced: int = 0
    """Those with a USD notional."""
    usd: Decimal = field(default_factory=Decimal)
    """The sum of their notional."""

    def add(self, notional: bytes) -> None:
        self.transfers += 1
        if notional:
            self.priced += 1
            self.usd += Decimal(notional.decode())


def sum_rows(
    rows: Iterable[tuple[str, Mapping[str, bytes]]], *, by_hour: bool = False
) -> dict[tuple[str, str], Volume]:
    """(value, period) -> volume of rollup rows of one dimension; the period is the day
    ``YYYY-MM-DD``, or with ``by_hour`` the hour ``YYYY-MM-DDTHH``."""
    totals: dict[tuple[str, str], Volume] = {}
    for row_key, cells in rows:
        _, _, day, value = row_key.split(":", 3)
        label = f"{day[:4]}-{day[4:6]}-{day[6:]}"
        for qualifier, notional in cells.items():
            period = f"{label}T{qualifier[:2]}" if by_hour else label
            totals.setdefault((value, period), Volume()).add(notional)
    return totals
