"""The backend factory and configuration, and the pure helpers the interface shares (the book
walk's are in ``test_books``)."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from chainloom.ledger.backend import range_from_rows
from chainloom.ledger.config import DatabaseSettings
from chainloom.ledger.errors import DatabaseFileError, LedgerConfigError
from chainloom.ledger.service import make_backend
from chainloom.ledger.sqlite import SqliteBackend
from chainloom.ledger.types import LedgerRange
from chainloom.settings import CassandraSettings


def test_unknown_database_type_is_a_clear_error(tmp_path):
    with pytest.raises(LedgerConfigError, match=r"database\.type: .*'cassandra' or 'sqlite'"):
        make_backend({"database": {"type": "postgres"}})
    with pytest.raises(ValidationError, match="type"):
        DatabaseSettings(type="mysql")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "sqlite", "sqlit": {}}, "database.sqlit: unknown key"),
        (
            {"type": "cassandra", "cassandra": {"replication": 3}},
            "database.cassandra.replication: unknown key",
        ),
        ({"type": "cassandra", "cassandra": {"consistency": "MOST"}}, "consistency: .*'MOST'"),
        ({"type": "cassandra", "cassandra": {"port": "x"}}, "database.cassandra.port: "),
        ({"type": "cassandra", "cassandra": {"port": 70000}}, "database.cassandra.port: "),
        ({"type": "cassandra", "cassandra": {"hosts": [1]}}, r"database.cassandra.hosts\[0\]"),
        ({"type": "cassandra", "cassandra": {"hosts": []}}, "database.cassandra.hosts"),
        ({"type": "cassandra", "cassandra": {"keyspace": "a-b"}}, "keyspace: .*'a-b'"),
        ({"type": "cassandra", "cassandra": {"max_concurrent_writes": 0}}, "max_concurrent"),
        ({"type": 3}, "database.type: "),
        ({"database": {"type": "sqlite"}, "other": 1}, "other: unknown key"),
    ],
)
def test_bad_configuration_names_the_key(raw, message):
    with pytest.raises(LedgerConfigError, match=message):
        DatabaseSettings.from_mapping(raw)


def test_configuration_defaults_and_parsing():
    config = DatabaseSettings.from_mapping(
        {
            "database": {
                "type": "Cassandra",
                "cassandra": {"hosts": ["db1"], "port": 9043, "request_timeout": 5},
                "read_only": True,
            },
        }
    )
    assert config.type == "cassandra"
    assert config.read_only is True
    assert config.cassandra == CassandraSettings(hosts=("db1",), port=9043, request_timeout=5.0)
    assert config.cassandra.consistency == "QUORUM"
    assert DatabaseSettings().type == "sqlite"


def test_factory_builds_sqlite_from_a_mapping(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    backend = make_backend({"database": {"type": "sqlite", "sqlite": {"path": str(path)}}})
    try:
        assert isinstance(backend, SqliteBackend)
        assert backend.fetch_ledger_range() is None
        assert path.exists()
    finally:
        backend.close()


def test_a_successor_cycle_is_reported_not_walked_forever(tmp_path):
    from chainloom.ledger.errors import LedgerCorruptionError
    from chainloom.ledger.types import FIRST_KEY, LedgerHeader

    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "c.db")}})
    try:
        header = LedgerHeader(1, 0, bytes(32), bytes(32), bytes(32), 0, 0, 10, 0, b"")
        header = dataclasses.replace(header, hash=header.compute_hash())
        backend.write_ledger(header, header.serialize())
        low, high = b"\x01" * 32, b"\x02" * 32
        for row_key, next_key in ((FIRST_KEY, low), (low, high), (high, low)):
            backend.write_successor(row_key, 1, next_key)
        backend.write_ledger_object(low, 1, b"a")
        backend.write_ledger_object(high, 1, b"b")
        assert backend.finish_writes(1)
        with pytest.raises(LedgerCorruptionError, match="goes backward"):
            backend.fetch_ledger_page(None, 1, 10)
    finally:
        backend.close()


def test_read_only_sqlite_reads_but_refuses_writes(tmp_path):
    from chainloom.ledger.errors import BackendError

    path = tmp_path / "ro.db"
    make_backend({"type": "sqlite", "sqlite": {"path": str(path)}}).close()
    reader = make_backend(
        {"database": {"type": "sqlite", "sqlite": {"path": str(path)}, "read_only": True}}
    )
    try:
        assert reader.fetch_ledger_range() is None
        with pytest.raises(BackendError, match="opened read-only"):
            reader.write_ledger_object(b"\x01" * 32, 1, b"x")
    finally:
        reader.close()
    # A file that cannot be opened is the caller's to fix (exit 2), not an outage.
    with pytest.raises(DatabaseFileError, match="cannot open the SQLite ledger database"):
        make_backend(
            {"type": "sqlite", "sqlite": {"path": str(tmp_path / "none.db")}, "read_only": True}
        )
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(DatabaseFileError, match="cannot open the SQLite ledger database"):
        make_backend({"type": "sqlite", "sqlite": {"path": str(blocker / "l.db")}})


def test_write_batch_size_must_be_positive():
    with pytest.raises(LedgerConfigError, match="write_batch_size"):
        DatabaseSettings.from_mapping({"type": "cassandra", "cassandra": {"write_batch_size": 0}})


def test_the_range_rows_give_the_range_and_one_row_alone_is_both_ends():
    assert range_from_rows(None, None) is None
    assert range_from_rows(5, 9) == LedgerRange(5, 9)
    assert range_from_rows(None, 9) == LedgerRange(9, 9)
    assert range_from_rows(5, None) == LedgerRange(5, 5)
    assert range_from_rows(9, 5) == LedgerRange(5, 9)
