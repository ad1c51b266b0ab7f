"""Install-once helpers: build into a temporary folder, then rename into the cache.

An interrupted download or build leaves only a ``.tmp-*`` folder that the next attempt removes,
never a half-installed component that looks complete. A file lock keeps two concurrent
``stack up`` runs (two test sessions, say) from building the same thing twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from chainloom_dev.stack._paths import cache_dir

_COMPLETE = ".complete"


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold an exclusive lock named ``name`` (a file under the cache's ``.locks``)."""
    lock_dir = cache_dir() / ".locks"
    lock_dir.mkdir(exist_ok=True)
    with (lock_dir / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_installed(target: Path) -> bool:
    """True if ``target`` was completely installed by :func:`install_once`."""
    return (target / _COMPLETE).exists()


def install_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Run ``build(tmp)`` and move ``tmp`` to ``target``, unless ``target`` is complete."""
    with locked(target.name):
        if is_installed(target):
            return target
        for stale in target.parent.glob(f".{target.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            (tmp / _COMPLETE).touch()
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    return target
