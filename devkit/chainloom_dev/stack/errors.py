"""Errors of the local stack manager.

Every one of them says what to do next: the missing tool and the command that installs it,
the port that is taken, or the tail of the log of a component that failed its health check::

    StackError
    ├── MissingToolError      a JDK, Go, apt-get, openssl ... is not installed
    ├── InstallError          a download or build failed (nothing half-installed is left)
    ├── PortConflictError     a requested port is already in use
    ├── StartError            a process exited or never became healthy (with its log tail)
    ├── UnknownComponentError a name given to --only is not a component
    └── NodeConflictError     another run directory's node is up on this machine
"""

from __future__ import annotations

from chainloom.errors import ChainloomError


class StackError(ChainloomError):
    """Base class of the local stack manager's errors."""


class MissingToolError(StackError):
    """A program the stack needs is not installed."""

    def __init__(self, tool: str, install_hint: str) -> None:
        super().__init__(f"{tool} is required but was not found; install it with: {install_hint}")
        self.tool = tool
        self.install_hint = install_hint


class InstallError(StackError):
    """Fetching or building a component failed."""

    def __init__(self, component: str, step: str, output: str) -> None:
        tail = "\n".join(output.strip().splitlines()[-25:])
        super().__init__(f"installing {component} failed while {step}:\n{tail}")
        self.component = component
        self.step = step


class PortConflictError(StackError):
    """A port that was asked for explicitly is already taken."""

    def __init__(self, component: str, port: int) -> None:
        super().__init__(
            f"{component}: port 127.0.0.1:{port} is already in use; free it or choose another"
        )
        self.component = component
        self.port = port


class StartError(StackError):
    """A component's process died or did not pass its health check in time."""

    def __init__(self, component: str, reason: str, log_tail: str = "") -> None:
        message = f"{component} failed to start: {reason}"
        if log_tail:
            message += f"\n--- last lines of its log ---\n{log_tail}"
        super().__init__(message)
        self.component = component
        self.reason = reason
        self.log_tail = log_tail


class UnknownComponentError(StackError):
    """A component name that the stack does not know."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown stack component {name!r}; choose from: {', '.join(known)}")
        self.name = name


class NodeConflictError(StackError):
    """Another run directory's node is up on this machine (one node per machine)."""

    def __init__(self, owner: str) -> None:
        super().__init__(
            f"a node from run directory {owner} is already up on this machine (its network "
            f"namespaces, iptables chains and cgroups are host-wide); stop it first with: "
            f"CHAINLOOM_RUN={owner} chainloom-dev stack down --only node"
        )
        self.owner = owner
