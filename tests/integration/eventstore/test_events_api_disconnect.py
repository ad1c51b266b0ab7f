"""The events API drops the work of clients that went away before their answer (issue 23 §1).

Requests whose clients have gone must not stay queued: under an outage they would hold
``api.max_pending`` slots and threads of the pool, and delay the answers of the clients that are
still there. The test runs an emulator of its own (the stack's is shared: never paused here) and
freezes it with SIGSTOP, so the store reads already running block on a real connection; with a
pool of two threads, the other requests wait for a thread. Their clients then close their
connections. What must follow: the abandoned requests leave the API's in-flight count at once
(long before ``api.request_deadline``), and once the store answers again, no read queued for
them ever reaches it: the store sees the reads that were running, and the next client's, only.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable

import httpx

from chainloom.eventstore.api.app import ERRORS, EventsApi, events_app, limits
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.reads import StoreReads
from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.settings import BigtableSettings
from chainloom.web.server import WebServer
from chainloom.wormhole.sequences import OpenGap
from tests.integration.eventstore.conftest import OwnEmulator

WORKERS = 2
ABANDONED = 24
DEADLINE = 30.0
"""``api.request_deadline``: far beyond the waits below, so only cancellation can free a slot."""
LEFT = 5.0
"""Seconds the abandoned requests have to leave the in-flight count once their clients left."""


class CountedReads(StoreReads):
    """The real store reads, counting the gap reads that reached the store and those done."""

    def __init__(self, tables: BigtableTables) -> None:
        super().__init__(tables)
        self._lock = threading.Lock()
        self.started = 0
        self.finished = 0

    def open_gaps(
        self, chain: int | None, emitter: str | None
    ) -> tuple[list[OpenGap], int, list[str]]:
        with self._lock:
            self.started += 1
        try:
            return super().open_gaps(chain, emitter)
        finally:
            with self._lock:
                self.finished += 1


async def _within(seconds: float, done: Callable[[], bool]) -> float | None:
    """The seconds until ``done()`` held (polled), or None when it did not within ``seconds``."""
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > seconds:
            return None
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def test_requests_of_clients_that_went_away_are_dropped_with_their_reads(
    emulator: OwnEmulator,
) -> None:
    store = BigtableSettings(
        project="chainloom", instance="disconnect", table="events", operation_timeout=20.0
    )
    ensure_schema(store)
    settings = EventsApiSettings(
        port=0, workers=WORKERS, max_pending=ABANDONED + 8, request_deadline=DEADLINE
    )
    assert emulator.process is not None
    pid = emulator.process.pid
    seen: dict[str, float] = {}

    async def scenario(reads: CountedReads) -> None:
        api = EventsApi(reads, settings)
        server = WebServer(events_app(api), settings.host, 0, limits(settings), ERRORS)
        port = await server.start()
        url = f"http://127.0.0.1:{port}/api/v1/gaps"
        request = f"GET /api/v1/gaps HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        try:
            async with httpx.AsyncClient(timeout=DEADLINE, trust_env=False) as client:
                assert (await client.get(url)).status_code == 200  # the store's channel is up
                os.kill(pid, signal.SIGSTOP)
                try:
                    clients = [
                        await asyncio.open_connection("127.0.0.1", port) for _ in range(ABANDONED)
                    ]
                    for _, writer in clients:
                        writer.write(request)
                        await writer.drain()
                    queued = await _within(
                        15, lambda: api.in_flight == ABANDONED and reads.started == 1 + WORKERS
                    )
                    assert queued is not None, (api.in_flight, reads.started)
                    for _, writer in clients:
                        writer.close()
                    for _, writer in clients:
                        await writer.wait_closed()
                    left = await _within(LEFT, lambda: api.in_flight == 0)
                    seen["left"] = -1.0 if left is None else left
                    seen["still_in_flight"] = api.in_flight
                finally:
                    os.kill(pid, signal.SIGCONT)
                started = time.monotonic()
                fresh = await client.get(url)
                seen["fresh"] = time.monotonic() - started
                assert fresh.status_code == 200, fresh.text
                # Idle: no request left waiting for a read, and every read started has ended.
                idle = await _within(
                    DEADLINE, lambda: api.in_flight == 0 and reads.finished == reads.started
                )
                assert idle is not None, "the API did not become idle"
                seen["reads"] = reads.started
        finally:
            await server.stop()
            api.close()

    with BigtableTables(store) as tables:
        asyncio.run(scenario(CountedReads(tables)))
    # The store saw the first request, the WORKERS reads running when it froze and the fresh
    # request: none of the ABANDONED - WORKERS reads that waited for a thread.
    assert seen["reads"] == 1 + WORKERS + 1, seen
    # The abandoned requests let go of their slots as their clients left, not at the deadline.
    assert seen["still_in_flight"] == 0, seen
    assert 0 <= seen["left"] < LEFT, seen
