"""``scripts/generate``: one entry point for every generator, and its ``--check`` mode."""

from __future__ import annotations

import subprocess

from chainloom.rpc import build
from tests.conftest import REPO_ROOT


def test_the_generated_grpc_modules_match_the_protos():
    assert build.is_current(), "run scripts/generate (or scripts/setup)"


def test_make_generate_and_generate_check_run_the_script():
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "generate:" in makefile
    assert "\tscripts/generate\n" in makefile
    assert "\tscripts/generate --check\n" in makefile
    assert "scripts/generate --check" in (REPO_ROOT / "scripts" / "test").read_text()


def test_an_unknown_argument_is_refused():
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "generate"), "--no-such-flag"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "usage: scripts/generate [--check]" in done.stderr
