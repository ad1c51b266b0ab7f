"""The harness's spy server over real gRPC on loopback: fan-out, OR-ed filters, bounded
buffers that drop and count, "too slow", lossless replay, VAA files."""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
import pytest

from chainloom.rpc.generated.spy.v1 import spy_pb2
from chainloom.spy.client import SpyClient
from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import METHOD_PATH, EmitterKey
from chainloom.wormhole import DEV_NFT_BRIDGE_EMITTER, DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.sim.spy_server import SpyHub, SpyServer, read_vaa_lines
from tests.ingest_support import signed_transfer
from tests.spy_support import FAST, collect, run, token_vaas


def test_every_published_vaa_reaches_an_unfiltered_subscriber_in_order():
    async def scenario() -> None:
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        client = SpyClient(server.target, backoff=FAST)
        vaas = token_vaas(20)
        receiving = asyncio.create_task(collect(client, len(vaas)))
        await hub.wait_for_subscribers(1, timeout=10)
        for vaa in vaas:
            await hub.publish(vaa)
        assert await receiving == vaas
        assert client.counters.connections == 1
        assert client.counters.messages == 20
        assert client.counters.drops == 0
        await server.stop()

    run(scenario)


def test_filters_are_ored_and_empty_means_everything():
    async def scenario() -> None:
        hub = SpyHub()
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        token = signed_transfer(1).to_bytes()
        nft = signed_transfer(2, emitter=DEV_NFT_BRIDGE_EMITTER).to_bytes()
        other_chain = signed_transfer(3, emitter_chain=6).to_bytes()

        only_token = SpyClient(server.target, [EmitterKey(2, DEV_TOKEN_BRIDGE_EMITTER)])
        # The address as the spy accepts it: with 0x, without the left zero padding.
        short = "0x" + DEV_NFT_BRIDGE_EMITTER.hex().lstrip("0")
        token_or_nft = SpyClient(
            server.target,
            [EmitterKey(2, DEV_TOKEN_BRIDGE_EMITTER), EmitterKey.parse(2, short)],
        )
        everything = SpyClient(server.target)
        tasks = [
            asyncio.create_task(collect(only_token, 1)),
            asyncio.create_task(collect(token_or_nft, 2)),
            asyncio.create_task(collect(everything, 3)),
        ]
        await hub.wait_for_subscribers(3, timeout=10)
        for vaa in (nft, other_chain, token):
            await hub.publish(vaa)
        assert await tasks[0] == [token]
        assert await tasks[1] == [nft, token]
        assert await tasks[2] == [nft, other_chain, token]
        await server.stop()

    run(scenario)


def test_a_full_subscriber_buffer_drops_and_counts():
    async def scenario() -> None:
        hub = SpyHub(buffer_size=4)
        server = SpyServer(hub, "127.0.0.1:0")
        await server.start()
        subscription = await hub.subscribe(frozenset())  # a consumer that never reads
        for vaa in token_vaas(10):
            await hub.publish(vaa)
        assert subscription.buffer.qsize() == 4
        assert subscription.dropped == 6
        assert hub.counters.dropped == 6
        assert hub.counters.delivered == 4
        await hub.unsubscribe(subscription)
        await server.stop()

    run(scenario)


def test_a_stream_blocked_longer_than_the_send_timeout_is_ended_too_slow():
    async def scenario() -> None:
        hub = SpyHub(buffer_size=10_000)
        server = SpyServer(hub, "127.0.0.1:0", send_timeout=0.2)
        await server.start()
        big = signed_transfer(1, payload_id=3, extra=bytes(60_000)).to_bytes()
        async with grpc.aio.insecure_channel(server.target) as channel:
            call = channel.unary_stream(
                METHOD_PATH,
                request_serializer=spy_pb2.SubscribeSignedVAARequest.SerializeToString,
                response_deserializer=spy_pb2.SubscribeSignedVAAResponse.FromString,
            )(spy_pb2.SubscribeSignedVAARequest())
            await call.initial_metadata()
            for _ in range(200):  # ~12 MB the client never reads: flow control blocks the server
                await hub.publish(big)
            async with asyncio.timeout(10):
                while hub.counters.too_slow == 0:
                    await asyncio.sleep(0.05)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in call:
                    pass
            assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert caught.value.details() == "too slow"
        await server.stop()

    run(scenario)


def test_vaa_files_accept_hex_and_base64_and_name_bad_lines():
    import base64

    one, two = token_vaas(2)
    lines = ["# replay", "", one.hex(), "0x" + two.hex(), base64.b64encode(one).decode()]
    assert list(read_vaa_lines(lines, source="f.txt")) == [one, two, one]
    with pytest.raises(SpyError, match=r"f\.txt line 2: .*"):
        list(read_vaa_lines([one.hex(), "not a vaa!"], source="f.txt"))


def test_a_lossless_publisher_is_not_stuck_by_a_subscriber_that_leaves():
    async def scenario() -> None:
        hub = SpyHub(buffer_size=2, lossless=True)
        gone = await hub.subscribe(frozenset())
        stays = await hub.subscribe(frozenset())
        for vaa in token_vaas(2):
            await hub.publish(vaa)
        blocked = asyncio.create_task(hub.publish(token_vaas(1, start=2)[0]))
        await asyncio.sleep(0.1)
        assert not blocked.done()  # both buffers are full: lossless waits
        stays.buffer.get_nowait()
        await hub.unsubscribe(gone)
        assert await asyncio.wait_for(blocked, 5) == 1  # only the remaining subscriber got it
        assert hub.counters.dropped == 0

    run(scenario)
