"""Building Go programs from the Go module proxy into the cache."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from chainloom_dev.stack._process import run
from chainloom_dev.stack.errors import InstallError, MissingToolError

_GO_HINT = (
    "apt-get install -y golang-go  (Go 1.24 or newer is needed; or unpack the official "
    "toolchain into /usr/local/go)"
)


FALLBACK_GO = Path("/usr/local/go/bin/go")
"""Where the official toolchain lives when it is not on PATH."""


def go_binary() -> str:
    """The ``go`` command, or a :class:`MissingToolError` that says how to get it."""
    found = shutil.which("go")
    if found:
        return found
    if FALLBACK_GO.exists():
        return str(FALLBACK_GO)
    raise MissingToolError("go", _GO_HINT)


def run_go(args: Sequence[str], cwd: Path, component: str, step: str, **env: str) -> str:
    """Run ``go args`` in ``cwd`` for ``component``'s build (module cache writable, no VCS
    stamping, the toolchain the module asks for); its output, or an :class:`InstallError`
    naming ``step`` with go's own output."""
    go_env = {"GOFLAGS": "-modcacherw -buildvcs=false", "GOTOOLCHAIN": "auto", **env}
    result = run([go_binary(), *args], cwd=cwd, env=go_env, timeout=3600)
    if result.returncode != 0:
        raise InstallError(component, step, result.stdout + result.stderr)
    return result.stdout
