"""Cassandra specifics: Clio's exact schema, configuration, bounded writes, failed writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainloom.ledger.cassandra import CassandraBackend
from chainloom.ledger.cassandra_schema import TABLE_NAMES
from chainloom.ledger.config import DatabaseSettings
from chainloom.ledger.errors import BackendError
from chainloom.ledger.service import make_backend
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.types import LedgerRange
from chainloom.settings import CassandraSettings
from tests.integration.ledger.test_conformance import key, make_header, walk, write_ledger

# XRPLF/clio src/data/cassandra/Schema.hpp: columns, partition key, clustering columns (ordered).
EXPECTED_TABLES = {
    "objects": (
        {"key": "blob", "sequence": "bigint", "object": "blob"},
        ["key"],
        [("sequence", "desc")],
    ),
    "transactions": (
        {
            "hash": "blob",
            "ledger_sequence": "bigint",
            "date": "bigint",
            "transaction": "blob",
            "metadata": "blob",
        },
        ["hash"],
        [],
    ),
    "ledger_transactions": (
        {"ledger_sequence": "bigint", "hash": "blob"},
        ["ledger_sequence"],
        [("hash", "asc")],
    ),
    "successor": ({"key": "blob", "seq": "bigint", "next": "blob"}, ["key"], [("seq", "asc")]),
    "diff": ({"seq": "bigint", "key": "blob"}, ["seq"], [("key", "asc")]),
    "account_tx": (
        {"account": "blob", "seq_idx": "frozen<tuple<bigint, bigint>>", "hash": "blob"},
        ["account"],
        [("seq_idx", "desc")],
    ),
    "ledgers": ({"sequence": "bigint", "header": "blob"}, ["sequence"], []),
    "ledger_hashes": ({"hash": "blob", "sequence": "bigint"}, ["hash"], []),
    "ledger_range": ({"is_latest": "boolean", "sequence": "bigint"}, ["is_latest"], []),
    "nf_tokens": (
        {"token_id": "blob", "sequence": "bigint", "owner": "blob", "is_burned": "boolean"},
        ["token_id"],
        [("sequence", "desc")],
    ),
    "issuer_nf_tokens_v2": (
        {"issuer": "blob", "taxon": "bigint", "token_id": "blob"},
        ["issuer"],
        [("taxon", "asc"), ("token_id", "asc")],
    ),
    "nf_token_uris": (
        {"token_id": "blob", "sequence": "bigint", "uri": "blob"},
        ["token_id"],
        [("sequence", "desc")],
    ),
    "nf_token_transactions": (
        {"token_id": "blob", "seq_idx": "frozen<tuple<bigint, bigint>>", "hash": "blob"},
        ["token_id"],
        [("seq_idx", "desc")],
    ),
    "mp_token_holders": ({"mpt_id": "blob", "holder": "blob"}, ["mpt_id"], [("holder", "asc")]),
}


@pytest.fixture
def own_keyspace(
    cassandra_address: tuple[str, int], cassandra_keyspace: str
) -> Iterator[DatabaseSettings]:
    """A configuration naming a keyspace that does not exist yet (the backend creates it)."""
    host, port = cassandra_address
    config = DatabaseSettings(
        type="cassandra",
        cassandra=CassandraSettings(
            hosts=(host,), port=port, keyspace=f"{cassandra_keyspace}_own", replication_factor=1
        ),
    )
    yield config
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=5)
    try:
        cluster.connect().execute(
            f"DROP KEYSPACE IF EXISTS {config.cassandra.keyspace}", timeout=120
        )
    finally:
        cluster.shutdown()


def test_the_13_tables_and_the_keyspace_are_exactly_clios(own_keyspace: DatabaseSettings):
    backend = make_backend(own_keyspace)
    assert isinstance(backend, CassandraBackend)
    try:
        session = backend._session
        name = own_keyspace.cassandra.keyspace
        keyspace = session.execute(
            "SELECT replication, durable_writes FROM system_schema.keyspaces "
            "WHERE keyspace_name = %s",
            (name,),
        ).one()
        assert keyspace.durable_writes is True
        assert keyspace.replication["class"].endswith("SimpleStrategy")
        assert keyspace.replication["replication_factor"] == "1"
        columns = list(
            session.execute(
                "SELECT table_name, column_name, type, kind, clustering_order, position "
                "FROM system_schema.columns WHERE keyspace_name = %s",
                (name,),
            )
        )
        tables: dict[str, dict[str, str]] = {}
        partition: dict[str, list[str]] = {}
        clustering: dict[str, list[tuple[int, str, str]]] = {}
        for column in columns:
            tables.setdefault(column.table_name, {})[column.column_name] = column.type
            if column.kind == "partition_key":
                partition.setdefault(column.table_name, []).append(column.column_name)
            if column.kind == "clustering":
                clustering.setdefault(column.table_name, []).append(
                    (column.position, column.column_name, column.clustering_order)
                )
        assert sorted(tables) == sorted(TABLE_NAMES)
        assert len(TABLE_NAMES) == 14
        for table, (expected_columns, partition_key, clustering_key) in EXPECTED_TABLES.items():
            assert tables[table] == expected_columns, table
            assert partition[table] == partition_key, table
            assert [(c, o) for _, c, o in sorted(clustering.get(table, []))] == clustering_key, (
                table
            )
        assert backend.consistency == "QUORUM"
    finally:
        backend.close()


def test_consistency_comes_from_the_configuration(cassandra_address, cassandra_keyspace):
    host, port = cassandra_address
    config = CassandraSettings(
        hosts=(host,), port=port, keyspace=cassandra_keyspace, consistency="ONE"
    )
    backend = CassandraBackend(config)
    try:
        assert backend.consistency == "ONE"
    finally:
        backend.close()


def test_in_flight_writes_stay_within_the_bound(cassandra_address, cassandra_keyspace):
    host, port = cassandra_address
    config = CassandraSettings(
        hosts=(host,), port=port, keyspace=cassandra_keyspace, max_concurrent_writes=4
    )
    backend = CassandraBackend(config)
    try:
        state = {key(n): b"object-%d" % n for n in range(400)}
        assert write_ledger(backend, SuccessorTracker(), 9, state, initial=True)
        stats = backend.write_stats
        assert stats["started"] >= 2 * len(state)
        assert 2 <= stats["peak_in_flight"] <= 4
        objects, _ = walk(backend, 9, 1000)
        assert {o.key: o.blob for o in objects} == state
    finally:
        backend.close()


def test_a_rejected_write_keeps_the_ledger_invisible(cassandra_address, cassandra_keyspace):
    host, port = cassandra_address
    config = CassandraSettings(hosts=(host,), port=port, keyspace=cassandra_keyspace)
    backend = CassandraBackend(config)
    reader = CassandraBackend(config)
    try:
        assert write_ledger(backend, SuccessorTracker(), 4, {key(1): b"one"}, initial=True)
        header = make_header(5)
        backend.write_ledger(header, header.serialize())
        backend.write_ledger_object(key(1), 5, b"x" * (5 * 1024 * 1024))  # over the message limit
        with pytest.raises(BackendError, match="failed after retries; the ledger stays invisible"):
            backend.finish_writes(5)
        assert backend.fetch_ledger_range() == LedgerRange(4, 4)
        assert reader.hard_fetch_ledger_range() == LedgerRange(4, 4)
        assert reader.fetch_ledger_by_sequence(5) is None
        # Writing the ledger again with a valid object then completes it.
        backend.write_ledger(header, header.serialize())
        backend.write_ledger_object(key(1), 5, b"two")
        assert backend.finish_writes(5) is True
        assert reader.hard_fetch_ledger_range() == LedgerRange(4, 5)
        assert reader.fetch_ledger_object(key(1), 5) == b"two"
    finally:
        backend.close()
        reader.close()


def test_an_unreachable_cluster_is_a_clear_error():
    config = CassandraSettings(hosts=("127.0.0.1",), port=1, keyspace="nowhere")
    with pytest.raises(
        BackendError, match=r"cannot open Cassandra keyspace nowhere at 127\.0\.0\.1:1"
    ):
        CassandraBackend(config)
