"""A gRPC server speaking the guardian spy's API (``spy.v1.SpyRPCService/SubscribeSignedVAA``).

Why it exists: tests, the demo and operators replaying history need a spy they control (the
method and its filters are defined once, in :mod:`chainloom.spy.protocol`). It
streams VAAs from a file, stdin or any other async source to every subscriber whose filters
match, and behaves like the real spy where a consumer can observe it (reference section 4.1):

* filters are OR-ed ``(chain, emitter)`` pairs, an empty list means everything; batch filters
  are answered ``INVALID_ARGUMENT "unsupported filter type"``, chain ids above 65535 too;
* no dedupe: every published copy is forwarded;
* each subscriber has a bounded buffer; a VAA that finds it full is dropped and counted, and a
  single send blocked longer than ``send_timeout`` ends the stream with
  ``DEADLINE_EXCEEDED "too slow"`` (slow consumers must reconnect and backfill).

``lossless=True`` makes publishing wait for buffer space instead of dropping: that is what a
replay wants, and what the real spy never does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field

import grpc
import grpc.aio

from chainloom.relayer.validation import decode_text
from chainloom.rpc.generated.spy.v1 import spy_pb2
from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import METHOD_NAME, SERVICE_NAME, EmitterKey
from chainloom.wormhole import parse_vaa
from chainloom.wormhole.errors import WormholeError

DEFAULT_BUFFER = 1024
"""Per-subscriber buffer size when none is given."""


def filters_from_request(request: spy_pb2.SubscribeSignedVAARequest) -> frozenset[EmitterKey]:
    """The emitters a request asks for (empty: everything); SpyError for what the spy refuses."""
    keys: set[EmitterKey] = set()
    for entry in request.filters:
        kind = entry.WhichOneof("filter")
        if kind != "emitter_filter":
            raise SpyError("unsupported filter type")
        emitter = entry.emitter_filter
        keys.add(EmitterKey.parse(int(emitter.chain_id), emitter.emitter_address))
    return frozenset(keys)


def read_vaa_lines(lines: Iterable[str], *, source: str = "input") -> Iterator[bytes]:
    """VAAs from text lines (hex with or without 0x, or base64); blank and ``#`` lines skipped."""
    for number, line in enumerate(lines, start=1):
        vaa = decode_vaa_line(line, source=source, number=number)
        if vaa is not None:
            yield vaa


def decode_vaa_line(line: str, *, source: str, number: int) -> bytes | None:
    """One line of a VAA file: the VAA, None for a blank or ``#`` line, SpyError otherwise."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    try:
        return decode_text(text)
    except WormholeError as error:
        raise SpyError(f"{source} line {number}: {error}") from None


MessageId = tuple[int, str, int]
"""(emitter chain, emitter address as 64 lower-case hex, sequence)."""


def parse_selection(text: str) -> set[MessageId]:
    """``CHAIN/EMITTER/SEQ`` or ``CHAIN/EMITTER/FIRST-LAST`` as the ids it names."""
    parts = text.strip().split("/")
    if len(parts) != 3 or not parts[0].isdigit():
        raise SpyError(f"{text!r} is not CHAIN/EMITTER/SEQ[-SEQ]")
    emitter = parts[1].lower().removeprefix("0x")
    first, _, last = parts[2].partition("-")
    if not first.isdigit() or (last and not last.isdigit()) or len(emitter) > 64:
        raise SpyError(f"{text!r} is not CHAIN/EMITTER/SEQ[-SEQ]")
    try:
        bytes.fromhex(emitter.rjust(64, "0"))
    except ValueError:
        raise SpyError(f"{text!r}: the emitter is not hex") from None
    chain, padded = int(parts[0]), emitter.rjust(64, "0")
    return {(chain, padded, s) for s in range(int(first), int(last or first) + 1)}


@dataclass(slots=True)
class HubCounters:
    """What the hub did since it started (read by ``chainloom-dev spy serve --json`` and tests)."""

    published: int = 0
    """VAAs handed to :meth:`SpyHub.publish`."""
    delivered: int = 0
    """Copies put into a subscriber's buffer."""
    dropped: int = 0
    """Copies dropped because a subscriber's buffer was full."""
    unparsable: int = 0
    """Published VAAs that could not be matched against filters (sent to unfiltered only)."""
    subscriptions: int = 0
    """Subscriptions accepted so far."""
    too_slow: int = 0
    """Streams ended because one send took longer than the send timeout."""
    withheld: int = 0
    """Published VAAs not sent to anyone because their id is in the hub's ``drop`` set."""


