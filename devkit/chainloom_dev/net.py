"""Network helpers the stack, the tests and the benches share: a free loopback port, and
whether (or when) something listens on one."""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on ``host:port``.

    A connection to a free loopback port inside the ephemeral range can, rarely, connect to
    itself (the kernel picks that same port as the source: TCP's simultaneous open); that is
    nobody listening, so it counts as closed.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            return bool(connection.getsockname() != connection.getpeername())
    except OSError:
        return False


def wait_for_port(host: str, port: int, timeout: float = 30.0, interval: float = 0.1) -> bool:
    """Poll until something accepts connections on ``host:port``; False if ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(host, port):
            return True
        time.sleep(interval)
    return port_open(host, port)
