"""The ledger on a Cassandra that asks for a login and TLS (the stack's ``cassandra-secured``):
a load and reads through the CLI with credentials and the test CA, a NetworkTopologyStrategy
keyspace and DC-aware routing, and the one-line refusals of wrong settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from chainloom.ledger.cassandra_session import connect
from chainloom.settings import CassandraSettings
from chainloom.settings.parts import CassandraTlsSettings
from chainloom_dev.cli.ledger import ledger as dev_ledger
from tests.secured_support import (
    PrivateStack,
    assert_one_line_refusal,
    assert_password_never_shown,
    make_other_ca,
    run_chainloom,
    tcp_forward,
)

FIRST = 38129
LEDGERS = 4


def _environment(stack: PrivateStack, keyspace: str, **overrides: str | None) -> dict[str, str]:
    """``CHAINLOOM_DATABASE__...`` for the secured node as the test role, with ``overrides``."""
    extra = stack.extra("cassandra-secured")
    host, port = stack.address("cassandra-secured")
    values: dict[str, str | None] = {
        "TYPE": "cassandra",
        "CASSANDRA__HOSTS": json.dumps([host]),
        "CASSANDRA__PORT": str(port),
        "CASSANDRA__KEYSPACE": keyspace,
        "CASSANDRA__REPLICATION_STRATEGY": "NetworkTopologyStrategy",
        "CASSANDRA__DATACENTER_REPLICATION": '{"datacenter1": 1}',
        "CASSANDRA__LOCAL_DATACENTER": "datacenter1",
        "CASSANDRA__USERNAME": extra["username"],
        "CASSANDRA__PASSWORD_FILE": extra["password_file"],
        "CASSANDRA__TLS__ENABLED": "true",
        "CASSANDRA__TLS__CA_FILE": extra["ca_file"],
        **overrides,
    }
    return {f"CHAINLOOM_DATABASE__{k}": v for k, v in values.items() if v is not None}


def _ledger(
    stack: PrivateStack, keyspace: str, *args: str, **overrides: str | None
) -> subprocess.CompletedProcess[str]:
    environment = _environment(stack, keyspace, **overrides)
    return run_chainloom(
        ["ledger", *args], environment, replacing="CHAINLOOM_DATABASE__", timeout=300
    )


def _one_line_refusal(result: subprocess.CompletedProcess[str], cause: str) -> str:
    return assert_one_line_refusal(result, "Cassandra", cause)


@pytest.fixture(scope="module")
def password(secured_cassandra: PrivateStack) -> str:
    return secured_cassandra.password("cassandra-secured")


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secured") / "ledgers.jsonl"
    arguments = ["generate", "--from-state", str(FIRST), "--ledgers", str(LEDGERS - 1),
                 "--txs-per-ledger", "10", "--seed", "7", "--vectors", str(vectors_dir),
                 "--out", str(path), "--json"]  # fmt: skip
    result = CliRunner().invoke(dev_ledger, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def outputs() -> list[str]:
    """Everything the commands of this module printed, for the secrets check at the end."""
    return []


def test_load_and_read_over_a_login_and_tls(
    secured_cassandra: PrivateStack, dump: Path, outputs: list[str], password: str
) -> None:
    keyspace = f"s_{uuid.uuid4().hex[:10]}"
    loaded = _ledger(secured_cassandra, keyspace, "load", str(dump), "--quiet", "--json")
    outputs += [loaded.stdout, loaded.stderr]
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["last_committed"] == FIRST + LEDGERS - 1
    shown = _ledger(secured_cassandra, keyspace, "range", "--json")
    header = _ledger(secured_cassandra, keyspace, "header", str(FIRST + 1), "--json")
    outputs += [shown.stdout, shown.stderr, header.stdout, header.stderr]
    assert json.loads(shown.stdout) == {"min": FIRST, "max": FIRST + LEDGERS - 1}
    assert json.loads(header.stdout)["ledger_index"] == FIRST + 1
    # The keyspace was made with the datacenter's factor, through the product's own session.
    extra = secured_cassandra.extra("cassandra-secured")
    host, port = secured_cassandra.address("cassandra-secured")
    settings = CassandraSettings(
        hosts=(host,),
        port=port,
        username=extra["username"],
        password_file=extra["password_file"],
        tls=CassandraTlsSettings(enabled=True, ca_file=extra["ca_file"]),
        local_datacenter="datacenter1",
    )
    cluster, session = connect(settings)
    try:
        row = session.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (keyspace,),
        ).one()
        assert dict(row.replication) == {
            "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
            "datacenter1": "1",
        }
        session.execute(f"DROP KEYSPACE {keyspace}")
    finally:
        cluster.shutdown()


def test_the_spark_ledger_load_logs_in_with_the_same_settings(
    secured_cassandra: PrivateStack, dump: Path, outputs: list[str], tmp_path: Path
) -> None:
    keyspace = f"k_{uuid.uuid4().hex[:10]}"
    host, port = secured_cassandra.address("cassandra-secured")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_DATABASE__")}
    env.update(_environment(secured_cassandra, keyspace))
    argv = [sys.executable, "-m", "chainloom", "spark", "run", "ledger-load", "--input",
            str(dump), "--backend", "cassandra", "--cassandra-hosts", f"{host}:{port}",
            "--keyspace", keyspace, "--master", "local[2]", "--batch", "2"]  # fmt: skip
    loaded = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
    )
    outputs += [loaded.stdout, loaded.stderr]
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    shown = _ledger(secured_cassandra, keyspace, "range", "--json")
    outputs += [shown.stdout, shown.stderr]
    assert json.loads(shown.stdout) == {"min": FIRST, "max": FIRST + LEDGERS - 1}
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    env["CHAINLOOM_DATABASE__CASSANDRA__PASSWORD_FILE"] = str(wrong)
    refused = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
    )
    outputs += [refused.stdout, refused.stderr]
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "Traceback" not in refused.stderr
    assert "the credentials of role 'chainloom' were refused" in refused.stderr


def test_a_wrong_password_is_one_line_and_exit_2(
    secured_cassandra: PrivateStack, tmp_path: Path, outputs: list[str]
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    result = _ledger(secured_cassandra, "ks", "range", CASSANDRA__PASSWORD_FILE=str(wrong))
    outputs += [result.stdout, result.stderr]
    line = _one_line_refusal(result, "the credentials of role 'chainloom' were refused")
    assert "not-the-password" not in line


def test_no_login_is_one_line_and_exit_2(
    secured_cassandra: PrivateStack, outputs: list[str]
) -> None:
    result = _ledger(
        secured_cassandra, "ks", "range", CASSANDRA__USERNAME=None, CASSANDRA__PASSWORD_FILE=None
    )
    outputs += [result.stdout, result.stderr]
    _one_line_refusal(result, "the cluster asks for a login")


def test_an_untrusted_certificate_is_one_line_and_exit_2(
    secured_cassandra: PrivateStack, tmp_path: Path, outputs: list[str]
) -> None:
    other = make_other_ca(tmp_path / "other")
    result = _ledger(secured_cassandra, "ks", "range", CASSANDRA__TLS__CA_FILE=str(other))
    outputs += [result.stdout, result.stderr]
    _one_line_refusal(result, "its TLS certificate was not accepted")


def test_a_plain_client_is_one_line_and_exit_2(
    secured_cassandra: PrivateStack, outputs: list[str]
) -> None:
    result = _ledger(
        secured_cassandra,
        "ks",
        "range",
        CASSANDRA__TLS__ENABLED=None,
        CASSANDRA__TLS__CA_FILE=None,
    )
    outputs += [result.stdout, result.stderr]
    _one_line_refusal(result, "it requires TLS? set tls.enabled")


def test_a_host_the_certificate_does_not_name_is_refused(
    secured_cassandra: PrivateStack, outputs: list[str]
) -> None:
    target = secured_cassandra.address("cassandra-secured")
    with tcp_forward("127.0.0.2", target) as port:
        result = _ledger(
            secured_cassandra,
            "ks",
            "range",
            CASSANDRA__HOSTS='["127.0.0.2"]',
            CASSANDRA__PORT=str(port),
        )
    outputs += [result.stdout, result.stderr]
    line = _one_line_refusal(result, "its TLS certificate was not accepted")
    assert "127.0.0.2" in line


def test_the_password_is_in_no_output_or_log(
    secured_cassandra: PrivateStack, outputs: list[str]
) -> None:
    assert len(outputs) >= 10  # every command of this module ran first
    assert_password_never_shown(secured_cassandra, "cassandra-secured", outputs)
