"""Installing Debian packages on demand, with a clear error where that is impossible."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from chainloom_dev.stack._model import Progress
from chainloom_dev.stack._process import run
from chainloom_dev.stack.errors import InstallError, MissingToolError

_updated = False


def ensure_command(command: str, package: str, progress: Progress) -> str:
    """Return the path of ``command``, installing Debian's ``package`` if it is missing."""
    found = shutil.which(command)
    if found:
        return found
    _apt_install(command, package, progress)
    found = shutil.which(command)
    if not found:
        raise MissingToolError(command, f"apt-get install -y {package}")
    return found


def ensure_file(path: Path, package: str, progress: Progress) -> Path:
    """Return ``path``, installing Debian's ``package`` (which ships it) if it is missing."""
    if not path.exists():
        _apt_install(str(path), package, progress)
        if not path.exists():
            raise MissingToolError(str(path), f"apt-get install -y {package}")
    return path


def _apt_install(command: str, package: str, progress: Progress) -> None:
    hint = f"apt-get install -y {package}"
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise MissingToolError(command, hint if os.geteuid() == 0 else f"sudo {hint}")
    global _updated  # noqa: PLW0603 - one 'apt-get update' per process is enough
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    if not _updated:
        progress.step("apt-get update")
        result = run(["apt-get", "update", "-q"], env=env, timeout=600)
        if result.returncode != 0:
            raise InstallError(package, "running apt-get update", result.stdout + result.stderr)
        _updated = True
    progress.step(f"apt-get install {package}")
    result = run(["apt-get", "install", "-y", "-q", package], env=env, timeout=900)
    if result.returncode != 0:
        raise InstallError(package, f"running {hint}", result.stdout + result.stderr)
