"""A Cassandra that refused us, told apart from one that is down (no server)."""

from __future__ import annotations

import ssl

import pytest
from cassandra import AuthenticationFailed
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionShutdown

from chainloom.ledger.cassandra_session import refusal
from chainloom.settings import CassandraSettings
from chainloom.settings.parts import CassandraTlsSettings

PLAIN = CassandraSettings(username="etl", password_file="/p")
SECURED = PLAIN.model_copy(update={"tls": CassandraTlsSettings(enabled=True)})


def _failed(*errors: Exception) -> NoHostAvailable:
    return NoHostAvailable(
        "Unable to connect to any servers", {f"10.0.0.{i}:9042": e for i, e in enumerate(errors)}
    )


@pytest.mark.parametrize(
    ("settings", "error", "cause"),
    [
        (PLAIN, AuthenticationFailed("bad credentials"), "credentials of role 'etl' were refused"),
        (CassandraSettings(), AuthenticationFailed("x"), "asks for a login"),
        (
            SECURED,
            PermissionError(
                1,
                "Last error: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                "unable to get local issuer certificate (_ssl.c:1006)",
            ),
            "not accepted: unable to get local issuer certificate",
        ),
        (SECURED, ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version"), "plain text"),
        (PLAIN, ConnectionResetError(104, "Connection reset by peer"), "set tls.enabled"),
        (PLAIN, ConnectionShutdown("closed"), "set tls.enabled"),
    ],
)
def test_refusals(settings: CassandraSettings, error: Exception, cause: str) -> None:
    assert cause in str(refusal(_failed(error, error), settings))


def test_outages_and_mixtures_are_not_refusals() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    assert refusal(_failed(refused), PLAIN) is None
    assert refusal(_failed(AuthenticationFailed("x"), refused), PLAIN) is None  # one may return
    assert refusal(_failed(ConnectionResetError(104, "reset")), SECURED) is None
    assert refusal(_failed(), PLAIN) is None
