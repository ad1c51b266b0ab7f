"""Redis clients from the settings, and refusals told apart from outages (no server)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import redis

from chainloom.credentials import CredentialsError
from chainloom.redis_client import connect_options, first_contact_refusal, redis_client, refusal
from chainloom.settings import RedisSettings


def test_a_plain_url_gets_only_timeouts() -> None:
    assert connect_options(RedisSettings()) == {
        "socket_connect_timeout": 5.0,
        "socket_timeout": 10.0,
    }


def test_user_password_file_and_tls(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\n")
    settings = RedisSettings.model_validate(
        {
            "url": "rediss://127.0.0.1:6380/2",
            "username": "relayer",
            "password_file": str(tmp_path / "pw"),
            "tls": {"check_hostname": False},
        }
    )
    options = connect_options(settings)
    assert options["username"] == "relayer"
    assert options["password"] == "s3cret"
    assert options["ssl_cert_reqs"] == "required"
    assert options["ssl_check_hostname"] is False
    client = redis_client(settings)
    assert issubclass(client.connection_pool.connection_class, redis.SSLConnection)
    client.close()


def test_an_unreadable_ca_file_is_a_setting_to_fix(tmp_path: Path) -> None:
    settings = RedisSettings.model_validate(
        {"url": "rediss://h:1/0", "tls": {"ca_file": str(tmp_path / "absent.pem")}}
    )
    with pytest.raises(CredentialsError, match=r"^redis.tls.ca_file .*absent.pem: "):
        connect_options(settings)


def _raised_while(cause: BaseException, error: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException:
            raise error  # noqa: B904 (the client library chains like this)
    except BaseException as raised:
        return raised


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (redis.AuthenticationError("invalid username-password pair"), "credentials were refused"),
        (redis.ResponseError("WRONGPASS invalid username-password pair"), "credentials"),
        (redis.ResponseError("NOPERM this user has no permissions"), "may not do this"),
        (
            _raised_while(
                ssl.SSLCertVerificationError(1, "certificate verify failed"),
                redis.ConnectionError("Error 1 connecting"),
            ),
            "TLS certificate was not accepted",
        ),
        (
            _raised_while(
                ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"),
                redis.ConnectionError("Error 1 connecting"),
            ),
            "use redis://",
        ),
    ],
)
def test_refusals(error: BaseException, cause: str) -> None:
    found = refusal(error)
    assert found is not None
    assert cause in found


def test_outages_are_not_refusals() -> None:
    assert refusal(redis.ConnectionError("Error 111 connecting. Connection refused.")) is None
    assert refusal(redis.TimeoutError("Timeout reading from socket")) is None


def test_first_contact_names_a_wrong_protocol_only_then() -> None:
    reset = redis.ConnectionError("Error while reading: (104, 'Connection reset by peer')")
    assert "a TLS port?" in str(first_contact_refusal(reset, tls=False))
    assert first_contact_refusal(reset, tls=True) is None
    timeout = redis.TimeoutError("Timeout connecting to server")
    assert "a plain port?" in str(first_contact_refusal(timeout, tls=True))
    assert first_contact_refusal(timeout, tls=False) is None
