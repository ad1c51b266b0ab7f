"""The shapes every stack component shares: what is running, and how a component behaves."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Running:
    """One started component, as recorded in the run directory's ``state.json``."""

    name: str
    """Component name (``redis``, ``kube-apiserver``, ...)."""

    version: str
    """The version the component itself reports (not the one we asked for)."""

    address: str
    """Where clients reach it (``127.0.0.1:PORT`` or a URL); a path for installed tools."""

    pid: int
    """Process id of the server (0 for a tool that is installed, not run)."""

    log: str
    """Path of its log file ('' for tools)."""

    env: dict[str, str] = field(default_factory=dict)
    """Environment variables clients use to find it (printed by ``stack env``)."""

    extra: dict[str, str] = field(default_factory=dict)
    """Component-specific facts other components need (a port, a data directory, ...)."""


class Progress(Protocol):
    """Where a component reports what it is fetching, building or starting."""

    def step(self, message: str) -> None:
        """Say what is happening now (one short line)."""


class Component(Protocol):
    """A server or tool the stack can install, start and check."""

    name: str
    """Unique name, used with ``--only`` and in the status table."""

    requires: tuple[str, ...]
    """Components that must be running before this one starts."""

    def install(self, progress: Progress) -> None:
        """Fetch or build whatever is missing into the cache (idempotent)."""

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        """Start the component, wait until it is healthy and describe it.

        ``previous`` is what this run directory recorded for the component before, when its
        process has died (a crash, a SIGKILL): the restarted server takes the same port (see
        :func:`chainloom_dev.stack._process.choose_port`), so clients configured with the old
        address reconnect, and a component that keeps data (Redis) finds it again.
        """

    def check(self, running: Running) -> str:
        """Prove the running component works (a real round trip); return its version."""


@runtime_checkable
class CleansUp(Protocol):
    """A component that leaves things outside its process (containers, mounts, iptables
    chains): ``stack down`` calls these around stopping its process."""

    def before_stop(self, running: Running) -> None:
        """Undo what must be undone while the process still runs (remove the pods)."""

    def after_stop(self, running: Running) -> None:
        """Remove what the stopped process left on the machine (also after a crash)."""


class SilentProgress:
    """A :class:`Progress` that says nothing (for tests and library use)."""

    def step(self, message: str) -> None:
        del message
