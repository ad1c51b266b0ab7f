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
