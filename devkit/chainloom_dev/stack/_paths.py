"""Where the stack keeps downloads, builds and running state.

Everything that is slow to get (jars, Go builds) lives under the cache directory and is reused
by every later run; everything about running processes (pids, logs, data, certificates) lives
under the run directory, which ``stack down`` empties.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CHAINLOOM_CACHE``, else ``~/.cache/chainloom``."""
    configured = os.environ.get("CHAINLOOM_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "chainloom"
    base.mkdir(parents=True, exist_ok=True)
    return base


def run_dir() -> Path:
    """``$CHAINLOOM_RUN``, else ``<cache>/run``: pids, logs, data and certificates."""
    configured = os.environ.get("CHAINLOOM_RUN")
    base = Path(configured) if configured else cache_dir() / "run"
    base.mkdir(parents=True, exist_ok=True)
    return base
