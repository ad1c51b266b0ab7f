"""What the benches' bare servers (:mod:`bench.bare_http`, :mod:`bench.bare_events`) share once
built: serve until SIGINT or SIGTERM, the first stderr line naming the port (what
:func:`bench.api.started` waits for)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable

from chainloom.web.server import WebServer


async def serve_until_signalled(
    server: WebServer, name: str, host: str, close: Callable[[], None]
) -> None:
    """Start ``server``, print ``<name> on http://host:PORT/``, serve until a signal, then stop
    it and call ``close`` (its thread pools)."""
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    try:
        port = await server.start()
        print(f"{name} on http://{host}:{port}/", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await server.stop()
        close()
