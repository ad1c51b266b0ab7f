"""Connecting to the ledger's Cassandra (or ScyllaDB) cluster from its settings.

One way to build the driver's cluster and session for everyone who talks to the ledger's
database (the backend, the ETL through it, the Spark ledger-load job through it, the operator
creating and dropping a BackendTable's keyspace): contact points, port, protocol version, the
consistency and request timeout of every statement, token-aware routing. It takes the whole
:class:`~chainloom.settings.CassandraSettings`, so a setting added there (credentials, TLS)
reaches every connection at once. Errors are the driver's; each caller says what they mean
for it (an outage to retry, a setting to fix).
"""

from __future__ import annotations

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import RoundRobinPolicy, TokenAwarePolicy

from chainloom.ledger.cassandra_schema import schema_statements
from chainloom.settings import CassandraSettings

SCHEMA_TIMEOUT = 60.0
"""Seconds a schema statement may take at least (they wait for schema agreement)."""


def endpoint(settings: CassandraSettings) -> str:
    """``host,host:port`` of the cluster, for messages."""
    return f"{','.join(settings.hosts)}:{settings.port}"


def consistency_of(settings: CassandraSettings) -> int:
    """The driver's value of ``settings.consistency``."""
    return int(ConsistencyLevel.name_to_value[settings.consistency.upper()])


def connect(settings: CassandraSettings) -> tuple[Cluster, Session]:
    """A connected cluster and session; the cluster is shut down again if connecting fails.

    Every statement runs at ``consistency`` (conditional updates at SERIAL) with
    ``request_timeout`` unless it says otherwise.
    """
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(RoundRobinPolicy()),
        consistency_level=consistency_of(settings),
        serial_consistency_level=ConsistencyLevel.SERIAL,
        request_timeout=settings.request_timeout,
    )
    cluster = Cluster(
        list(settings.hosts),
        port=settings.port,
        protocol_version=settings.protocol_version,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    try:
        return cluster, cluster.connect()
    except BaseException:
        cluster.shutdown()
        raise


def create_schema(
    session: Session, settings: CassandraSettings, timeout: float = SCHEMA_TIMEOUT
) -> None:
    """Create the keyspace and the tables that are missing (``IF NOT EXISTS``: never alters)."""
    for statement in schema_statements(
        settings.keyspace, settings.replication_factor, settings.table_prefix
    ):
        session.execute(statement, timeout=max(settings.request_timeout, timeout))
