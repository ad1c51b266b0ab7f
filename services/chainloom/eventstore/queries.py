"""Read paths: one message, an emitter's sequence range, recent messages, tx lookups, counts.

Only row-key lookups and scans, never a value filter over the table: anything that is not
reachable by the events row key goes through the index table (the reference ``event_database``
scanned the whole table to find a transaction).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from google.cloud.bigtable.data import row_filters as rf

from chainloom.eventstore import keys, schema
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.encoding import decode_signature_list, decode_value
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.wormhole.sequences import MAX_SEQUENCE


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One row of the events table (latest cell of each column)."""

    key: MessageKey
    """The message's identity."""
    families: RowSnapshot
    """family -> qualifier -> raw stored value."""

    def value(self, family: str, qualifier: str) -> Any:
        """A decoded value, or None if the cell is absent."""
        raw = self.families.get(family, {}).get(qualifier)
        return None if raw is None else decode_value(family, qualifier, raw)

    @property
    def signed_vaa(self) -> bytes | None:
        return self.families.get(schema.QUORUM_STATE, {}).get(Q.SIGNED_VAA)

    @property
    def conflicts(self) -> dict[str, bytes]:
        """digest hex -> bytes of each conflicting VAA kept for this message id."""
        return {
            q.removeprefix(Q.CONFLICT_PREFIX): v
            for q, v in self.families.get(schema.QUORUM_STATE, {}).items()
            if q.startswith(Q.CONFLICT_PREFIX)
        }

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view: decoded values; bytes as ``0x`` hex."""
        families: dict[str, dict[str, Any]] = {}
        for family, columns in sorted(self.families.items()):
            families[family] = {
                q: _jsonable(decode_value(family, q, raw)) for q, raw in sorted(columns.items())
            }
        return {
            "message_id": self.key.message_id,
            "row_key": self.key.row_key,
            "families": families,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, int | str | float | bool) or value is None:
        return value
    return str(value)


class EventReader:
    """Queries over the events and index tables."""

    def __init__(self, tables: BigtableTables) -> None:
        self.tables = tables

    def get(
        self, key: MessageKey | str, families: Sequence[str] | None = None
    ) -> StoredMessage | None:
        """One message (all families, or the chosen ones); None if not stored."""
        message_key = key if isinstance(key, MessageKey) else MessageKey.parse(key)
        rows = self.tables.read_event_rows([message_key.row_key], families)
        row = rows.get(message_key.row_key)
        return None if row is None else StoredMessage(message_key, row)

    def signature_history(self, key: MessageKey | str, guardian_set_index: int) -> list[list[int]]:
        """The guardian indices of each ``VAAState`` list cell, oldest first."""
        message_key = key if isinstance(key, MessageKey) else MessageKey.parse(key)
        qualifier = schema.signatures_state_qualifier(guardian_set_index)
        row = self.tables.events.read_row(
            message_key.row_key,
            row_filter=rf.RowFilterChain(
                [
                    rf.FamilyNameRegexFilter(schema.VAA_STATE),
                    rf.ColumnQualifierRegexFilter(qualifier.encode()),
                ]
            ),
        )
        if row is None:
            return []
        cells = sorted(row.cells, key=lambda c: c.timestamp_micros)
        return [[index for index, _ in decode_signature_list(c.value)] for c in cells]

    def scan(
        self,
        chain: int,
        *,
        emitter: str | None = None,
        from_seq: int = 0,
        to_seq: int = MAX_SEQUENCE,
        limit: int | None = None,
        families: Sequence[str] | None = None,
    ) -> list[StoredMessage]:
        """Messages of one chain (optionally one emitter) with ``from_seq <= seq <= to_seq``.

        With an emitter the result is in numeric sequence order, even across 16- and
        17-20-digit sequences. Without one it is in row-key order (emitter, then key), with
        the sequence bounds applied to each row.
        """
        if emitter is not None:
            normalized = keys.normalize_emitter(emitter)
            ranges = keys.sequence_key_ranges(chain, normalized, from_seq, to_seq)
            return [
                StoredMessage(MessageKey.parse(row_key), row)
                for row_key, row in self.tables.scan_events(
                    ranges, families=families, limit=limit, sequence_width=True
                )
            ]
        prefix = keys.chain_prefix(chain)
        found: list[StoredMessage] = []
        for row_key, row in self.tables.scan_events(
            [(prefix, prefix[:-1] + ";")], families=families, end_inclusive=False
        ):
            message_key = MessageKey.parse(row_key)
            if from_seq <= message_key.sequence <= to_seq:
                found.append(StoredMessage(message_key, row))
                if limit is not None and len(found) >= limit:
                    break
        return found

    def emitters(self, chain: int | None = None) -> Iterator[tuple[int, str]]:
        """Every (chain, emitter) with a row, in row-key order (of one chain if given).

        A skip scan: one single-row read per emitter, each starting just past the previous
        emitter's keys (``;`` sorts right after ``:``), so the cost is the number of emitters,
        not of rows.
        """
        start: str | None = None if chain is None else keys.chain_prefix(chain)
        end = None if chain is None else f"{chain};"
        while True:
            first = next(iter(self.tables.scan_event_keys(start, end, limit=1)), None)
            if first is None:
                return
            key = MessageKey.parse(first)
            yield key.chain, key.emitter
            start = f"{key.chain}:{key.emitter};"

    def sequences(
        self, chain: int, emitter: str, *, from_seq: int = 0, to_seq: int = MAX_SEQUENCE
    ) -> Iterator[int]:
        """The sequences stored for one emitter within ``from_seq..to_seq``, ascending.

        Row keys only (:meth:`BigtableTables.scan_event_keys`), one key range per sequence
        width (:func:`keys.sequence_key_ranges`) with the longer keys a range also spans left out.
        """
        normalized = keys.normalize_emitter(emitter)
        for start, end in keys.sequence_key_ranges(chain, normalized, from_seq, to_seq):
            width = len(start.rsplit(":", 1)[1])
            for row_key in self.tables.scan_event_keys(start, end + "\x00"):
                sequence_text = row_key.rsplit(":", 1)[1]
                if len(sequence_text) == width:
                    yield int(sequence_text)

    def recent(
        self, chain: int, *, limit: int = 20, families: Sequence[str] | None = None
    ) -> list[StoredMessage]:
        """A chain's newest messages by VAA timestamp, newest first (via the index table)."""
        prefix = keys.recent_prefix(chain)
        entries = self.tables.scan_index(prefix, prefix[:-1] + ";", limit=limit)
        row_keys = [cells["m"].decode() for _, cells in entries if "m" in cells]
        rows = self.tables.read_event_rows(row_keys, families)
        return [StoredMessage(MessageKey.parse(k), rows[k]) for k in row_keys if k in rows]

    def by_tx(self, tx_id: str, families: Sequence[str] | None = None) -> list[StoredMessage]:
        """Messages emitted by one source transaction, in row-key order."""
        found = self.tables.read_index_rows([keys.tx_index_key(tx_id)])
        row_keys = sorted(next(iter(found.values()), {}))
        rows = self.tables.read_event_rows(row_keys, families)
        return [StoredMessage(MessageKey.parse(k), rows[k]) for k in row_keys if k in rows]

    def count_per_day(
        self, first_day: dt.date, last_day: dt.date, *, chain: int | None = None
    ) -> dict[tuple[int, str], int]:
        """Messages per (chain, ``YYYY-MM-DD``) for UTC days ``first_day..last_day``."""
        start = f"count:{first_day:%Y%m%d}:"
        end = f"count:{last_day + dt.timedelta(days=1):%Y%m%d}:"
        counts: dict[tuple[int, str], int] = {}
        for row_key, cells in self.tables.scan_index(start, end, keys_only=True):
            _, day, chain_text, _hour = row_key.split(":")
            chain_id = int(chain_text)
            if chain is not None and chain_id != chain:
                continue
            label = f"{day[:4]}-{day[4:6]}-{day[6:]}"
            counts[(chain_id, label)] = counts.get((chain_id, label), 0) + len(cells)
        return counts
