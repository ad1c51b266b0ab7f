"""The relay tables on a Redis that asks for TLS and an ACL login (the stack's private TLS
Redis), and the one-line refusals a wrong setting gets from ``chainloom relayer queues``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainloom.relayer.config import RelayerSettings
from chainloom.relayer.model import Table
from chainloom.relayer.service import open_tables
from chainloom.settings import load_settings
from tests.integration.relayer.relay_support import requests
from tests.secured_support import (
    PrivateStack,
    assert_one_line_refusal,
    assert_password_never_shown,
    make_other_ca,
    run_chainloom,
    tcp_forward,
)


def _environment(stack: PrivateStack, **overrides: str | None) -> dict[str, str]:
    """``CHAINLOOM_REDIS__...`` for the TLS port as the ACL user, with ``overrides``."""
    extra = stack.extra("redis")
    host, _ = stack.address("redis")
    values: dict[str, str | None] = {
        "URL": f"rediss://{host}:{extra['tls_port']}/5",
        "USERNAME": extra["acl_user"],
        "PASSWORD_FILE": extra["password_file"],
        "TLS__CA_FILE": extra["ca_file"],
        "TLS__CERT_FILE": extra["client_cert"],
        "TLS__KEY_FILE": extra["client_key"],
        **overrides,
    }
    return {f"CHAINLOOM_REDIS__{k}": v for k, v in values.items() if v is not None}


def _queues(
    stack: PrivateStack, *command: str, **overrides: str | None
) -> subprocess.CompletedProcess[str]:
    """``chainloom relayer queues --json`` (or ``relayer COMMAND``) against the TLS port."""
    arguments = ["relayer", *(command or ("queues", "--json"))]
    environment = _environment(stack, **overrides)
    return run_chainloom(arguments, environment, replacing="CHAINLOOM_REDIS__", timeout=120)


def _one_line_refusal(result: subprocess.CompletedProcess[str], cause: str) -> str:
    return assert_one_line_refusal(result, "Redis", cause)


@pytest.fixture(scope="module")
def password(secured_redis: PrivateStack) -> str:
    return secured_redis.password("redis")


def test_the_tables_work_over_tls_as_the_acl_user(
    secured_redis: PrivateStack, monkeypatch: pytest.MonkeyPatch, password: str
) -> None:
    for name, value in _environment(secured_redis).items():
        monkeypatch.setenv(name, value)
    settings = load_settings(RelayerSettings)
    tables = open_tables(settings)
    assert tables.tls
    tables.client.flushdb()
    batch = requests(5, target_chain=2)
    assert all(result.accepted for result in tables.enqueue_many(batch))
    assert tables.depths()[Table.INCOMING] == {2: 5}
    # (Values, not the client, in assertions: redis-py's repr of a pool shows its password.)
    whoami = str(tables.client.acl_whoami())
    tables.client.close()
    assert whoami == "chainloom"
    shown = _queues(secured_redis)
    assert shown.returncode == 0, shown.stderr
    assert '"incoming"' in shown.stdout
    assert password not in shown.stdout + shown.stderr


def test_a_wrong_password_is_one_line_and_exit_2(
    secured_redis: PrivateStack, tmp_path: Path, password: str
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    line = _one_line_refusal(
        _queues(secured_redis, PASSWORD_FILE=str(wrong)), "the credentials were refused"
    )
    assert "not-the-password" not in line
    assert password not in line


def test_a_worker_with_a_wrong_password_exits_2_before_work(
    secured_redis: PrivateStack, tmp_path: Path
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    wallet = tmp_path / "wallet"
    wallet.write_text("6c8f5a3e1b2d4c7a9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d\n")
    work = ("work", "--chain", "4", "--wallet-file", str(wallet), "--stop-when-idle", "1")
    _one_line_refusal(
        _queues(secured_redis, *work, PASSWORD_FILE=str(wrong)), "the credentials were refused"
    )


def test_an_untrusted_server_certificate_is_one_line_and_exit_2(
    secured_redis: PrivateStack, tmp_path: Path
) -> None:
    other = make_other_ca(tmp_path / "other")
    _one_line_refusal(
        _queues(secured_redis, TLS__CA_FILE=str(other)), "its TLS certificate was not accepted"
    )


def test_a_plain_client_on_the_tls_port_is_one_line_and_exit_2(
    secured_redis: PrivateStack,
) -> None:
    extra = secured_redis.extra("redis")
    host, _ = secured_redis.address("redis")
    plain: dict[str, str | None] = {
        "URL": f"redis://{host}:{extra['tls_port']}/5",
        "TLS__CA_FILE": None,
        "TLS__CERT_FILE": None,
        "TLS__KEY_FILE": None,
    }
    _one_line_refusal(_queues(secured_redis, **plain), "a TLS port? use rediss://")


def test_a_tls_client_on_the_plain_port_is_one_line_and_exit_2(
    secured_redis: PrivateStack,
) -> None:
    host, port = secured_redis.address("redis")
    _one_line_refusal(
        _queues(secured_redis, URL=f"rediss://{host}:{port}/5", TIMEOUT="2"),
        "no answer to the TLS handshake",
    )


def test_a_host_the_certificate_does_not_name_is_refused(secured_redis: PrivateStack) -> None:
    host, _ = secured_redis.address("redis")
    tls_port = int(secured_redis.extra("redis")["tls_port"])
    with tcp_forward("127.0.0.2", (host, tls_port)) as port:
        line = _one_line_refusal(
            _queues(secured_redis, URL=f"rediss://127.0.0.2:{port}/5"),
            "its TLS certificate was not accepted",
        )
        assert "127.0.0.2" in line
        unchecked = _queues(
            secured_redis, URL=f"rediss://127.0.0.2:{port}/5", TLS__CHECK_HOSTNAME="false"
        )
        assert unchecked.returncode == 0, unchecked.stderr


def test_a_client_certificate_of_another_ca_is_refused(
    secured_redis: PrivateStack, tmp_path: Path
) -> None:
    other = make_other_ca(tmp_path / "other")
    _one_line_refusal(
        _queues(
            secured_redis, TLS__CERT_FILE=str(other), TLS__KEY_FILE=str(other.parent / "ca.key")
        ),
        "the TLS handshake failed",
    )


def test_an_unreadable_password_file_names_the_setting(secured_redis: PrivateStack) -> None:
    result = _queues(secured_redis, PASSWORD_FILE="/nonexistent/password")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: redis.password_file /nonexistent/password: No such file or directory"
    )


def test_the_password_is_in_no_output_or_log(secured_redis: PrivateStack, tmp_path: Path) -> None:
    outputs: list[str] = []
    for overrides in ({}, {"TLS__CA_FILE": str(make_other_ca(tmp_path / "o"))}):
        result = _queues(secured_redis, **overrides)
        outputs += [result.stdout, result.stderr]
    env = {**os.environ, **_environment(secured_redis)}
    shown = subprocess.run(
        [sys.executable, "-m", "chainloom", "config", "show", "--service", "relayer"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "password_file" in shown.stdout
    outputs += [shown.stdout, shown.stderr]
    assert_password_never_shown(secured_redis, "redis", outputs)
