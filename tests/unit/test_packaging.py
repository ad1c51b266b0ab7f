"""The distribution's shape: importable packages, no shadowing of the standard library."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_stdlib_operator_is_not_shadowed_from_the_repository_root() -> None:
    # Run from the repository root, where a folder named `operator/` sits on sys.path[0].
    code = "import operator, chainloom_operator; print(operator.itemgetter(1)([5, 7]))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7"


def test_the_three_packages_import() -> None:
    import chainloom
    import chainloom_operator
    import chainloom_spark

    assert chainloom.__file__ is not None
    assert "services" in chainloom.__file__
    assert "operator" in str(chainloom_operator.__file__)
    assert "spark-apps" in str(chainloom_spark.__file__)


def test_console_command_lists_every_subcommand_group() -> None:
    from click.testing import CliRunner

    from chainloom.cli import main
    from chainloom.cli._main import SUBCOMMANDS

    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in SUBCOMMANDS:
        assert name in result.output
        sub = CliRunner().invoke(main, [name, "--help"])
        assert sub.exit_code == 0, sub.output
