"""The listener against the real Redis and real gRPC: spy server -> listener -> tables."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from chainloom.backoff import Backoff
from chainloom.relayer.intake import Intake, Outcome
from chainloom.relayer.listener import Listener
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Rule, Validator
from chainloom.spy.client import SpyClient
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import DEV_NFT_BRIDGE_EMITTER, DEV_TOKEN_BRIDGE_EMITTER, VAA
from chainloom_dev.sim.sim_chains import InProcessAdapter
from chainloom_dev.sim.spy_server import SpyHub, SpyServer
from tests.ingest_support import (
    GUARDIANS,
    MIN_FEE,
    SOURCE_CHAIN,
    TARGET_CHAIN,
    TOKEN,
    TOKEN_CHAIN,
    dev_policy,
    signed_transfer,
)
from tests.integration.relayer.relay_support import private_redis

FAST = Backoff(initial=0.05, maximum=0.2, jitter=0.5)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


def make_intake(client: redis.Redis, adapters: dict[int, InProcessAdapter] | None = None) -> Intake:
    return Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client), adapters)


def guardian_copies(vaa: VAA, count: int, rng: random.Random) -> list[bytes]:
    """What a spy forwards: the same VAA as assembled by ``count`` guardians (other subsets)."""
    copies = []
    for _ in range(count):
        size = rng.randrange(GUARDIANS.quorum, GUARDIANS.count + 1)
        copies.append(GUARDIANS.resign(vaa, signers=sorted(rng.sample(range(19), size))).to_bytes())
    return copies


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 120))


async def until(condition: Callable[[], bool], timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


def decided(intake: Intake) -> int:
    return sum(intake.counters.snapshot()["by_status"].values())


def test_spy_stream_to_tables_with_guardian_copies_and_rejections(client):
    rng = random.Random(11)
    transfers = [signed_transfer(i) for i in range(30)]
    stream = [copy for vaa in transfers for copy in guardian_copies(vaa, 19, rng)]
    refused = [
        signed_transfer(100, to_chain=5).to_bytes(),  # unsupported target chain
        signed_transfer(101, fee=MIN_FEE - 1).to_bytes(),  # fee too low
        signed_transfer(102, emitter=DEV_NFT_BRIDGE_EMITTER).to_bytes(),  # filtered out by the spy
    ]
    rng.shuffle(stream)
    intake = make_intake(client)

    async def scenario() -> None:
        hub = SpyHub(lossless=True)
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        spy = SpyClient(
            server.target, [EmitterKey(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)], backoff=FAST
        )
        listener = Listener(intake, spy=spy)
        await listener.start()
        try:
            await hub.wait_for_subscribers(1, timeout=10)
            for vaa in stream + refused:
                await hub.publish(vaa)
            await until(lambda: decided(intake) == len(stream) + 2)
        finally:
            await listener.stop()
            await server.stop()

    run(scenario)

    tables = RelayTables(client)
    assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: 30}
    for vaa in transfers:
        assert tables.locate(vaa.digest_hex) is Table.INCOMING
        stored = tables.get(vaa.digest_hex)
        assert stored is not None
        assert stored.target_chain == TARGET_CHAIN
        assert stored.sequence == vaa.sequence
    counts = intake.counters.snapshot()
    assert counts["by_status"] == {"queued": 30, "known": 30 * 18, "rejected": 2}
    assert counts["by_source"] == {"spy": len(stream) + 2}
    rules = intake.rule_counters.snapshot()
    assert rules["not_queued"] == {"passed": 30, "rejected": 30 * 18}
    assert rules["target_chain"]["rejected"] == 1
    assert rules["fee"]["rejected"] == 1
    assert rules["known_emitter"]["rejected"] == 0  # the spy's filter kept the NFT VAA away
    # No chain adapter here: the redemption check is skipped (and said so), never "passed".
    assert rules["not_redeemed"] == {"passed": 0, "rejected": 0}
    assert counts["redeem_check_skipped"] == 30


def test_the_listener_keeps_consuming_after_the_spy_restarts(client):
    intake = make_intake(client)
    before = [signed_transfer(i).to_bytes() for i in range(5)]
    after = [signed_transfer(i).to_bytes() for i in range(5, 10)]

    async def scenario() -> None:
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        port = await server.start()
        spy = SpyClient(server.target, backoff=FAST)
        listener = Listener(intake, spy=spy)
        await listener.start()
        try:
            await hub.wait_for_subscribers(1, timeout=10)
            for vaa in before:
                await hub.publish(vaa)
            await until(lambda: decided(intake) == 5)
            await server.stop()
            await asyncio.sleep(0.3)
            hub = SpyHub()
            server = SpyServer(hub, f"127.0.0.1:{port}")
            await server.start()
            await hub.wait_for_subscribers(1, timeout=10)
            for vaa in after:
                await hub.publish(vaa)
            await until(lambda: decided(intake) == 10)
            assert listener.stats()["spy"]["connections"] == 2
            assert listener.stats()["spy"]["disconnects"] == 1
        finally:
            await listener.stop()
            await server.stop()

    run(scenario)
    assert RelayTables(client).depths()[Table.INCOMING] == {TARGET_CHAIN: 10}


def test_nineteen_copies_racing_through_many_threads_make_one_request(client):
    rng = random.Random(5)
    vaa = signed_transfer(7)
    copies = guardian_copies(vaa, 19, rng)
    intake = make_intake(client)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda data: intake.submit(data, source="spy"), copies))

    assert [r.outcome for r in results].count(Outcome.QUEUED) == 1
    assert [r.outcome for r in results].count(Outcome.KNOWN) == 18
    assert {r.digest for r in results} == {vaa.digest_hex}
    assert all(r.table == "incoming" for r in results)
    assert RelayTables(client).depths()[Table.INCOMING] == {TARGET_CHAIN: 1}


def test_an_already_redeemed_transfer_is_refused_and_not_queued(client):
    adapter = InProcessAdapter(TARGET_CHAIN)
    intake = make_intake(client, {TARGET_CHAIN: adapter})
    scooped, fresh = signed_transfer(1), signed_transfer(2)
    adapter.mark_redeemed(scooped.to_bytes())

    refused = intake.submit(scooped.to_bytes())
    queued = intake.submit(fresh.to_bytes())

    assert refused.outcome is Outcome.REJECTED
    assert refused.rule is Rule.NOT_REDEEMED
    assert refused.reason == f"already redeemed on target chain {TARGET_CHAIN}"
    assert queued.outcome is Outcome.QUEUED
    tables = RelayTables(client)
    assert tables.locate(scooped.digest_hex) is None
    assert tables.locate(fresh.digest_hex) is Table.INCOMING
    assert intake.rule_counters.snapshot()["not_redeemed"] == {"passed": 1, "rejected": 1}


def test_a_known_request_reports_the_table_it_is_in(client):
    intake = make_intake(client)
    tables = RelayTables(client)
    vaa = signed_transfer(3)
    assert intake.submit(vaa.to_bytes()).outcome is Outcome.QUEUED
    assert tables.acquire_lease("w1", TARGET_CHAIN, "token", 30)
    claimed = tables.claim("w1", TARGET_CHAIN, "token", limit=10, lease_ttl=30)
    assert [r.digest for r in claimed] == [vaa.digest_hex]

    again = intake.submit(GUARDIANS.resign(vaa, signers=list(range(6, 19))).to_bytes())

    assert again.outcome is Outcome.KNOWN
    assert again.table == "in_work"
    assert again.reason == "already in in_work"


def test_redis_down_is_unavailable_not_a_rejection():
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    intake = make_intake(dead)
    result = intake.submit(signed_transfer(1).to_bytes())
    assert result.outcome is Outcome.UNAVAILABLE
    assert result.reason is not None
    assert result.reason.startswith("redis unavailable")


def persistence_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "chainloom.relayer.listener" and record.levelno == logging.WARNING
    ]


@pytest.mark.parametrize("appendonly", [False, True])
def test_listener_warns_once_at_start_when_redis_does_not_persist(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, appendonly: bool
):
    caplog.set_level(logging.WARNING, logger="chainloom.relayer.listener")
    with private_redis(tmp_path, appendonly=appendonly, appendfsync="everysec") as url:
        connection = redis.Redis.from_url(url)
        port = connection.get_connection_kwargs()["port"]
        listener = Listener(make_intake(connection))

        async def scenario() -> None:
            await listener.start()
            await listener.stop()  # waits for the start-up check, which runs in the pool

        try:
            run(scenario)
        finally:
            connection.close()
    warnings = persistence_warnings(caplog)
    if appendonly:
        assert warnings == []
    else:
        assert len(warnings) == 1
        assert f"Redis 127.0.0.1:{port} runs without its append-only file" in warnings[0]


def test_listener_starts_when_redis_is_unreachable_and_says_so(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="chainloom.relayer.listener")
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    listener = Listener(make_intake(dead))

    async def scenario() -> None:
        await listener.start()
        await listener.stop()

    run(scenario)
    warnings = persistence_warnings(caplog)
    assert len(warnings) == 1
    assert warnings[0].startswith("listener: cannot read Redis's persistence setting yet")


def write_listener_config(tmp_path: Path, redis_url: str, spy_address: str) -> Path:
    sets = tmp_path / "guardian-sets.json"
    sets.write_text(json.dumps(GUARDIANS.sets().to_json()))
    config = tmp_path / "relayer.yaml"
    config.write_text(
        json.dumps(
            {
                "redis": {"url": redis_url},
                "spy_address": spy_address,
                "rest": {"host": "127.0.0.1", "port": 0},
                "guardian_sets": {"source": str(sets)},
                "known_emitters": [
                    {"chain": SOURCE_CHAIN, "address": DEV_TOKEN_BRIDGE_EMITTER.hex()}
                ],
                "target_chains": [TARGET_CHAIN],
                "tokens": [{"chain": TOKEN_CHAIN, "address": TOKEN.hex(), "min_fee": MIN_FEE}],
            }
        )
    )
    return config


def test_spy_serve_feeds_relayer_listen_end_to_end(tmp_path: Path, redis_url: str, client):
    transfers = [signed_transfer(i) for i in range(25)]
    source = tmp_path / "vaas.txt"
    source.write_text("\n".join(v.to_bytes().hex() for v in transfers) + "\n")
    chainloom = [sys.executable, "-m", "chainloom.cli"]
    chainloom_dev = [sys.executable, "-m", "chainloom_dev"]
    spy = subprocess.Popen(
        [*chainloom_dev, "spy", "serve", "--listen", "127.0.0.1:0", "--file", str(source),
         "--copies", "3", "--wait-for-subscribers", "1", "--lossless"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    listener = None
    try:
        assert spy.stderr is not None
        spy_address = spy.stderr.readline().split()[-1]
        config = write_listener_config(tmp_path, redis_url, spy_address)
        listener = subprocess.Popen(
            [*chainloom, "relayer", "listen", "--config", str(config)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert listener.stderr is not None
        # A warning about Redis's persistence may come before or after the line we wait for.
        first = ""
        while not first.startswith("listener: REST on"):
            first = listener.stderr.readline()
            assert first, "the listener exited before serving"
        assert first.startswith("listener: REST on 127.0.0.1:"), first
        tables = RelayTables(client)
        deadline = time.monotonic() + 60
        while tables.depths()[Table.INCOMING].get(TARGET_CHAIN, 0) < 25:
            assert time.monotonic() < deadline, tables.depths()
            assert listener.poll() is None, listener.stderr.read()
            time.sleep(0.1)
        port = int(first.split(":")[-1])
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/stats", timeout=10) as answer:
            stats = json.load(answer)
        assert stats["intake"]["by_status"]["queued"] == 25
        assert stats["spy"]["connected"] is True
        listener.send_signal(signal.SIGTERM)
        assert listener.wait(timeout=30) == 0
    finally:
        for process in (spy, listener):
            if process is None:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
    assert all(tables.locate(t.digest_hex) is Table.INCOMING for t in transfers)


def test_relayer_listen_refuses_a_bad_config(tmp_path: Path):
    config = tmp_path / "relayer.yaml"
    config.write_text("rest: {port: 99999}\n")
    result = subprocess.run(
        [sys.executable, "-m", "chainloom.cli", "relayer", "listen", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{config}: rest.port: Input should be less than or equal to 65535" in result.stderr
    assert "Traceback" not in result.stderr


class FlakyLink:
    """A TCP forwarder to the real Redis that a test can cut and restore (an outage)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    async def up(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def down(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        for writer in list(self._writers):
            await writer.wait_closed()
        self._writers.clear()
        await self._server.wait_closed()
        self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, upstream_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        self._handlers.discard(task)


def test_spy_vaas_wait_out_a_redis_outage_instead_of_being_lost(redis_url, client):
    parts = urllib.parse.urlsplit(redis_url)
    db = int(parts.path.lstrip("/") or 0)
    transfers = [signed_transfer(i).to_bytes() for i in range(8)]

    async def scenario() -> None:
        link = FlakyLink(parts.hostname or "127.0.0.1", parts.port or 6379)
        await link.up()
        flaky = redis.Redis(
            host="127.0.0.1", port=link.port, db=db, socket_connect_timeout=0.5, socket_timeout=1
        )
        intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(flaky))
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        listener = Listener(intake, spy=SpyClient(server.target, backoff=FAST))
        await listener.start()
        try:
            await hub.wait_for_subscribers(1, timeout=10)
            await hub.publish(transfers[0])
            await until(lambda: intake.counters.snapshot()["by_status"].get("queued") == 1)
            await link.down()
            for vaa in transfers[1:]:
                await hub.publish(vaa)
            await until(lambda: intake.counters.snapshot()["by_status"].get("unavailable", 0) > 3)
            await link.up()
            await until(lambda: intake.counters.snapshot()["by_status"].get("queued") == 8)
        finally:
            await listener.stop()
            await server.stop()
            flaky.close()
            await link.down()

    run(scenario)
    tables = RelayTables(client)
    assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: 8}


