"""rippled's WebSocket API on one connection: requests, answers and subscription streams.

A connection has two tasks: the reader takes requests one at a time (``subscribe`` and
``unsubscribe`` are answered here, every other method by the server's ``dispatch``) and the
writer sends what waits in the connection's bounded outbox, answers and stream messages alike,
in the order they were queued (as rippled's per-connection write queue). When the outbox
overflows (the client reads slower than it is sent to), the connection is closed with rippled's
1008 ``Policy error: client is too slow.``: nothing else ever waits on it. A connection that
subscribed to nothing is closed after ``idle_timeout`` without a request (1001 ``idle``); one
that listens to a stream is kept for as long as it answers the server's pings.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import WebSocket, WebSocketDisconnect

from chainloom.errors import UnavailableError
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import MalformedRequestError, RpcError
from chainloom.ledger.api.methods import Context, book
from chainloom.ledger.api.publisher import Publisher, Subscriber, read_ledger_now
from chainloom.ledger.api.shapes import error_body, success
from chainloom.ledger.api.subscribe import BookRequest, parse_stream_request
from chainloom.ledger.errors import LedgerError

log = logging.getLogger(__name__)

TOO_SLOW = (1008, "Policy error: client is too slow.")
"""rippled's close code and reason for a client whose write queue overflowed."""

Dispatch = Callable[[rq.Call, str], Awaitable[tuple[dict[str, Any], int]]]
"""The server's method dispatch: a call and the client's address -> ``(result, status)``."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How long a connection may idle and how much may wait for it."""

    idle_timeout: float = 300.0
    """Seconds without a request before a connection that listens to nothing is closed."""
    queue_limit: int = 100
    """Messages (answers and stream messages) waiting to be sent before the client is dropped
    as too slow (rippled's ``send_queue_limit``, 100 by default)."""
    close_timeout: float = 60.0
    """Seconds the close frame may wait behind what the client has not read yet (then the
    connection is ended without it)."""


class Subscriptions:
    """``subscribe`` / ``unsubscribe`` of one server: the publisher and the reads their answers
    need (the newest ledger, a book's snapshot)."""

    def __init__(
        self, publisher: Publisher, context: Context, executor: concurrent.futures.Executor
    ) -> None:
        self.publisher = publisher
        self._context = context
        self._executor = executor

    async def answer(self, call: rq.Call, subscriber: Subscriber) -> dict[str, Any]:
        """The ``result`` object of a ``subscribe`` / ``unsubscribe`` call (or its error)."""
        try:
            if call.version_error is not None:
                raise RpcError("invalidParams", call.version_error)
            request = parse_stream_request(call.params)
            if call.method == "unsubscribe":
                self.publisher.unsubscribe(subscriber, request)
                return _result(success({}))
            result: dict[str, Any] = {}
            loop = asyncio.get_running_loop()
            for entry in request.books:
                if entry.snapshot:
                    result.update(
                        await loop.run_in_executor(
                            self._executor, self._snapshot, entry, call.api_version
                        )
                    )
            if "ledger" in request.streams:
                newest = self.publisher.newest
                if newest is None:
                    newest = await loop.run_in_executor(
                        self._executor, read_ledger_now, self._context.backend
                    )
                result.update(self.publisher.newest or newest)
            # No await between reading the newest ledger and joining: the first stream
            # message a client gets is the ledger after the one its answer names.
            self.publisher.subscribe(subscriber, request, call.api_version)
            return _result(success(result))
        except RpcError as refused:
            return _result(error_body(refused, call.method, call.params))
        except UnavailableError as outage:
            log.warning("ledger api: %s failed: %s", call.method, outage)
            busy = RpcError("tooBusy", f"database unavailable: {outage}")
            return _result(error_body(busy, call.method, call.params))
        except LedgerError as failed:
            log.error("ledger api: %s failed: %s", call.method, failed)
            return _result(error_body(RpcError("internal", str(failed)), call.method, call.params))

    def _snapshot(self, entry: BookRequest, api_version: int) -> dict[str, Any]:
        """The book's offers now (``offers``; ``bids`` and ``asks`` with ``both``)."""

        def offers(gets: Any, pays: Any) -> list[Any]:
            params = rq.parse_book_offers({"taker_gets": gets, "taker_pays": pays})
            found: list[Any] = book.book_offers(self._context, params, api_version)["offers"]
            return found

        if entry.both:
            return {
                "bids": offers(entry.taker_gets, entry.taker_pays),
                "asks": offers(entry.taker_pays, entry.taker_gets),
            }
        return {"offers": offers(entry.taker_gets, entry.taker_pays)}


async def serve_connection(
    socket: WebSocket,
    client: str,
    dispatch: Dispatch,
    subscriptions: Subscriptions,
    limits: ConnectionLimits,
) -> None:
    """Serve one accepted WebSocket until the client leaves, idles or falls behind."""
    await _Connection(socket, client, dispatch, subscriptions, limits).serve()


class _Connection:
    """One WebSocket: its reader, its writer and its subscriber."""

    def __init__(
        self,
        socket: WebSocket,
        client: str,
        dispatch: Dispatch,
        subscriptions: Subscriptions,
        limits: ConnectionLimits,
    ) -> None:
        self.socket = socket
        self.client = client
        self.dispatch = dispatch
        self.subscriptions = subscriptions
        self.limits = limits
        self.subscriber = Subscriber(limits.queue_limit)

    async def serve(self) -> None:
        reader = asyncio.create_task(self._read())
        writer = asyncio.create_task(self._write())
        dropped = asyncio.create_task(self.subscriber.dropped.wait())
        try:
            await asyncio.wait({reader, writer, dropped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.subscriptions.publisher.remove(self.subscriber)
            for task in (reader, writer, dropped):
                task.cancel()
            await asyncio.gather(reader, writer, dropped, return_exceptions=True)
        closing: tuple[int, str] | None = None
        if self.subscriber.dropped.is_set():
            closing = TOO_SLOW
        elif reader.done() and not reader.cancelled() and reader.result() == "idle":
            closing = (1001, "idle")
        if closing is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.limits.close_timeout):
                    await self.socket.close(*closing)

    async def _read(self) -> str:
        """Answer requests until the client leaves (``gone``) or idles (``idle``)."""
        subscriber = self.subscriber
        try:
            while True:
                idle = None if subscriber.listening else self.limits.idle_timeout
                try:
                    async with asyncio.timeout(idle):
                        message = await self.socket.receive()
                except TimeoutError:
                    return "idle"
                if message["type"] == "websocket.disconnect":
                    return "gone"
                try:
                    request_id, call = rq.parse_websocket_call(frame_text(message))
                except MalformedRequestError as bad:
                    subscriber.offer(_text(shapes.websocket_malformed(str(bad))))
                    continue
                if call.method in rq.WEBSOCKET_ONLY:
                    result = await self.subscriptions.answer(call, subscriber)
                else:
                    result, _ = await self.dispatch(call, self.client)
                subscriber.offer(_text(shapes.websocket_body(request_id, result)))
        except WebSocketDisconnect:
            return "gone"

    async def _write(self) -> None:
        """Send the outbox, in order, until the connection ends."""
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            while True:
                await self.socket.send_text(await self.subscriber.outbox.get())


def _result(body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = body["result"]
    return result


def _text(body: dict[str, Any]) -> str:
    return orjson.dumps(body).decode()


def frame_text(message: Any) -> str:
    """The text of one WebSocket message, text or binary frame."""
    text = message.get("text")
    if text is not None:
        return str(text)
    try:
        return bytes(message.get("bytes") or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequestError("Unable to parse request: a binary frame not UTF-8") from None
