"""Command-line tools the stack installs into the cache but never runs as servers.

kubectl, helm and solcjs are described alike, so each only says where its binary is and how to
read its version: pid 0 (nothing to stop or restart), the binary's path as the address, and its
folder as ``bin_dir`` (``stack env`` puts that on ``PATH``).
"""

from __future__ import annotations

from pathlib import Path

from chainloom_dev.stack._model import Progress, Running


class InstalledTool:
    """A command-line tool the stack installs but does not run (pid 0, address = its path)."""

    name = ""
    requires: tuple[str, ...] = ()

    def _binary(self) -> Path:
        raise NotImplementedError

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del run_dir, deps, progress, previous  # an installed tool, not a server: nothing to start
        binary = self._binary()
        running = Running(self.name, "", str(binary), 0, "", extra={"bin_dir": str(binary.parent)})
        return Running(self.name, self.check(running), running.address, 0, "", extra=running.extra)

    def check(self, running: Running) -> str:
        raise NotImplementedError
