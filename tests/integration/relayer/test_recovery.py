"""Missed-VAA recovery against real servers: a spy that drops 50 sequences on purpose, a
public-API server holding them, the listener and the real Redis tables."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
import redis

from chainloom.backoff import Backoff
from chainloom.publicrpc import PublicRpcClient
from chainloom.relayer.config import RecoverySettings
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.model import Table
from chainloom.relayer.recovery import MissedVaaRecovery
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from chainloom.settings import PublicRpcSettings
from chainloom.spy.client import SpyClient
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, parse_vaa
from chainloom_dev.sim.publicrpc_server import PublicRpcServer, PublicRpcServicer, message_id_of
from chainloom_dev.sim.spy_server import SpyHub, SpyServer
from tests.ingest_support import (
    GUARDIANS,
    MIN_FEE,
    SOURCE_CHAIN,
    TARGET_CHAIN,
    dev_policy,
    signed_transfer,
)

FAST = Backoff(initial=0.05, maximum=0.2, jitter=0.5)
EMITTER_HEX = DEV_TOKEN_BRIDGE_EMITTER.hex()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


def test_dropped_sequences_are_fetched_and_queued_once_through_the_intake(
    client: redis.Redis,
) -> None:
    # Sequences 0..99; the spy drops 20..69; every 10th is not relayable (fee too low).
    vaas = [
        signed_transfer(s, fee=MIN_FEE - 1 if s % 10 == 0 else MIN_FEE).to_bytes()
        for s in range(100)
    ]
    dropped = {(SOURCE_CHAIN, EMITTER_HEX, s) for s in range(20, 70)}
    relayable = [raw for s, raw in enumerate(vaas) if s % 10]
    intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client))
    servicer = PublicRpcServicer({message_id_of(raw): raw for raw in vaas})
    settings = RecoverySettings(grace=0.5, check_interval=0.2, retry_after=30)
    rng = random.Random(14)

    async def scenario() -> dict[str, object]:
        hub = SpyHub(lossless=True, drop=dropped)
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        spy = SpyClient(
            server.target, [EmitterKey(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)], backoff=FAST
        )
        with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
            rpc = PublicRpcClient(PublicRpcSettings(endpoints=(public_api.target,), timeout=2))
            recovery = MissedVaaRecovery(
                frozenset({(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)}), settings, rpc
            )
            listener = Listener(intake, spy=spy, recovery=recovery)
            await listener.start()
            try:
                await hub.wait_for_subscribers(1, timeout=10)
                for raw in vaas:
                    for _ in range(rng.randrange(1, 4)):  # guardian copies, as a spy sends
                        await hub.publish(raw)
                async with asyncio.timeout(60):
                    while recovery.book.missing() or recovery.counters.fetched < len(dropped):
                        await asyncio.sleep(0.05)
                return listener.stats()
            finally:
                await listener.stop()
                await server.stop()

    stats = asyncio.run(scenario())

    tables = RelayTables(client)
    assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: len(relayable)}
    for raw in relayable:
        assert tables.locate(message_digest(raw)) is Table.INCOMING
    recovery_stats = stats["recovery"]
    assert isinstance(recovery_stats, dict)
    assert recovery_stats["fetched"] == 50
    assert recovery_stats["queued"] == 45  # the five with a low fee are rejected, not queued
    assert recovery_stats["rejected"] == 5
    assert recovery_stats["missing"] == recovery_stats["open_gaps"] == 0
    assert servicer.counters.found == 50  # each dropped sequence fetched once
    by_source = intake.counters.snapshot()["by_source"]
    assert by_source["recovery"] == 50


def message_digest(raw: bytes) -> str:
    return parse_vaa(raw).digest_hex
