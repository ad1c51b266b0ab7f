"""The spy client over real gRPC on loopback (against the harness's spy server): refusals,
reconnects, backoff, slow and failing consumers, and the ``chainloom-dev spy`` commands."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import grpc
import grpc.aio
import pytest

from chainloom.backoff import Backoff
from chainloom.errors import InvalidBackoffError
from chainloom.rpc.generated.spy.v1 import spy_pb2
from chainloom.spy.client import DEFAULT_RECONNECT, SpyClient
from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import METHOD_PATH
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.sim.spy_server import SpyHub, SpyServer
from tests.ingest_support import signed_transfer
from tests.spy_support import FAST, collect, run, token_vaas


def test_unsupported_filters_are_refused_like_the_real_spy():
    async def scenario() -> None:
        server = SpyServer(SpyHub(), "127.0.0.1:0")
        await server.start()
        request = spy_pb2.SubscribeSignedVAARequest(
            filters=[spy_pb2.FilterEntry(batch_filter=spy_pb2.BatchFilter(nonce=1))]
        )
        async with grpc.aio.insecure_channel(server.target) as channel:
            call = channel.unary_stream(
                METHOD_PATH,
                request_serializer=spy_pb2.SubscribeSignedVAARequest.SerializeToString,
                response_deserializer=spy_pb2.SubscribeSignedVAAResponse.FromString,
            )(request)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in call:
                    pass
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert caught.value.details() == "unsupported filter type"

        # The client gives up on a refusal instead of retrying it forever.
        wrong_chain = spy_pb2.FilterEntry(
            emitter_filter=spy_pb2.EmitterFilter(chain_id=70000, emitter_address="ab")  # type: ignore[arg-type]
        )
        client = SpyClient(server.target, backoff=FAST)
        client.request = lambda: spy_pb2.SubscribeSignedVAARequest(filters=[wrong_chain])  # type: ignore[method-assign]
        try:
            with pytest.raises(SpyError, match="refused the filters: emitter chain id 70000"):
                await collect(client, 1)
        finally:
            await server.stop()

    run(scenario)


def test_the_client_reconnects_after_the_server_restarts():
    async def scenario() -> None:
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        port = await server.start()
        client = SpyClient(server.target, backoff=FAST)
        receiving = asyncio.create_task(collect(client, 2, timeout=20))
        await hub.wait_for_subscribers(1, timeout=10)
        first, second = token_vaas(2)
        await hub.publish(first)
        async with asyncio.timeout(5):
            while client.counters.messages < 1:
                await asyncio.sleep(0.01)

        await server.stop()
        await asyncio.sleep(0.5)  # a few failed reconnection attempts
        assert not client.connected
        hub = SpyHub()
        restarted = SpyServer(hub, f"127.0.0.1:{port}")
        await restarted.start()
        await hub.wait_for_subscribers(1, timeout=10)
        await hub.publish(second)

        assert await receiving == [first, second]
        assert client.counters.connections == 2
        assert client.counters.disconnects == 1
        assert client.counters.last_error is not None
        await restarted.stop()

    run(scenario)


def test_backoff_grows_exponentially_with_bounded_jitter():
    backoff = Backoff(initial=0.1, maximum=5.0, multiplier=2.0, jitter=0.5)
    rng = random.Random(7)
    for attempt in range(12):
        ceiling = min(5.0, 0.1 * 2**attempt)
        delays = [backoff.delay(attempt, rng) for _ in range(200)]
        assert all(ceiling * 0.5 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 100  # jittered, not lock-step
    assert replace(DEFAULT_RECONNECT, jitter=0.0).delay(3, rng) == pytest.approx(0.8)
    with pytest.raises(InvalidBackoffError):
        Backoff(initial=2, maximum=1)
    with pytest.raises(SpyError):
        SpyClient("127.0.0.1:1", backoff=Backoff(initial=0, maximum=1))


def test_spy_serve_and_subscribe_commands(tmp_path: Path):
    vaas = token_vaas(5)
    source = tmp_path / "vaas.txt"
    source.write_text("\n".join(v.hex() for v in vaas) + "\n")
    chainloom_dev = [sys.executable, "-m", "chainloom_dev"]
    server = subprocess.Popen(
        [*chainloom_dev, "spy", "serve", "--listen", "127.0.0.1:0", "--file", str(source),
         "--wait-for-subscribers", "1", "--copies", "2", "--exit-when-done", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        assert first.startswith("spy: listening on 127.0.0.1:"), first
        address = first.split()[-1]
        subscriber = subprocess.run(
            [*chainloom_dev, "spy", "subscribe", "--address", address, "--count", "10",
             "--filter", f"2:{DEV_TOKEN_BRIDGE_EMITTER.hex()}"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert subscriber.stdout.split() == [v.hex() for v in vaas for _ in range(2)]
        out, _ = server.communicate(timeout=30)
        counters = json.loads(out)
        assert counters["published"] == 10
        assert counters["delivered"] == 10
        assert counters["dropped"] == 0
    finally:
        server.kill()
        server.wait()


def test_spy_serve_refuses_a_bad_file(tmp_path: Path):
    bad = tmp_path / "bad.txt"
    bad.write_text("zzzz\n")
    result = subprocess.run(
        [sys.executable, "-m", "chainloom_dev", "spy", "serve", "--listen", "127.0.0.1:0",
         "--file", str(bad), "--exit-when-done"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "bad.txt line 1" in result.stderr


def test_spy_serve_replays_history_from_the_event_store(bigtable_table_name: str):
    from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
    from chainloom.eventstore.writer import EventWriter
    from chainloom.settings import BigtableSettings
    from chainloom.wormhole import devnet_emitters
    from tests.ingest_support import GUARDIANS

    settings = BigtableSettings(project="chainloom", instance="t", table=bigtable_table_name)
    ensure_schema(settings)
    stored = [signed_transfer(i) for i in range(6)]
    elsewhere = signed_transfer(50, emitter_chain=6)
    with (
        BigtableTables(settings) as tables,
        EventWriter(tables, GUARDIANS.sets(), emitters=devnet_emitters()) as writer,
    ):
        summary = writer.put_many([v.to_bytes() for v in [*stored, elsewhere]])
    assert summary.as_dict()["refused"] == 0, summary.as_dict()

    chainloom_dev = [sys.executable, "-m", "chainloom_dev"]
    server = subprocess.Popen(
        [*chainloom_dev, "spy", "serve", "--listen", "127.0.0.1:0", "--events-chain", "2",
         "--from-seq", "2", "--bigtable-project", "chainloom", "--bigtable-instance", "t",
         "--bigtable-table", bigtable_table_name, "--wait-for-subscribers", "1",
         "--exit-when-done", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        address = server.stderr.readline().split()[-1]
        subscriber = subprocess.run(
            [*chainloom_dev, "spy", "subscribe", "--address", address, "--count", "4"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert subscriber.stdout.split() == [v.to_bytes().hex() for v in stored[2:]]
        out, _ = server.communicate(timeout=30)
        assert json.loads(out)["published"] == 4
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()


def test_a_failing_consumer_does_not_end_the_subscription():
    async def scenario() -> None:
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        client = SpyClient(server.target, backoff=FAST)
        vaas = token_vaas(6)
        seen: list[bytes] = []

        async def consume(vaa: bytes) -> None:
            seen.append(vaa)
            if len(seen) % 2:
                raise RuntimeError("consumer bug")
            if len(seen) == len(vaas):
                client.stop()

        running = asyncio.create_task(client.run(consume, workers=2))
        try:
            await hub.wait_for_subscribers(1, timeout=10)
            for vaa in vaas:
                await hub.publish(vaa)
            await asyncio.wait_for(running, 10)
        finally:
            await server.stop()
        assert sorted(seen) == sorted(vaas)
        assert client.counters.consumer_errors == 3

    run(scenario)


def test_spy_serve_streams_stdin():
    import base64

    vaas = token_vaas(4)
    lines = "".join(f"{base64.b64encode(v).decode()}\n" for v in vaas)
    chainloom_dev = [sys.executable, "-m", "chainloom_dev"]
    server = subprocess.Popen(
        [*chainloom_dev, "spy", "serve", "--listen", "127.0.0.1:0", "--stdin",
         "--wait-for-subscribers", "1", "--exit-when-done", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    subscriber = None
    try:
        assert server.stderr is not None
        address = server.stderr.readline().split()[-1]
        subscriber = subprocess.Popen(
            [*chainloom_dev, "spy", "subscribe", "--address", address, "--count", "4"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        out, _ = server.communicate(lines, timeout=60)
        received, _ = subscriber.communicate(timeout=60)
        assert received.split() == [v.hex() for v in vaas]
        assert json.loads(out)["published"] == 4
    finally:
        for process in (server, subscriber):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()


@pytest.mark.parametrize("overflow", ["block", "drop"])
def test_a_slow_consumer_pushes_back_or_drops_as_configured(overflow):
    async def scenario() -> None:
        hub = SpyHub(lossless=True)
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        client = SpyClient(server.target, buffer_size=3, overflow=overflow, backoff=FAST)
        vaas = token_vaas(12)
        received: list[bytes] = []

        async def slow_reader() -> None:
            async for vaa in client.messages():
                received.append(vaa)
                if len(received) == 1:
                    await asyncio.sleep(1.0)  # everything else arrives meanwhile
                if len(received) == len(vaas) - client.counters.drops:
                    client.stop()

        reading = asyncio.create_task(slow_reader())
        try:
            await hub.wait_for_subscribers(1, timeout=10)
            for vaa in vaas:
                await hub.publish(vaa)
            await asyncio.wait_for(reading, 20)
        finally:
            await server.stop()
        if overflow == "block":
            assert received == vaas
            assert client.counters.drops == 0
        else:
            assert client.counters.drops > 0
            assert len(received) == len(vaas) - client.counters.drops
            assert received[0] == vaas[0]

    run(scenario)
