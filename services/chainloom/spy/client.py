"""A client of the guardian spy's stream that never gives up.

Why: the spy is at-most-once and lossy (wormhole-foundation/wormhole#2361,
wormhole-foundation/relayer-engine#21): it disconnects slow consumers and it restarts. The
relayer must keep a subscription open through all of that, so this client reconnects forever
with exponential backoff and jitter (many listeners must not reconnect in lock-step), and it
counts what happened - connections, messages, drops - so an operator can see loss instead of
guessing. VAAs go through a bounded buffer between the gRPC reader and the consumer. When the
consumer falls that far behind, the client either pushes back (``overflow="block"``, the
default: gRPC flow control slows the sender, so a lossless replay stays lossless; a real spy
cuts a consumer blocked for 5 s, and the client reconnects) or keeps reading and drops, counting
each drop (``overflow="drop"``; REST is the backfill).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
import grpc.aio

from chainloom.backoff import Backoff
from chainloom.rpc.generated.spy.v1 import spy_pb2
from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import METHOD_PATH, EmitterKey

log = logging.getLogger(__name__)

OVERFLOW_POLICIES = ("block", "drop")


DEFAULT_RECONNECT = Backoff(initial=0.1, maximum=10.0, jitter=0.5)
"""Waits between reconnections: 0.1 s doubling up to 10 s, half of each wait random."""


@dataclass(slots=True)
class SpyClientCounters:
    """What the client saw since it started."""

    connections: int = 0
    """Streams established (the first, and every reconnection)."""
    disconnects: int = 0
    """Streams that ended or failed and were retried."""
    messages: int = 0
    """VAAs received."""
    drops: int = 0
    """VAAs dropped because the consumer's buffer was full (``overflow="drop"`` only)."""
    empty: int = 0
    """Responses without VAA bytes (ignored)."""
    consumer_errors: int = 0
    """VAAs on which the consumer given to :meth:`SpyClient.run` raised (logged, skipped)."""
    last_error: str | None = None
    """The gRPC status of the last failed stream, for ``/readyz`` and logs."""


