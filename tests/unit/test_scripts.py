"""Every shell script of the repository passes shellcheck.

The scripts are what a newcomer runs first (``make demo``, ``make test``, ``.ci/run``), so a
quoting slip there costs most. shellcheck is a Debian package that ``scripts/setup`` installs
when it runs as root; where it is missing the test skips on a developer's machine and fails in
CI (``CI=true`` or ``CHAINLOOM_REQUIRE_VECTORS=1``, which ``.ci/run`` sets), so no check is
silently lost there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _bash_scripts() -> list[Path]:
    """Executables under scripts/ and .ci/ with a bash shebang, and the demo's sourced parts."""
    found: list[Path] = []
    for folder in (REPO_ROOT / "scripts", REPO_ROOT / ".ci"):
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.read_text().startswith("#!/usr/bin/env bash"):
                found.append(path)
    found += sorted((REPO_ROOT / "scripts").glob("*.sh"))
    found += sorted((REPO_ROOT / "scripts" / "demo.d").glob("*.sh"))
    return found


def _in_ci() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("CHAINLOOM_REQUIRE_VECTORS") == "1"


def test_the_scripts_are_found() -> None:
    names = {path.relative_to(REPO_ROOT).as_posix() for path in _bash_scripts()}
    expected = {"scripts/setup", "scripts/test", "scripts/demo", "scripts/demo-cluster",
                "scripts/kind-dev", ".ci/run", "scripts/demo.d/10-wormhole.sh"}  # fmt: skip
    assert expected <= names


@pytest.mark.parametrize(
    "script", _bash_scripts(), ids=lambda path: path.relative_to(REPO_ROOT).as_posix()
)
def test_script_passes_shellcheck(script: Path) -> None:
    if shutil.which("shellcheck") is None:
        message = (
            "shellcheck is not installed: apt-get install -y shellcheck "
            "(scripts/setup does it when run as root)"
        )
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    # Every script is bash (the demo steps are run with `bash STEP`); sourced files are
    # followed from the repository root, as the scripts name them.
    result = subprocess.run(
        ["shellcheck", "--shell=bash", "--external-sources", str(script.relative_to(REPO_ROOT))],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
