"""Helpers for tests that run the harness's spy server and the relayer's spy client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from chainloom.backoff import Backoff
from chainloom.spy.client import SpyClient
from tests.ingest_support import signed_transfer

FAST = Backoff(initial=0.05, maximum=0.2, jitter=0.5)
"""Reconnection backoff short enough for tests."""


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 60))


async def collect(client: SpyClient, count: int, timeout: float = 10) -> list[bytes]:
    received: list[bytes] = []
    async with asyncio.timeout(timeout):
        async for vaa in client.messages():
            received.append(vaa)
            if len(received) == count:
                client.stop()
    return received


def token_vaas(count: int, start: int = 0) -> list[bytes]:
    return [signed_transfer(start + i).to_bytes() for i in range(count)]
