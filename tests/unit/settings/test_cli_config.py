"""``chainloom config schema`` and ``config show``: valid JSON Schema, secrets redacted."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from chainloom.cli import main
from chainloom.settings.registry import PARTS, SERVICES


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    for name in list(os.environ):
        if name.startswith("CHAINLOOM_") and name != "CHAINLOOM_VECTORS":
            monkeypatch.delenv(name)


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


@pytest.mark.parametrize("name", [*SERVICES, *PARTS])
def test_schema_is_valid_json_schema(name):
    result = invoke("config", "schema", name)
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False  # unknown keys are refused in CRDs too


@pytest.mark.parametrize("service", list(SERVICES))
def test_effective_settings_validate_against_the_schema(service):
    schema = json.loads(invoke("config", "schema", service).stdout)
    shown = invoke("config", "show", "--service", service, "--format", "json")
    assert shown.exit_code == 0, shown.output
    Draft202012Validator(schema).validate(json.loads(shown.stdout))


def test_show_applies_the_layers(tmp_path):
    path = tmp_path / "relayer.yaml"
    path.write_text("rest: {host: 0.0.0.0, port: 4300}\n")
    result = invoke(
        "config", "show", "--service", "relayer", "--config", str(path),
        env={"CHAINLOOM_REST__PORT": "5000"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.stdout)
    assert shown["rest"] == {
        "enabled": True, "host": "0.0.0.0", "port": 5000, "max_request_bytes": 65536,
        "header_timeout": 20.0, "body_timeout": 20.0,
    }  # fmt: skip


def test_show_redacts_the_redis_password():
    result = invoke(
        "config", "show", "--service", "relayer", "--format", "json",
        env={"CHAINLOOM_REDIS__URL": "redis://relayer:hunter2@redis.internal:6380/1"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.output
    assert json.loads(result.stdout)["redis"]["url"] == "redis://relayer:***@redis.internal:6380/1"


def test_unknown_model_names_the_known_ones():
    result = invoke("config", "schema", "postgres")
    assert result.exit_code == 2
    assert "unknown settings model 'postgres'" in result.stderr
    assert "relayer" in result.stderr
