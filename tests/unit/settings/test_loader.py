"""The settings loader: each layer over the one below, and errors that name source and field.

The error cases go through the real CLI (click's CliRunner): exit status 2, one line on stderr
naming the file or variable and the field path, no traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from chainloom.cli import main
from chainloom.ledger.config import LedgerSettings
from chainloom.relayer.config import RelayerSettings
from chainloom.settings import SettingsError, load_settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """Tests set the CHAINLOOM_ variables they need; none leaks in from the shell."""
    import os

    for name in list(os.environ):
        if name.startswith("CHAINLOOM_") and name != "CHAINLOOM_VECTORS":
            monkeypatch.delenv(name)


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_defaults_are_the_bottom_layer():
    settings = load_settings(LedgerSettings)
    assert settings.database.type == "sqlite"
    assert settings.database.cassandra.keyspace == "chainloom_ledger"


def test_the_file_is_over_the_defaults(tmp_path):
    path = write(tmp_path, {"database": {"cassandra": {"keyspace": "from_file"}}})
    settings = load_settings(LedgerSettings, config_file=path)
    assert settings.database.cassandra.keyspace == "from_file"
    assert settings.database.cassandra.port == 9042  # a default beside it survives


def test_the_environment_is_over_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, {"database": {"cassandra": {"keyspace": "from_file", "port": 9100}}})
    monkeypatch.setenv("CHAINLOOM_DATABASE__CASSANDRA__KEYSPACE", "from_env")
    settings = load_settings(LedgerSettings, config_file=path)
    assert settings.database.cassandra.keyspace == "from_env"
    assert settings.database.cassandra.port == 9100  # the file's other field survives


def test_flags_are_over_the_environment(tmp_path, monkeypatch):
    path = write(tmp_path, {"database": {"cassandra": {"keyspace": "from_file"}}})
    monkeypatch.setenv("CHAINLOOM_DATABASE__CASSANDRA__KEYSPACE", "from_env")
    settings = load_settings(
        LedgerSettings,
        config_file=path,
        flags={"database.cassandra.keyspace": "from_flag", "database.type": None},
    )
    assert settings.database.cassandra.keyspace == "from_flag"
    assert settings.database.type == "sqlite"  # a flag that was not given changes nothing


def test_the_file_variable_names_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, {"redis": {"key_prefix": "via-variable"}})
    monkeypatch.setenv("CHAINLOOM_RELAYER_CONFIG", str(path))
    assert load_settings(RelayerSettings).redis.key_prefix == "via-variable"


def test_the_redis_url_has_one_environment_name(monkeypatch):
    monkeypatch.setenv("CHAINLOOM_REDIS__URL", "redis://elsewhere:6380/2")
    monkeypatch.setenv("CHAINLOOM_REDIS_URL", "redis://ignored:1/0")  # the old name: not read
    settings = load_settings(RelayerSettings)
    assert settings.redis.url.get_secret_value() == "redis://elsewhere:6380/2"


def test_an_unknown_key_inside_an_environment_section_is_refused(monkeypatch):
    monkeypatch.setenv("CHAINLOOM_REDIS__URLL", "redis://x:1/0")
    with pytest.raises(SettingsError, match=r"CHAINLOOM_REDIS__URLL: redis\.urll: unknown key"):
        load_settings(RelayerSettings)


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def assert_one_line_exit_2(code: int, stderr: str, *needles: str) -> None:
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0]


def test_a_bad_yaml_type_exits_2_naming_the_file_and_field(tmp_path):
    path = write(tmp_path, {"rest": {"port": "eighty"}})
    code, _, err = run("config", "show", "--service", "relayer", "--config", str(path))
    assert_one_line_exit_2(code, err, str(path), "rest.port", "valid integer", "'eighty'")


def test_an_unknown_yaml_key_exits_2_naming_it(tmp_path):
    path = write(tmp_path, {"database": {"cassandra": {"replication": 3}}})
    code, _, err = run("config", "show", "--service", "ledger", "--config", str(path))
    assert_one_line_exit_2(code, err, str(path), "database.cassandra.replication: unknown key")


def test_a_bad_environment_value_exits_2_naming_the_variable_and_field():
    code, _, err = run(
        "config", "show", "--service", "relayer", env={"CHAINLOOM_WORKER__BATCH": "0"}
    )
    assert_one_line_exit_2(code, err, "CHAINLOOM_WORKER__BATCH", "worker.batch", "'0'")
    code, _, err = run(
        "config", "show", "--service", "relayer", env={"CHAINLOOM_TARGET_CHAINS": "2, 4"}
    )
    assert_one_line_exit_2(code, err, "CHAINLOOM_TARGET_CHAINS", "not valid JSON")


def test_a_bad_flag_exits_2_naming_the_command_line(tmp_path):
    code, _, err = run("relayer", "listen", "--rest-port", "70000", "--no-spy")
    assert_one_line_exit_2(code, err, "command line", "rest.port")


def test_the_services_read_the_same_errors(tmp_path):
    path = write(tmp_path, {"colour": "blue"})
    code, _, err = run("relayer", "queues", "--config", str(path))
    assert_one_line_exit_2(code, err, str(path), "colour: unknown key")
    code, _, err = run("ledger", "range", "--config", str(path))
    assert_one_line_exit_2(code, err, str(path), "colour: unknown key")
    code, _, err = run("events", "--config", str(path), "recent", "--chain", "2")
    assert_one_line_exit_2(code, err, str(path), "colour: unknown key")


@pytest.mark.parametrize("chain", ["999999", "atlantis"])
def test_work_refuses_an_unknown_chain(tmp_path, chain):
    wallet = tmp_path / "key"
    wallet.write_text("11" * 32)
    code, _, err = run("relayer", "work", "--chain", chain, "--wallet-file", str(wallet))
    assert_one_line_exit_2(code, err, f"unknown chain {chain!r}")


def test_work_refuses_a_chain_missing_from_target_chains(tmp_path):
    wallet = tmp_path / "key"
    wallet.write_text("11" * 32)
    path = write(tmp_path, {"target_chains": [2, 4]})
    code, _, err = run(
        "relayer", "work", "--config", str(path), "--chain", "solana", "--wallet-file", str(wallet)
    )
    assert_one_line_exit_2(code, err, "'solana'", "target_chains (2, 4)")


def test_worker_flags_are_checked_like_the_file(tmp_path):
    wallet = tmp_path / "key"
    wallet.write_text("11" * 32)
    code, _, err = run(
        "relayer", "work", "--chain", "2", "--wallet-file", str(wallet), "--batch", "0",
        "--redis-url", "redis://127.0.0.1:1/0",
    )  # fmt: skip
    assert_one_line_exit_2(code, err, "command line", "worker.batch")
