"""A free loopback port, for the tests and benchmarks that start a server of their own.

The port is free when chosen and may be taken before the server binds it; callers that
cannot retry use ``port 0`` where the server supports it and read the port back.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
