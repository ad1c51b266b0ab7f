"""``chainloom operator crds``: writes the generated CRDs; ``--check`` reports stale files."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from chainloom.cli._main import main


def test_crds_check_write_check(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "crds"
    stale = runner.invoke(main, ["operator", "crds", "--check", "--out", str(out)])
    assert stale.exit_code == 1
    assert "(missing)" in stale.output
    written = runner.invoke(main, ["operator", "crds", "--out", str(out)])
    assert written.exit_code == 0, written.output
    assert "chainloom.io_relayerpools.yaml" in written.output
    assert runner.invoke(main, ["operator", "crds", "--check", "--out", str(out)]).exit_code == 0
    (out / "chainloom.io_relayerpools.yaml").write_text("edited\n")
    again = runner.invoke(main, ["operator", "crds", "--check", "--out", str(out)])
    assert again.exit_code == 1
    assert "stale: " in again.output


def test_run_refuses_a_bad_setting_with_exit_2() -> None:
    result = CliRunner().invoke(main, ["operator", "run", "--recheck-interval", "-1"])
    assert result.exit_code == 2
    assert "recheck_interval" in result.output
