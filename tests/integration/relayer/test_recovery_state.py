"""Missed-VAA recovery state in the real Redis: a listener stopped and started again resumes
from the last sequence it saw, and asks the public API only for what came after it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import orjson
import pytest
import redis

from chainloom.backoff import Backoff
from chainloom.publicrpc import PublicRpcClient
from chainloom.relayer.config import RecoverySettings, StartSequence
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.model import Table
from chainloom.relayer.recovery import MissedVaaRecovery
from chainloom.relayer.recovery_state import RedisRecoveryState
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from chainloom.settings import PublicRpcSettings
from chainloom.spy.client import SpyClient
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.sim.publicrpc_server import PublicRpcServer, PublicRpcServicer, message_id_of
from chainloom_dev.sim.spy_server import MessageId, SpyHub, SpyServer
from tests.ingest_support import GUARDIANS, SOURCE_CHAIN, TARGET_CHAIN, dev_policy, signed_transfer

FAST = Backoff(initial=0.05, maximum=0.2, jitter=0.5)
EMITTER_HEX = DEV_TOKEN_BRIDGE_EMITTER.hex()
EMITTERS = frozenset({(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)})
VAAS = {s: signed_transfer(s).to_bytes() for s in range(80)}


class AskedArchive:
    """The public API's VAAs, remembering every sequence it was asked for."""

    def __init__(self) -> None:
        self.vaas = {message_id_of(raw): raw for raw in VAAS.values()}
        self.asked: list[int] = []
        self._lock = threading.Lock()

    def get(self, key: MessageId, /) -> bytes | None:
        with self._lock:
            self.asked.append(key[2])
        return self.vaas.get(key)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


def run_listener(
    tables: RelayTables,
    archive: AskedArchive,
    sequences: range,
    settings: RecoverySettings,
    *,
    until_fetched: int,
) -> dict[str, object]:
    """One run of a listener: the spy publishes ``sequences``; returns the recovery stats once
    ``until_fetched`` VAAs were fetched and no gap is open (the state is saved at stop)."""
    intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), tables)

    async def scenario() -> dict[str, object]:
        hub = SpyHub(lossless=True)
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        spy = SpyClient(
            server.target, [EmitterKey(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)], backoff=FAST
        )
        with PublicRpcServer(PublicRpcServicer(archive), "127.0.0.1:0") as public_api:
            rpc = PublicRpcClient(PublicRpcSettings(endpoints=(public_api.target,), timeout=2))
            recovery = MissedVaaRecovery(EMITTERS, settings, rpc, state=RedisRecoveryState(tables))
            listener = Listener(intake, spy=spy, recovery=recovery)
            await listener.start()
            try:
                await hub.wait_for_subscribers(1, timeout=10)
                for sequence in sequences:
                    await hub.publish(VAAS[sequence])
                async with asyncio.timeout(60):
                    while True:
                        track = recovery.book.tracks.get((SOURCE_CHAIN, EMITTER_HEX))
                        if (
                            track is not None
                            and track.highest == sequences[-1]
                            and not recovery.book.missing()
                            and recovery.counters.fetched >= until_fetched
                        ):
                            break
                        await asyncio.sleep(0.05)
            finally:
                await listener.stop()
                await server.stop()
            return recovery.stats()

    return asyncio.run(scenario())


def saved_highest(client: redis.Redis, tables: RelayTables) -> int:
    raw = client.hget(tables.key("recovery"), f"{SOURCE_CHAIN}/{EMITTER_HEX}")
    assert isinstance(raw, bytes)
    highest = orjson.loads(raw)["tracker"]["highest"]
    assert isinstance(highest, int)
    return highest


def test_a_restarted_listener_asks_only_for_what_was_published_while_it_was_down(
    client: redis.Redis,
) -> None:
    tables = RelayTables(client)
    archive = AskedArchive()
    settings = RecoverySettings(grace=0.3, check_interval=0.1, retry_after=30)

    first = run_listener(tables, archive, range(30), settings, until_fetched=0)
    assert first["fetched"] == 0
    assert archive.asked == []
    assert saved_highest(client, tables) == 29

    # 30..59 are published while no listener runs; the next one hears 60..79.
    second = run_listener(tables, archive, range(60, 80), settings, until_fetched=30)
    assert sorted(archive.asked) == list(range(30, 60))  # each once, none at or before 29
    assert second["fetched"] == second["queued"] == 30
    assert second["state_loaded"] is True
    assert saved_highest(client, tables) == 79
    assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: 80}


def test_a_configured_start_sequence_is_where_an_emitter_without_saved_state_begins(
    client: redis.Redis,
) -> None:
    tables = RelayTables(client)
    archive = AskedArchive()
    start = StartSequence(chain=SOURCE_CHAIN, address=EMITTER_HEX, sequence=10)
    settings = RecoverySettings(
        grace=0.3, check_interval=0.1, retry_after=30, start_sequences=(start,)
    )

    stats = run_listener(tables, archive, range(15, 20), settings, until_fetched=5)
    assert sorted(archive.asked) == [10, 11, 12, 13, 14]
    assert stats["queued"] == 5
    assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: 10}

    # Saved state wins over the start sequence: a restart asks for nothing again.
    run_listener(tables, archive, range(20, 25), settings, until_fetched=0)
    assert sorted(archive.asked) == [10, 11, 12, 13, 14]
    assert saved_highest(client, tables) == 24
