"""``flush_writes`` on SQLite: the rows are committed for every connection, the range is not
moved, so readers still see nothing of the ledger until ``finish_writes``."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sqlite3
from pathlib import Path

from chainloom.ledger.service import make_backend
from chainloom.ledger.types import FIRST_KEY, LAST_KEY, LedgerHeader


def _header(sequence: int) -> LedgerHeader:
    header = LedgerHeader(
        sequence=sequence,
        total_drops=10**17,
        parent_hash=hashlib.sha256(sequence.to_bytes(4, "big")).digest(),
        transaction_hash=bytes(32),
        account_hash=bytes(32),
        parent_close_time=0,
        close_time=0,
        close_time_resolution=10,
        close_flags=0,
        hash=b"",
    )
    return dataclasses.replace(header, hash=header.compute_hash())


def test_flushed_rows_are_durable_but_invisible_until_finish_writes(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    key = bytes([0x40]) * 32
    writer = make_backend({"type": "sqlite", "sqlite": {"path": str(path)}})
    try:
        header = _header(7)
        writer.start_writes()
        writer.write_ledger(header, header.serialize(include_hash=True))
        writer.write_successor(FIRST_KEY, 7, key)
        writer.write_successor(key, 7, LAST_KEY)
        writer.write_ledger_object(key, 7, b"\x01")
        writer.flush_writes()
        writer.flush_writes()  # nothing pending: a no-op

        with contextlib.closing(sqlite3.connect(path)) as db:  # another connection
            assert db.execute("SELECT COUNT(*) FROM successor").fetchone()[0] == 2
            assert db.execute("SELECT COUNT(*) FROM ledger_range").fetchone()[0] == 0
        reader = make_backend({"type": "sqlite", "sqlite": {"path": str(path)}, "read_only": True})
        try:
            assert reader.hard_fetch_ledger_range() is None
            assert reader.fetch_ledger_by_sequence(7) is None
        finally:
            reader.close()

        assert writer.finish_writes(7)
        reader = make_backend({"type": "sqlite", "sqlite": {"path": str(path)}, "read_only": True})
        try:
            assert reader.fetch_ledger_by_sequence(7) == header
            assert reader.fetch_ledger_object(key, 7) == b"\x01"
        finally:
            reader.close()
    finally:
        writer.close()
