"""enrich and export are registered jobs: `chainloom spark manifest` renders them and checks
their flags without Spark."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from chainloom.cli import main


def test_manifest_renders_the_table_jobs_with_their_arguments():
    args = ["--table", "wormhole-events", "--output", "s3a://lake/wormhole"]
    result = CliRunner().invoke(main, ["spark", "manifest", "export", *args])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.output)
    assert document["spec"]["arguments"] == ["export", *args]
    assert document["metadata"]["name"] == "chainloom-export"


def test_a_missing_required_flag_is_exit_2():
    result = CliRunner().invoke(main, ["spark", "manifest", "enrich", "--table", "t"])
    assert result.exit_code == 2
    assert "--prices" in result.output


def test_with_access_prints_the_drivers_service_account_and_role_first():
    args = ["--input", "/input/vaas.txt", "--table", "t"]
    result = CliRunner().invoke(main, ["spark", "manifest", "--with-access", "vaa-ingest", *args])
    assert result.exit_code == 0, result.output
    kinds = [document["kind"] for document in yaml.safe_load_all(result.output)]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding", "SparkApplication"]
