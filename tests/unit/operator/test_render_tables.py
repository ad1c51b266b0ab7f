"""BackendTable schema diffs (pure)."""

from __future__ import annotations

from chainloom.settings import CassandraSettings
from chainloom_operator._render.tables import LiveKeyspace, cassandra_drift

NAMES = ("objects", "ledgers")
SETTINGS = CassandraSettings(keyspace="ks", replication_factor=1)


def test_missing_keyspace() -> None:
    (drift,) = cassandra_drift(SETTINGS, NAMES, None)
    assert (drift.table, drift.item, drift.problem) == ("ks", "keyspace", "missing")


def test_in_sync() -> None:
    live = LiveKeyspace({"replication_factor": "1"}, frozenset(NAMES))
    assert cassandra_drift(SETTINGS, NAMES, live) == ()


def test_missing_unexpected_and_replication() -> None:
    live = LiveKeyspace({"replication_factor": "3"}, frozenset({"objects", "extra"}))
    found = [(d.table, d.item, d.problem, d.expected, d.actual)
             for d in cassandra_drift(SETTINGS, NAMES, live)]  # fmt: skip
    assert found == [
        ("ks.ledgers", "table", "missing", None, None),
        ("ks.extra", "table", "unexpected", None, None),
        ("ks", "replication_factor", "replication", "1", "3"),
    ]


def test_prefix_scopes_the_tables() -> None:
    settings = CassandraSettings(keyspace="ks", replication_factor=1, table_prefix="a_")
    live = LiveKeyspace({"replication_factor": "1"}, frozenset({"a_objects", "a_ledgers", "b_x"}))
    assert cassandra_drift(settings, NAMES, live) == ()


def test_network_topology_drift_per_datacenter() -> None:
    settings = CassandraSettings(
        keyspace="ks",
        replication_strategy="NetworkTopologyStrategy",
        datacenter_replication={"dc1": 3, "dc2": 2},
    )
    live = LiveKeyspace(
        {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3"},
        frozenset(NAMES),
    )
    found = [(d.item, d.expected, d.actual) for d in cassandra_drift(settings, NAMES, live)]
    assert found == [("dc2", "2", None)]


def test_a_different_strategy_is_one_drift() -> None:
    live = LiveKeyspace(
        {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "1"},
        frozenset(NAMES),
    )
    found = [(d.item, d.expected, d.actual) for d in cassandra_drift(SETTINGS, NAMES, live)]
    assert found == [("class", "SimpleStrategy", "NetworkTopologyStrategy")]
