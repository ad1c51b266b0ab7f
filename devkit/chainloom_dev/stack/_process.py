"""Starting, watching and stopping the stack's processes.

Each server runs in its own session (process group) with its output in a log file, so that it
survives the command that started it and can be stopped, with anything it spawned, by pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from chainloom_dev.net import free_port, port_open
from chainloom_dev.stack._model import Running
from chainloom_dev.stack.errors import PortConflictError, StartError

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Processes this process started: kept so they can be reaped (and never warn as leaked)."""


def choose_port(component: str, previous: Running | None, variable: str | None = None) -> int:
    """The port a component's server listens on.

    In order: the port ``$variable`` names (it must be free: a taken port that was asked for
    is a conflict); the port this run directory recorded for the component before
    (``previous``, a server that crashed or was killed) if nothing listens there now, so that a
    restarted server keeps the address its clients were configured with; else a free one.
    """
    configured = os.environ.get(variable) if variable else None
    if configured:
        port = int(configured)
        if port_open("127.0.0.1", port):
            raise PortConflictError(component, port)
        return port
    recorded = recorded_port(previous)
    if recorded is not None and not port_open("127.0.0.1", recorded):
        return recorded
    return free_port()


def reuse_port(previous: Running | None, key: str) -> int:
    """A secondary port (peer, storage, JMX) recorded as ``previous.extra[key]`` if it is free
    again, else a free one: a restarted server that keeps its data also keeps its own view of
    itself (etcd stores its peer URL, Cassandra its storage endpoint)."""
    recorded = previous.extra.get(key, "") if previous is not None else ""
    if recorded.isdigit() and not port_open("127.0.0.1", int(recorded)):
        return int(recorded)
    return free_port()


def recorded_port(previous: Running | None) -> int | None:
    """The port of a recorded ``host:port`` address (None for tools, whose address is a path)."""
    if previous is None:
        return None
    _, _, port = previous.address.rpartition(":")
    return int(port) if port.isdigit() else None


def spawn(
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> int:
    """Start ``argv`` detached in its own session, output to ``log``; return its pid."""
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    _children[process.pid] = process
    return process.pid


def alive(pid: int) -> bool:
    """True if ``pid`` is a live process (not a zombie)."""
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child that exited but was never reaped still answers kill(0): look at its state. A
    # multi-threaded process (a JVM) shows its main thread as a zombie while its other threads
    # still exit, and its sockets stay open until the last one is gone: only a zombie left
    # alone in its thread group is dead.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z" and len(os.listdir(f"/proc/{pid}/task")) == 1:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return False
    return True


def stop(pid: int, timeout: float = 20.0) -> None:
    """SIGTERM the process group of ``pid``, then SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid):
                return
            time.sleep(0.1)


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file ('' if there is none)."""
    if not path.exists():
        return ""
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64 * 1024))
        text = handle.read().decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def wait_until(
    component: str,
    check: Callable[[], bool],
    *,
    pid: int,
    log: Path,
    timeout: float,
    interval: float = 0.25,
) -> None:
    """Poll ``check`` until it is true; fail early if ``pid`` dies, with the log's tail."""
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if not alive(pid):
            raise StartError(component, "the process exited", tail(log))
        try:
            if check():
                return
        except Exception as error:
            last_error = f"{type(error).__name__}: {error}"
        time.sleep(interval)
    reason = f"not healthy after {timeout:.0f}s"
    if last_error:
        reason += f" (last check: {last_error})"
    raise StartError(component, reason, tail(log))


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion (``stdin`` fed to it), capturing its output as text."""
    return subprocess.run(
        list(argv),
        input=stdin,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