class SpyClient:
    """Subscribe to a spy (or ``chainloom-dev spy serve``) and hand VAAs to a consumer."""

    def __init__(
        self,
        address: str,
        filters: Sequence[EmitterKey] = (),
        *,
        backoff: Backoff | None = None,
        buffer_size: int = 10_000,
        overflow: str = "block",
        rng: random.Random | None = None,
    ) -> None:
        if not address or ":" not in address:
            raise SpyError(f"spy address {address!r} is not host:port")
        if buffer_size < 1:
            raise SpyError(f"buffer size must be at least 1, got {buffer_size}")
        if overflow not in OVERFLOW_POLICIES:
            raise SpyError(
                f"overflow must be one of {', '.join(OVERFLOW_POLICIES)}, got {overflow!r}"
            )
        self.overflow = overflow
        self.address = address
        self.filters = tuple(filters)
        if backoff is not None and backoff.initial <= 0:
            raise SpyError("a reconnection backoff needs initial > 0 (no reconnecting in a loop)")
        self.backoff = backoff or DEFAULT_RECONNECT
        self.counters = SpyClientCounters()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._buffer: asyncio.Queue[bytes] = asyncio.Queue(buffer_size)
        self._stopping = asyncio.Event()
        self._connected = asyncio.Event()

    @property
    def connected(self) -> bool:
        """Whether a stream is currently established."""
        return self._connected.is_set()

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Block until a stream is established (TimeoutError after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            await self._connected.wait()

    def stop(self) -> None:
        """Ask :meth:`run` and :meth:`messages` to end."""
        self._stopping.set()

    def request(self) -> spy_pb2.SubscribeSignedVAARequest:
        """The subscription request this client sends."""
        return spy_pb2.SubscribeSignedVAARequest(filters=[f.to_proto() for f in self.filters])

    async def messages(self) -> AsyncIterator[bytes]:
        """Every VAA received, across reconnections, until :meth:`stop`."""
        reader = asyncio.create_task(self._read_forever())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                try:
                    yield self._buffer.get_nowait()
                    continue
                except asyncio.QueueEmpty:
                    pass
                getter = asyncio.ensure_future(self._buffer.get())
                done, _ = await asyncio.wait(
                    {getter, stopping, reader}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                if reader in done:
                    reader.result()  # re-raise what ended the reader
                return
        finally:
            stopping.cancel()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def run(self, consume: Callable[[bytes], Awaitable[None]], *, workers: int = 1) -> None:
        """Feed every VAA to ``consume`` from ``workers`` concurrent tasks until :meth:`stop`."""
        if workers < 1:
            raise SpyError(f"workers must be at least 1, got {workers}")
        queue: asyncio.Queue[bytes] = asyncio.Queue(workers * 2)

        async def work() -> None:
            while True:
                vaa = await queue.get()
                try:
                    await consume(vaa)
                except Exception:  # one bad VAA must not stop the subscription
                    self.counters.consumer_errors += 1
                    log.exception("spy %s: the consumer failed on a VAA", self.address)
                finally:
                    queue.task_done()

        tasks = [asyncio.create_task(work()) for _ in range(workers)]
        try:
            async for vaa in self.messages():
                await queue.put(vaa)
            await queue.join()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _read_forever(self) -> None:
        attempt = 0
        while not self._stopping.is_set():
            received_any = await self._read_once()
            if self._stopping.is_set():
                return
            attempt = 0 if received_any else attempt + 1
            delay = self.backoff.delay(attempt, self._rng)
            log.info("spy %s: reconnecting in %.2fs", self.address, delay)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()

    async def _read_once(self) -> bool:
        """One stream, from connection to its end; True if it was established."""
        established = False
        async with grpc.aio.insecure_channel(self.address) as channel:
            call = channel.unary_stream(
                METHOD_PATH,
                request_serializer=spy_pb2.SubscribeSignedVAARequest.SerializeToString,
                response_deserializer=spy_pb2.SubscribeSignedVAAResponse.FromString,
            )(self.request())
            stopping = asyncio.ensure_future(self._stopping.wait())
            try:
                reading = asyncio.ensure_future(self._consume_stream(call))
                done, _ = await asyncio.wait(
                    {reading, stopping}, return_when=asyncio.FIRST_COMPLETED
                )
                if reading not in done:
                    call.cancel()
                    reading.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reading
                    return True
                established = reading.result()
            except grpc.aio.AioRpcError as error:
                established = self._connected.is_set()
                self._record_failure(f"{error.code().name}: {error.details()}")
                if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    raise SpyError(
                        f"spy {self.address} refused the filters: {error.details()}"
                    ) from None
            finally:
                stopping.cancel()
                if self._connected.is_set() and not self._stopping.is_set():
                    self.counters.disconnects += 1
                self._connected.clear()
        return established

    async def _consume_stream(self, call: grpc.aio.UnaryStreamCall) -> bool:
        # Returns when the server accepted the stream (or, for a real spy that sends headers
        # with its first message, when that arrives) - and also when the call failed.
        await call.initial_metadata()
        if call.done():
            async for _ in call:  # raises the call's error
                pass
            return False
        self.counters.connections += 1
        self._connected.set()
        log.info("spy %s: subscribed (%d filters)", self.address, len(self.filters))
        async for response in call:
            vaa = bytes(response.vaa_bytes)
            if not vaa:
                self.counters.empty += 1
                continue
            self.counters.messages += 1
            if self.overflow == "block":
                await self._buffer.put(vaa)
                continue
            try:
                self._buffer.put_nowait(vaa)
            except asyncio.QueueFull:
                self.counters.drops += 1
        self._record_failure("stream ended by the server")
        return True

    def _record_failure(self, message: str) -> None:
        self.counters.last_error = message
        log.warning("spy %s: %s", self.address, message)
