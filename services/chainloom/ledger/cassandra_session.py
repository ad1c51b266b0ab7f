"""Connecting to the ledger's Cassandra (or ScyllaDB) cluster from its settings.

One way to build the driver's cluster and session for everyone who talks to the ledger's
database (the backend, the ETL through it, the Spark ledger-load job through it, the operator
creating and dropping a BackendTable's keyspace): contact points, port, protocol version, the
consistency and request timeout of every statement, token-aware routing (inside the local
datacenter when one is named), the role's password read from its file and client TLS. It takes
the whole :class:`~chainloom.settings.CassandraSettings`, so a setting added there reaches
every connection at once.

Outages stay the driver's errors; each caller says what they mean for it (an outage to retry).
A cluster that answered but refused us (the credentials, our certificate or its certificate, a
handshake in the wrong protocol) is a :class:`~chainloom.ledger.errors.CassandraRefusedError`
naming the cause: retrying will not help, a setting must change.
"""

from __future__ import annotations

import ssl

from cassandra import AuthenticationFailed, ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    Session,
)
from cassandra.connection import ConnectionShutdown
from cassandra.policies import (
    DCAwareRoundRobinPolicy,
    LoadBalancingPolicy,
    RoundRobinPolicy,
    TokenAwarePolicy,
)

from chainloom.credentials import client_context, read_password
from chainloom.ledger.cassandra_schema import schema_statements
from chainloom.ledger.errors import CassandraRefusedError
from chainloom.settings import CassandraSettings

SETTING = "database.cassandra"
"""Where the settings live in the ledger's model, for messages."""

SCHEMA_TIMEOUT = 60.0
"""Seconds a schema statement may take at least (they wait for schema agreement)."""


def endpoint(settings: CassandraSettings) -> str:
    """``host,host:port`` of the cluster, for messages."""
    return f"{','.join(settings.hosts)}:{settings.port}"


def consistency_of(settings: CassandraSettings) -> int:
    """The driver's value of ``settings.consistency``."""
    return int(ConsistencyLevel.name_to_value[settings.consistency.upper()])


def load_balancing(settings: CassandraSettings) -> LoadBalancingPolicy:
    """Token-aware routing over the local datacenter's nodes (``local_datacenter``), else
    over every node."""
    if settings.local_datacenter is not None:
        return TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=settings.local_datacenter))
    return TokenAwarePolicy(RoundRobinPolicy())


def connect(settings: CassandraSettings) -> tuple[Cluster, Session]:
    """A connected cluster and session; the cluster is shut down again if connecting fails.

    Every statement runs at ``consistency`` (conditional updates at SERIAL) with
    ``request_timeout`` unless it says otherwise. Raises
    :class:`~chainloom.credentials.CredentialsError` for an unusable password or TLS file,
    :class:`CassandraRefusedError` when every contact point refused us, and the driver's
    errors for an outage.
    """
    profile = ExecutionProfile(
        load_balancing_policy=load_balancing(settings),
        consistency_level=consistency_of(settings),
        serial_consistency_level=ConsistencyLevel.SERIAL,
        request_timeout=settings.request_timeout,
    )
    auth = None
    if settings.username is not None and settings.password_file is not None:
        password = read_password(settings.password_file, f"{SETTING}.password_file")
        auth = PlainTextAuthProvider(username=settings.username, password=password)
    context = client_context(settings.tls, f"{SETTING}.tls") if settings.tls.enabled else None
    cluster = Cluster(
        list(settings.hosts),
        port=settings.port,
        protocol_version=settings.protocol_version,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        auth_provider=auth,
        ssl_context=context,
    )
    try:
        return cluster, cluster.connect()
    except NoHostAvailable as error:
        cause = refusal(error, settings)
        cluster.shutdown()
        if cause is None:
            raise
    except BaseException:
        cluster.shutdown()
        raise
    # Raised outside the handler, so the refusal is not taken for the driver's outage.
    raise CassandraRefusedError(
        f"Cassandra at {endpoint(settings)} refused the connection: {cause}"
    )


def refusal(error: NoHostAvailable, settings: CassandraSettings) -> str | None:
    """What refused us, when every contact point answered with a refusal rather than being
    unreachable; None for an outage (or a mixture: some node may come back)."""
    causes = [_refusal_cause(failure, settings) for failure in error.errors.values()]
    if not causes or any(cause is None for cause in causes):
        return None
    return str(causes[0])


def _refusal_cause(failure: object, settings: CassandraSettings) -> str | None:
    if isinstance(failure, AuthenticationFailed):
        if settings.username is None:
            return "the cluster asks for a login (set username and password_file)"
        return f"the credentials of role {settings.username!r} were refused"
    return _tls_refusal(failure, settings)


def _tls_refusal(failure: object, settings: CassandraSettings) -> str | None:
    # The driver reports a failed handshake as the ssl module's error or, retried over the
    # host's addresses, as an OSError quoting it: its text is what both have in common.
    text = str(failure)
    if isinstance(failure, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
        reason = getattr(failure, "verify_message", None) or _verify_reason(text)
        return f"its TLS certificate was not accepted: {reason}"
    if "WRONG_VERSION_NUMBER" in text and settings.tls.enabled:
        return "TLS was refused (the port speaks plain text: is client encryption off?)"
    if isinstance(failure, ssl.SSLError):
        return f"the TLS handshake failed: {failure.reason or failure}"
    if isinstance(failure, ConnectionShutdown | ConnectionResetError) and not settings.tls.enabled:
        # A TLS-only port drops a client that starts in plain text before answering it.
        return "it closed the connection at once (it requires TLS? set tls.enabled)"
    return None


def _verify_reason(text: str) -> str:
    """``unable to get local issuer certificate`` out of an OpenSSL verification message."""
    _, _, reason = text.partition("certificate verify failed: ")
    return reason.split(" (_ssl", 1)[0].rstrip(")'\"") or "verification failed"


def create_schema(
    session: Session, settings: CassandraSettings, timeout: float = SCHEMA_TIMEOUT
) -> None:
    """Create the keyspace and the tables that are missing (``IF NOT EXISTS``: never alters)."""
    for statement in schema_statements(
        settings.keyspace, settings.replication(), settings.table_prefix
    ):
        session.execute(statement, timeout=max(settings.request_timeout, timeout))
