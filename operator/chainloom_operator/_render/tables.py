"""A BackendTable's schema checks as pure diffs.

The database adapters (:mod:`chainloom_operator._backends`) create what is missing with the
services' own schema code (:func:`chainloom.eventstore.bigtable.ensure_schema`,
:func:`chainloom.ledger.cassandra_schema.schema_statements`) and read back what is there; this
module says how what is there differs from what chainloom expects. Drift is reported, never repaired
by dropping anything: a missing table or family is created, an unexpected one is only named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chainloom.settings import BigtableSettings, CassandraSettings
from chainloom_operator.models import Drift


@dataclass(frozen=True, slots=True)
class LiveKeyspace:
    """What Cassandra's ``system_schema`` says about one keyspace."""

    replication: Mapping[str, str]
    """The keyspace's replication options (``class``, ``replication_factor``, ...)."""
    tables: frozenset[str]
    """Names of its tables."""


def bigtable_tables(settings: BigtableSettings) -> tuple[str, ...]:
    """The tables a Bigtable BackendTable manages: events, then index."""
    return (settings.table, settings.index_table)


def cassandra_tables(settings: CassandraSettings, names: Sequence[str]) -> tuple[str, ...]:
    """Clio's tables (``names``) with the settings' table prefix."""
    return tuple(f"{settings.table_prefix}{name}" for name in names)


def bigtable_drift(
    found: Iterable[tuple[str, str, str, str | None, str | None]],
) -> tuple[Drift, ...]:
    """``(table, family, problem, expected, actual)`` rows of the event store's report as Drift."""
    return tuple(
        Drift(table=table, item=family, problem=problem, expected=expected, actual=actual)
        for table, family, problem, expected, actual in found
    )


def cassandra_drift(
    settings: CassandraSettings, names: Sequence[str], live: LiveKeyspace | None
) -> tuple[Drift, ...]:
    """How the live keyspace differs from Clio's schema under ``settings``."""
    keyspace = settings.keyspace
    if live is None:
        return (Drift(table=keyspace, item="keyspace", problem="missing", expected=keyspace),)
    drift = []
    expected = cassandra_tables(settings, names)
    for table in expected:
        if table not in live.tables:
            drift.append(Drift(table=f"{keyspace}.{table}", item="table", problem="missing"))
    drift.extend(
        Drift(table=f"{keyspace}.{table}", item="table", problem="unexpected")
        for table in sorted(live.tables - set(expected))
        if table.startswith(settings.table_prefix)
    )
    drift.extend(replication_drift(settings, live.replication))
    return tuple(drift)


def replication_drift(settings: CassandraSettings, live: Mapping[str, str]) -> tuple[Drift, ...]:
    """How a keyspace's live replication differs from the settings' strategy and factors
    (``system_schema`` names the class in full: ``org.apache.cassandra.locator.X``)."""
    keyspace = settings.keyspace
    expected = settings.replication()
    live_class = live.get("class", "").rsplit(".", 1)[-1]
    if live_class and live_class != expected["class"]:
        return (
            Drift(
                table=keyspace,
                item="class",
                problem="replication",
                expected=expected["class"],
                actual=live_class,
            ),
        )
    return tuple(
        Drift(
            table=keyspace,
            item=key,
            problem="replication",
            expected=value,
            actual=live.get(key),
        )
        for key, value in expected.items()
        if key != "class" and live.get(key) != value and (live_class or key in live)
    )
