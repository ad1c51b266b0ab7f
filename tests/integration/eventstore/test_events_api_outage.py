"""The events API when its Bigtable goes away under load and comes back (issue 23 §1).

The test runs an emulator of its own (the stack's is shared: never stopped here), kills it
under 40 concurrent clients, restarts it and recreates the tables. Every request must be
answered within ``api.request_deadline`` + 1 s, 503s at once while the store is known down, and
200s again within 5 s of the store's return. Clients that give up during the outage do not
delay the recovery: their requests are cancelled with the work they queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
import time

import aiohttp

from chainloom.eventstore.api.app import serve
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.reads import StoreReads
from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.settings import BigtableSettings
from chainloom_dev.net import free_port
from tests.integration.eventstore.conftest import OwnEmulator

DEADLINE = 3.0
CLIENTS = 40


def test_a_store_outage_under_load_fails_fast_and_recovers(emulator: OwnEmulator) -> None:
    store = BigtableSettings(
        project="chainloom", instance="outage", table="events", operation_timeout=2.0
    )
    ensure_schema(store)
    api = EventsApiSettings(port=0, request_deadline=DEADLINE, probe_interval=0.25, workers=8)
    ready = threading.Event()
    bound: list[int] = []
    stop: asyncio.Event | None = None
    loop = asyncio.new_event_loop()

    def server() -> None:
        nonlocal stop
        asyncio.set_event_loop(loop)
        stop = asyncio.Event()
        with BigtableTables(store) as tables:

            def on_ready(port: int) -> None:
                bound.append(port)
                ready.set()

            loop.run_until_complete(serve(StoreReads(tables), api, stop=stop, on_ready=on_ready))

    thread = threading.Thread(target=server, daemon=True)
    thread.start()
    assert ready.wait(30)
    url = f"http://127.0.0.1:{bound[0]}/api/v1/gaps"
    answers: list[tuple[float, float, int]] = []  # (sent at, seconds, status)
    phase = {"restarted": 0.0}

    async def load(until: float) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:

            async def client() -> None:
                while time.monotonic() < until:
                    sent = time.monotonic()
                    async with session.get(url) as reply:
                        await reply.read()
                    answers.append((sent, time.monotonic() - sent, reply.status))

            async def quitter() -> None:  # clients that give up after 0.2 s, during the outage
                async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=0.2)
                ) as impatient:
                    while time.monotonic() < until:
                        with contextlib.suppress(asyncio.TimeoutError, aiohttp.ClientError):
                            async with impatient.get(url) as reply:
                                await reply.read()

            await asyncio.gather(*(client() for _ in range(CLIENTS)), quitter(), quitter())

    async def outage() -> None:
        start = time.monotonic()
        loading = asyncio.create_task(load(start + 16))
        await asyncio.sleep(2)
        emulator.kill()
        await asyncio.sleep(5)
        emulator.start()
        await asyncio.get_running_loop().run_in_executor(None, ensure_schema, store)
        phase["restarted"] = time.monotonic()
        await loading

    try:
        asyncio.run(outage())
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
    slowest = max(seconds for _, seconds, _ in answers)
    assert slowest < DEADLINE + 1, slowest
    statuses = {status for *_, status in answers}
    assert statuses <= {200, 503}, statuses
    failed = [a for a in answers if a[2] == 503]
    assert failed, "the outage was not seen"
    back = [sent + seconds for sent, seconds, status in answers
            if status == 200 and sent > phase["restarted"]]  # fmt: skip
    assert back, "no 200 after the restart"
    assert min(back) - phase["restarted"] < 5.0
    # While the circuit was open, the 503s came at once (nine in ten within 0.5 s on a loaded
    # machine; none waited for a read).
    quick = sorted(s for sent, s, _ in failed if sent > failed[0][0] + DEADLINE + 1)
    assert len(quick) > 100
    assert quick[len(quick) * 9 // 10] < 0.5, quick[-5:]
    assert os.environ["BIGTABLE_EMULATOR_HOST"] == f"127.0.0.1:{emulator.port}"


def test_the_cli_reports_a_refused_connection_within_seconds() -> None:
    closed = free_port()
    env = {**os.environ, "BIGTABLE_EMULATOR_HOST": f"127.0.0.1:{closed}"}
    message = "2/" + "00" * 12 + "3ee18b2214aff97000d974cf647e7c347e8fa585/1"
    start = time.monotonic()
    result = subprocess.run(
        ["chainloom", "events", "get", message], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - start
    assert result.returncode == 4, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"127.0.0.1:{closed}" in lines[0]
    assert "refused" in lines[0].lower()
    assert seconds < 8, seconds  # the connect deadline (3 s), not the 30 s operation deadline
