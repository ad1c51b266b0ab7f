"""Creating, checking and dropping a BackendTable's schema with the services' own code.

Bigtable goes through the event store's administration functions (create missing tables and
families, report drift, never alter what exists); Cassandra through the ledger's own
connection and schema modules (:mod:`chainloom.ledger.cassandra_session`, Clio's tables from
:mod:`chainloom.ledger.cassandra_schema`, ``IF NOT EXISTS``) and ``system_schema`` for what is
there. How the live schema differs is decided by the pure diffs in
:mod:`chainloom_operator._render.tables`. Every outage becomes a
:class:`~chainloom_operator.errors.BackendUnavailableError`, which the handlers retry with
backoff; a configuration the database refuses becomes a
:class:`~chainloom_operator.errors.SpecError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cassandra import DriverException
from cassandra.cluster import NoHostAvailable, Session

from chainloom.credentials import CredentialsError
from chainloom.eventstore import bigtable as store
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import EventStoreError, StoreUnavailableError
from chainloom.eventstore.service import locate
from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.ledger.cassandra_session import connect, create_schema, endpoint
from chainloom.ledger.errors import CassandraRefusedError
from chainloom.settings import BigtableSettings, CassandraSettings
from chainloom_operator._render.tables import (
    LiveKeyspace,
    bigtable_drift,
    bigtable_tables,
    cassandra_drift,
    cassandra_tables,
)
from chainloom_operator.errors import BackendUnavailableError, SpecError
from chainloom_operator.models import BackendTableSpec, Drift

SCHEMA_TIMEOUT = 120.0
"""Seconds a schema statement may take (they wait for schema agreement)."""


@dataclass(frozen=True, slots=True)
class SchemaOutcome:
    """What one reconcile of a BackendTable found."""

    tables: tuple[str, ...]
    """The tables chainloom manages for this resource."""
    created: tuple[str, ...]
    """Tables this call created."""
    drift: tuple[Drift, ...]
    """Differences that were left as they are."""


def ensure(spec: BackendTableSpec) -> SchemaOutcome:
    """Create what is missing (idempotent) and report what differs."""
    if spec.bigtable is not None:
        return _ensure_bigtable(spec.bigtable)
    assert spec.cassandra is not None
    return _ensure_cassandra(spec.cassandra)


def drop(spec: BackendTableSpec) -> None:
    """Drop the tables (Bigtable) or the keyspace (Cassandra): deletionPolicy Delete only."""
    if spec.bigtable is not None:
        with _bigtable_errors():
            store.drop_tables(_located(spec.bigtable))
        return
    assert spec.cassandra is not None
    with _session(spec.cassandra) as session:
        session.execute(
            f"DROP KEYSPACE IF EXISTS {spec.cassandra.keyspace}", timeout=SCHEMA_TIMEOUT
        )


def _located(settings: BigtableSettings) -> BigtableSettings:
    try:
        return locate(EventStoreSettings(bigtable=settings))
    except EventStoreError as error:
        raise SpecError(str(error)) from None


@contextmanager
def _bigtable_errors() -> Iterator[None]:
    try:
        yield
    except StoreUnavailableError as error:
        raise BackendUnavailableError(str(error)) from None
    except (EventStoreError, CredentialsError) as error:
        raise SpecError(str(error)) from None


def _ensure_bigtable(settings: BigtableSettings) -> SchemaOutcome:
    located = _located(settings)
    with _bigtable_errors():
        report = store.ensure_schema(located)
    found = [(d.table, d.family, d.problem, d.expected, d.actual) for d in report.drift]
    return SchemaOutcome(bigtable_tables(located), report.created_tables, bigtable_drift(found))


@contextmanager
def _session(settings: CassandraSettings) -> Iterator[Session]:
    where = endpoint(settings)
    try:
        cluster, session = connect(settings)
    except (CassandraRefusedError, CredentialsError) as error:
        # Retried like an outage: a Secret mounted into the operator's pod may be rotated or
        # appear later; the message says what to fix.
        raise BackendUnavailableError(str(error)) from None
    except (NoHostAvailable, DriverException, OSError) as error:
        raise BackendUnavailableError(f"Cassandra at {where} unreachable: {error}") from None
    try:
        yield session
    except (NoHostAvailable, DriverException) as error:
        raise BackendUnavailableError(f"Cassandra at {where}: {error}") from None
    finally:
        cluster.shutdown()


def _live_keyspace(session: Session, keyspace: str) -> LiveKeyspace | None:
    rows: Any = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
    )
    row = rows.one()
    if row is None:
        return None
    tables = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
    )
    return LiveKeyspace(dict(row.replication), frozenset(t.table_name for t in tables))


def _ensure_cassandra(settings: CassandraSettings) -> SchemaOutcome:
    expected = cassandra_tables(settings, TABLE_NAMES)
    with _session(settings) as session:
        before = _live_keyspace(session, settings.keyspace)
        create_schema(session, settings, SCHEMA_TIMEOUT)
        after = _live_keyspace(session, settings.keyspace)
    existing = before.tables if before is not None else frozenset()
    created = tuple(t for t in expected if t not in existing)
    tables = tuple(f"{settings.keyspace}.{t}" for t in expected)
    created_names = tuple(f"{settings.keyspace}.{t}" for t in created)
    return SchemaOutcome(tables, created_names, cassandra_drift(settings, TABLE_NAMES, after))