def test_relayer_listen_asks_the_simulated_chain_with_redeem_check(
    tmp_path: Path, redis_url: str, client
):
    import urllib.error
    import urllib.request

    from chainloom_dev.sim.sim_chains import RedisLedgerAdapter, SimChainRules

    scooped, fresh = signed_transfer(1), signed_transfer(2)
    RedisLedgerAdapter.install(
        client, TARGET_CHAIN, SimChainRules(pre_redeemed=(scooped.digest_hex,))
    )
    config = write_listener_config(tmp_path, redis_url, "127.0.0.1:1")
    listener = subprocess.Popen(
        [sys.executable, "-m", "chainloom.cli", "relayer", "listen", "--config", str(config),
         "--no-spy", "--redeem-check", "redis-sim"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def post(vaa: VAA) -> tuple[int, dict[str, str]]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/relay",
            data=json.dumps({"vaa": vaa.to_bytes().hex()}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.load(error)

    try:
        assert listener.stderr is not None
        port = int(listener.stderr.readline().rsplit(":", 1)[1])
        assert post(scooped) == (
            422,
            {
                "status": "rejected",
                "digest": scooped.digest_hex,
                "message_id": scooped.message_id,
                "reason": f"already redeemed on target chain {TARGET_CHAIN}",
                "rule": "not_redeemed",
            },
        )
        status, body = post(fresh)
        assert (status, body["status"]) == (202, "queued")
    finally:
        listener.send_signal(signal.SIGTERM)
        listener.wait(timeout=30)
        if listener.stderr is not None:
            listener.stderr.close()
    tables = RelayTables(client)
    assert tables.locate(scooped.digest_hex) is None
    assert tables.locate(fresh.digest_hex) is Table.INCOMING