@dataclass(eq=False, slots=True)
class Subscription:
    """One subscriber: its filters and its bounded buffer."""

    filters: frozenset[EmitterKey]
    """Emitters this subscriber wants; empty means everything."""
    buffer: asyncio.Queue[bytes]
    """VAAs waiting to be written to the stream."""
    ident: int = 0
    """A number for logs and tests."""
    dropped: int = 0
    """Copies dropped for this subscriber alone."""
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the hub shuts the stream down."""

    def wants(self, key: EmitterKey | None) -> bool:
        """Whether a VAA of this emitter (None: unknown) goes to this subscriber."""
        if not self.filters:
            return True
        return key is not None and key in self.filters


class SpyHub:
    """Fans published VAAs out to subscriptions, as the spy fans out gossip."""

    def __init__(
        self,
        *,
        buffer_size: int = DEFAULT_BUFFER,
        lossless: bool = False,
        drop: Iterable[MessageId] = (),
    ) -> None:
        if buffer_size < 1:
            raise SpyError(f"buffer size must be at least 1, got {buffer_size}")
        self.buffer_size = buffer_size
        self.lossless = lossless
        self.drop = frozenset(drop)
        """Message ids never sent (every copy dropped on purpose: a spy that missed them)."""
        self.counters = HubCounters()
        self._subscriptions: set[Subscription] = set()
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    @property
    def subscriber_count(self) -> int:
        """Subscriptions currently open."""
        return len(self._subscriptions)

    async def subscribe(self, filters: frozenset[EmitterKey]) -> Subscription:
        """Open a subscription (the gRPC handler calls this)."""
        subscription = Subscription(
            filters=filters, buffer=asyncio.Queue(self.buffer_size), ident=next(self._ids)
        )
        async with self._changed:
            self._subscriptions.add(subscription)
            self.counters.subscriptions += 1
            self._changed.notify_all()
        return subscription

    async def unsubscribe(self, subscription: Subscription) -> None:
        """Close a subscription; anything still buffered is discarded."""
        subscription.closed.set()  # releases a lossless publisher waiting on its buffer
        async with self._changed:
            self._subscriptions.discard(subscription)
            self._changed.notify_all()

    async def wait_for_subscribers(self, count: int, timeout: float | None = None) -> None:
        """Wait until at least ``count`` subscriptions are open."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self._subscriptions) >= count)

    async def wait_for_subscribers_below(self, count: int, timeout: float | None = None) -> None:
        """Wait until fewer than ``count`` subscriptions are open."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self._subscriptions) < count)

    async def publish(self, vaa: bytes) -> int:
        """Offer one VAA to every matching subscriber; return how many copies were buffered."""
        self.counters.published += 1
        if self.drop and self._dropped_on_purpose(vaa):
            self.counters.withheld += 1
            return 0
        key = self._emitter_of(vaa) if any(s.filters for s in self._subscriptions) else None
        buffered = 0
        for subscription in list(self._subscriptions):
            if not subscription.wants(key):
                continue
            if self.lossless:
                if not await _put_unless_closed(subscription, vaa):
                    continue
            else:
                try:
                    subscription.buffer.put_nowait(vaa)
                except asyncio.QueueFull:
                    subscription.dropped += 1
                    self.counters.dropped += 1
                    continue
            buffered += 1
        self.counters.delivered += buffered
        return buffered

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until every open subscription's buffer is empty (end of a replay)."""
        async with asyncio.timeout(timeout):
            while any(not s.buffer.empty() for s in self._subscriptions):
                await asyncio.sleep(0.01)

    def close_all(self) -> None:
        """Ask every open stream to end (server shutdown)."""
        for subscription in self._subscriptions:
            subscription.closed.set()

    def _dropped_on_purpose(self, vaa: bytes) -> bool:
        try:
            parsed = parse_vaa(vaa)
        except WormholeError:
            return False
        return (parsed.emitter_chain, parsed.emitter_address.hex(), parsed.sequence) in self.drop

    def _emitter_of(self, vaa: bytes) -> EmitterKey | None:
        try:
            parsed = parse_vaa(vaa)
        except WormholeError:
            self.counters.unparsable += 1
            return None
        return EmitterKey(parsed.emitter_chain, parsed.emitter_address)


