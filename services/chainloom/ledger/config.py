"""Configuration of the ledger history backend (``database.*``).

Clio picks its database from ``database.type`` and reads the driver settings from
``database.<type>``; we keep that shape so a Clio operator recognises it. Parsing is strict: an
unknown key or a value of the wrong type is refused with the dotted name of the key, because a
typo in ``replication_factor`` or ``consistency`` silently falling back to a default would only
show up as data loss later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from chainloom.ledger.errors import LedgerConfigError

BACKEND_TYPES = ("cassandra", "sqlite")
"""The values ``database.type`` accepts."""

CONSISTENCY_LEVELS = (
    "ONE",
    "TWO",
    "THREE",
    "QUORUM",
    "ALL",
    "LOCAL_QUORUM",
    "EACH_QUORUM",
    "LOCAL_ONE",
)
"""Cassandra consistency levels accepted for reads and writes."""


@dataclass(frozen=True)
class CassandraConfig:
    """``database.cassandra``: where the cluster is and how to write to it."""

    hosts: tuple[str, ...] = ("127.0.0.1",)
    """Contact points (Clio's ``contact_points``)."""

    port: int = 9042
    """Native-protocol port."""

    keyspace: str = "chainloom_ledger"
    """Keyspace holding the 13 tables (created if missing)."""

    replication_factor: int = 3
    """SimpleStrategy replication factor, used only when the keyspace is created."""

    consistency: str = "QUORUM"
    """Consistency of every read and write (the range LWT uses SERIAL on top of it)."""

    max_concurrent_writes: int = 512
    """Asynchronous writes in flight at most; the writer blocks when the bound is reached."""

    table_prefix: str = ""
    """Prefix of every table name (Clio's ``table_prefix``)."""

    protocol_version: int = 5
    """Native protocol version (Cassandra 4+ speaks 5)."""

    request_timeout: float = 10.0
    """Seconds before a single request times out (it is then retried)."""

    write_retries: int = 8
    """Retries of a timed-out or unavailable write before the ledger fails."""

    write_batch_size: int = 20
    """Statements per UNLOGGED batch (1 sends every statement on its own); Clio's default."""


@dataclass(frozen=True)
class SqliteConfig:
    """``database.sqlite``: the embedded database file."""

    path: str = "chainloom-ledger.sqlite3"
    """Path of the database file (created if missing; WAL mode)."""

    busy_timeout: float = 60.0
    """Seconds a writer waits for another writer's transaction to end."""


@dataclass(frozen=True)
class BackendConfig:
    """``database``: which backend and its settings."""

    type: str = "sqlite"
    """``cassandra`` or ``sqlite``."""

    cassandra: CassandraConfig = field(default_factory=CassandraConfig)
    """Settings used when ``type`` is ``cassandra``."""

    sqlite: SqliteConfig = field(default_factory=SqliteConfig)
    """Settings used when ``type`` is ``sqlite``."""

    read_only: bool = False
    """Never create tables nor write (Clio's ``read_only``)."""

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> BackendConfig:
        """Build from ``{"database": {...}}`` or the ``database`` mapping itself."""
        if "database" in raw:
            extra = sorted(set(raw) - {"database", "read_only"})
            if extra:
                raise LedgerConfigError(f"unknown configuration key {extra[0]!r}")
            database = raw["database"]
            if not isinstance(database, Mapping):
                raise LedgerConfigError("database: expected a mapping")
            merged = dict(database)
            if "read_only" in raw:
                merged.setdefault("read_only", raw["read_only"])
            return cls.from_mapping(merged)
        known = {"type", "cassandra", "sqlite", "read_only"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise LedgerConfigError(
                f"unknown configuration key database.{unknown[0]} "
                f"(known: {', '.join(sorted(known))})"
            )
        backend_type = raw.get("type", "sqlite")
        if not isinstance(backend_type, str):
            raise LedgerConfigError("database.type must be a string")
        config = cls(
            type=backend_type.lower(),
            cassandra=_section(CassandraConfig, raw.get("cassandra", {}), "database.cassandra"),
            sqlite=_section(SqliteConfig, raw.get("sqlite", {}), "database.sqlite"),
            read_only=_typed(raw.get("read_only", False), bool, "database.read_only"),
        )
        config.validate()
        return config

    def validate(self) -> None:
        """Refuse values no backend could run with, naming the key."""
        if self.type not in BACKEND_TYPES:
            raise LedgerConfigError(
                f"invalid database.type {self.type!r}: expected one of {', '.join(BACKEND_TYPES)}"
            )
        cassandra = self.cassandra
        if cassandra.consistency.upper() not in CONSISTENCY_LEVELS:
            raise LedgerConfigError(
                f"invalid database.cassandra.consistency {cassandra.consistency!r}: "
                f"expected one of {', '.join(CONSISTENCY_LEVELS)}"
            )
        if not cassandra.hosts:
            raise LedgerConfigError("database.cassandra.hosts must name at least one host")
        if cassandra.replication_factor < 1:
            raise LedgerConfigError("database.cassandra.replication_factor must be >= 1")
        if cassandra.write_batch_size < 1:
            raise LedgerConfigError("database.cassandra.write_batch_size must be >= 1")
        if cassandra.max_concurrent_writes < 1:
            raise LedgerConfigError("database.cassandra.max_concurrent_writes must be >= 1")
        if not cassandra.keyspace.replace("_", "").isalnum():
            raise LedgerConfigError(
                f"invalid database.cassandra.keyspace {cassandra.keyspace!r}: letters, digits, _"
            )
        if cassandra.table_prefix and not cassandra.table_prefix.replace("_", "").isalnum():
            raise LedgerConfigError(
                f"invalid database.cassandra.table_prefix {cassandra.table_prefix!r}"
            )


def _typed(value: Any, kind: type, name: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        raise LedgerConfigError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, kind):
        raise LedgerConfigError(f"{name} must be of type {kind.__name__}, got {value!r}")
    return value


_FIELD_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}


def _section(cls: type[Any], raw: Any, name: str) -> Any:
    if not isinstance(raw, Mapping):
        raise LedgerConfigError(f"{name}: expected a mapping")
    known = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise LedgerConfigError(
                f"unknown configuration key {name}.{key} (known: {', '.join(sorted(known))})"
            )
        annotation = str(known[key].type)
        if annotation.startswith("tuple"):
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(h, str) for h in items):
                raise LedgerConfigError(f"{name}.{key} must be a list of strings")
            values[key] = tuple(items)
        else:
            values[key] = _typed(value, _FIELD_TYPES[annotation], f"{name}.{key}")
    return cls(**values)
