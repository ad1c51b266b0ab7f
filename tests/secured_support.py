"""The secured stores for tests: a TLS Redis with an ACL user and a Cassandra with logins and
TLS, each in a private run directory of the dev kit's stack, and a TCP forwarder.

Private so the shared stack is never restarted or reconfigured under other sessions' tests: the
fixtures (``secured_redis``, ``secured_cassandra`` in ``tests/conftest.py``) start the stack's
own components (``chainloom-dev stack up --only redis`` / ``cassandra-secured``) with
``CHAINLOOM_RUN`` set to a temporary directory, and take them down afterwards. The installed
Cassandra jars are shared through the cache. :func:`tcp_forward` lets a client reach a server
under an address its certificate does not name (127.0.0.2), for the host-name check. The tests
of both stores run the CLI the same way (:func:`run_chainloom`), expect the same one-line
refusals (:func:`assert_one_line_refusal`) and look for the password in everything the
commands and the server printed (:func:`assert_password_never_shown`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PrivateStack:
    """Components started in a run directory of their own."""

    run_dir: Path
    """The private ``CHAINLOOM_RUN``."""
    state: dict[str, Any]
    """Its ``state.json`` after ``stack up``."""
    seconds: float
    """How long ``stack up`` took."""

    def extra(self, component: str) -> dict[str, str]:
        """The component's recorded ``extra``."""
        extra: dict[str, str] = self.state[component]["extra"]
        return extra

    def address(self, component: str) -> tuple[str, int]:
        """(host, port) of the component."""
        host, port = str(self.state[component]["address"]).rsplit(":", 1)
        return host, int(port)

    def log(self, component: str) -> Path:
        """The component's log file."""
        return Path(self.state[component]["log"])

    def password(self, component: str) -> str:
        """The password in the component's recorded ``password_file``."""
        return Path(self.extra(component)["password_file"]).read_text().strip()


def run_chainloom(
    args: Sequence[str], environment: dict[str, str], *, replacing: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m chainloom ARGS`` with this process's variables starting with ``replacing``
    swapped for ``environment`` (none of the shared stack's settings leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(replacing)}
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "chainloom", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_line_refusal(
    result: subprocess.CompletedProcess[str], store: str, cause: str
) -> str:
    """``result`` exited 2 with one line, no traceback: ``store`` refused the connection for
    ``cause``. Returns the line."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one line, no traceback
    assert lines[0].startswith(f"error: {store} at "), lines[0]
    assert "refused the connection" in lines[0]
    assert cause in lines[0], lines[0]
    return lines[0]


def assert_password_never_shown(stack: PrivateStack, component: str, outputs: list[str]) -> None:
    """The component's password is in none of ``outputs`` and not in the server's own log."""
    shown = "\n".join([*outputs, stack.log(component).read_text()])
    assert stack.password(component) not in shown


def _stack(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHAINLOOM_RUN": str(run_dir)}
    for variable in ("CHAINLOOM_REDIS_PORT", "CHAINLOOM_CASSANDRA_SECURED_PORT"):
        env.pop(variable, None)
    return subprocess.run(
        [sys.executable, "-m", "chainloom_dev", "stack", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@contextlib.contextmanager
def private_stack(run_dir: Path, *components: str) -> Iterator[PrivateStack]:
    """``stack up --only COMPONENTS`` in ``run_dir``; ``stack down`` there afterwards."""
    started = time.monotonic()
    up = _stack(run_dir, "up", "--only", ",".join(components))
    seconds = time.monotonic() - started
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = json.loads((run_dir / "state.json").read_text())
        yield PrivateStack(run_dir, state, seconds)
    finally:
        down = _stack(run_dir, "down")
        assert down.returncode == 0, down.stdout + down.stderr


@contextlib.contextmanager
def tcp_forward(listen_host: str, target: tuple[str, int]) -> Iterator[int]:
    """Forward connections to ``listen_host``:<port> to ``target``; yields the port."""
    server = socket.create_server((listen_host, 0))
    server.settimeout(0.2)
    stopping = threading.Event()
    opened: list[socket.socket] = []
    pumps: list[threading.Thread] = []

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while not stopping.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(target)
            opened.extend((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                worker = threading.Thread(target=pump, args=(source, sink), daemon=True)
                pumps.append(worker)
                worker.start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stopping.set()
        thread.join(timeout=2)
        server.close()
        for connection in opened:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for worker in pumps:
            worker.join(timeout=2)
        for connection in opened:
            connection.close()


def make_other_ca(directory: Path) -> Path:
    """A CA certificate nobody signed the servers with (for the untrusted-CA cases)."""
    from chainloom_dev.stack._pki import make_ca

    return make_ca(directory, "not-the-stores-ca")