class SpyServer:
    """The gRPC server around a :class:`SpyHub` (``grpc.aio``, insecure, like the real spy)."""

    def __init__(
        self, hub: SpyHub, address: str = "127.0.0.1:7073", *, send_timeout: float = 5.0
    ) -> None:
        self.hub = hub
        self.address = address
        self.send_timeout = send_timeout
        self.port = 0
        self._server: grpc.aio.Server | None = None

    async def start(self) -> int:
        """Bind and start serving; return the bound port (useful with port 0)."""
        server = grpc.aio.server()
        handler = grpc.unary_stream_rpc_method_handler(
            self._subscribe,
            request_deserializer=spy_pb2.SubscribeSignedVAARequest.FromString,
            response_serializer=spy_pb2.SubscribeSignedVAAResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, {METHOD_NAME: handler}),)
        )
        try:
            self.port = server.add_insecure_port(self.address)
        except RuntimeError as error:
            raise SpyError(f"cannot listen on {self.address}: {error}") from None
        if self.port == 0:
            raise SpyError(f"cannot listen on {self.address}")
        await server.start()
        self._server = server
        return self.port

    @property
    def target(self) -> str:
        """``host:port`` a client connects to."""
        host = self.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    async def stop(self, grace: float | None = 0.5) -> None:
        """End every stream and stop the server."""
        self.hub.close_all()
        if self._server is not None:
            # Let the streams see the close and end cleanly before the server cancels them.
            with contextlib.suppress(TimeoutError):
                await self.hub.wait_for_subscribers_below(1, timeout=grace)
            await self._server.stop(grace)
            self._server = None

    async def wait_closed(self) -> None:
        """Block until the server stops."""
        if self._server is not None:
            await self._server.wait_for_termination()

    async def _subscribe(
        self, request: spy_pb2.SubscribeSignedVAARequest, context: grpc.aio.ServicerContext
    ) -> None:
        try:
            filters = filters_from_request(request)
        except SpyError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
            return
        subscription = await self.hub.subscribe(filters)
        try:
            await context.send_initial_metadata(())
            async for vaa in _next_vaas(subscription):
                response = spy_pb2.SubscribeSignedVAAResponse(vaa_bytes=vaa)
                try:
                    await asyncio.wait_for(context.write(response), self.send_timeout)
                except TimeoutError:
                    self.hub.counters.too_slow += 1
                    await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "too slow")
        finally:
            await self.hub.unsubscribe(subscription)


async def _put_unless_closed(subscription: Subscription, vaa: bytes) -> bool:
    """Wait for buffer space; False if the subscription closes first."""
    try:
        subscription.buffer.put_nowait(vaa)
        return True
    except asyncio.QueueFull:
        pass
    putting = asyncio.ensure_future(subscription.buffer.put(vaa))
    closed = asyncio.ensure_future(subscription.closed.wait())
    done, _ = await asyncio.wait({putting, closed}, return_when=asyncio.FIRST_COMPLETED)
    closed.cancel()
    if putting in done:
        return True
    putting.cancel()
    return False


async def _next_vaas(subscription: Subscription) -> AsyncIterator[bytes]:
    closed = asyncio.ensure_future(subscription.closed.wait())
    try:
        while not subscription.closed.is_set():
            try:
                yield subscription.buffer.get_nowait()
                continue
            except asyncio.QueueEmpty:
                pass
            getter = asyncio.ensure_future(subscription.buffer.get())
            done, _ = await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                return
            yield getter.result()
    finally:
        closed.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await closed
