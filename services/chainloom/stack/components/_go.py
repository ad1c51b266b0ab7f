"""Building Go programs from the Go module proxy into the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

from chainloom.stack.errors import MissingToolError

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
