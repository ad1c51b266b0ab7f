"""The REST endpoint under hostile HTTP, over raw loopback sockets against a real listener.

Broken framing gets a 400 and one log line (no traceback); wrong methods and paths get the
documented JSON; a client that lies about its body or trickles its head is cut off by the body
and header timeouts, and a hundred such clients do not keep a normal one waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from chainloom.relayer.config import RestSettings
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from tests.ingest_support import GUARDIANS, dev_policy

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
SLACK = 1.5
"""Seconds a cut-off may come after its timeout (two shared cores, asyncio timer rounding)."""


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


@pytest.fixture
def intake(redis_url: str) -> Iterator[Intake]:
    client = redis.Redis.from_url(redis_url)
    yield Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client))
    client.close()


@asynccontextmanager
async def serving(intake: Intake) -> AsyncIterator[int]:
    rest = RestSettings(
        host="127.0.0.1",
        port=0,
        max_request_bytes=4096,
        header_timeout=HEADER_TIMEOUT,
        body_timeout=BODY_TIMEOUT,
    )
    listener = Listener(intake, rest=rest)
    await listener.start()
    try:
        yield listener.port
    finally:
        await listener.stop()


@dataclass(frozen=True)
class Answer:
    """What the server sent back on one connection before closing it."""

    status: int | None
    """The status code, None when the server closed without answering."""
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes
    seconds: float
    """From sending the request to the server closing the connection."""

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), self
        return json.loads(self.body)


async def exchange(port: int, request: bytes, *, then: bytes = b"", wait: float = 10.0) -> Answer:
    """Send ``request`` raw (and ``then`` a moment later), then read until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()
    try:
        writer.write(request)
        if then:
            await asyncio.sleep(0.1)  # the head is parsed alone; ``then`` arrives as body bytes
            writer.write(then)
        raw = await asyncio.wait_for(reader.read(), wait)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    seconds = time.monotonic() - start
    if not raw:
        return Answer(None, {}, b"", seconds)
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(status_line.split()[1]), headers, body, seconds)


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: relayer", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def server_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the HTTP server and the REST endpoint logged (not the test's own client)."""
    return [
        r
        for r in caplog.records
        if r.name.startswith(("aiohttp", "chainloom.relayer.rest"))
        and "REST on" not in r.getMessage()
    ]


# Requests the HTTP parser refuses before any route sees them.
BROKEN_FRAMING = {
    "content-length not a number": head("POST", "/v1/relay", "Content-Length: abc"),
    "negative content-length": head("POST", "/v1/relay", "Content-Length: -5"),
    "content-length and chunked": head(
        "POST", "/v1/relay", "Content-Length: 5", "Transfer-Encoding: chunked"
    )
    + b"0\r\n\r\n",
    "two content-lengths": head("POST", "/v1/relay", "Content-Length: 2", "Content-Length: 3"),
    "header line too long": head("GET", "/healthz", "X-Big: " + "a" * 9000),
    "too many headers": head("GET", "/healthz", *(f"X-{i}: 1" for i in range(200))),
    "request line too long": head("GET", "/" + "a" * 9000),
    "method not a token": head("G@T", "/healthz"),
    "not an HTTP request line": b"hello there\r\n\r\n",
    "unknown HTTP version": b"GET /healthz HTTP/9.9\r\nHost: relayer\r\n\r\n",
    "bad chunk size": head("POST", "/v1/relay", "Transfer-Encoding: chunked") + b"zz\r\n{}\r\n",
}


@pytest.mark.parametrize("request_bytes", BROKEN_FRAMING.values(), ids=BROKEN_FRAMING.keys())
def test_broken_framing_gets_400_and_one_log_line_without_traceback(
    intake: Intake, caplog: pytest.LogCaptureFixture, request_bytes: bytes
) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> None:
        async with serving(intake) as port:
            answer = await exchange(port, request_bytes)
            assert answer.status == 400
            assert answer.seconds < SLACK  # answered at once, then closed

    run(scenario)
    records = server_records(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]
    (record,) = records
    assert record.exc_info is None
    assert "\n" not in record.getMessage()
    assert record.getMessage().startswith("listener: bad HTTP request")
    assert "127.0.0.1" in record.getMessage()


def test_wrong_methods_and_paths_get_json(intake: Intake, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        async with serving(intake) as port:
            put = await exchange(port, head("PUT", "/v1/relay", "Content-Length: 0",
                                            "Connection: close"))  # fmt: skip
            assert put.status == 405
            assert put.headers["allow"] == "POST"
            assert put.json() == {
                "status": "method_not_allowed",
                "reason": "PUT is not allowed on /v1/relay (allowed: POST)",
            }
            get = await exchange(port, head("GET", "/v1/relay", "Connection: close"))
            assert (get.status, get.json()["status"]) == (405, "method_not_allowed")
            missing = await exchange(port, head("GET", "/v2/relay%0Ax", "Connection: close"))
            assert missing.status == 404
            assert missing.json() == {
                "status": "not_found",
                "reason": "no route GET /v2/relay%0Ax (GET / lists the routes)",
            }

    run(scenario)
    lines = [r.getMessage() for r in server_records(caplog)]
    assert lines == [
        "listener: answered 405 to PUT /v1/relay from 127.0.0.1: "
        "PUT is not allowed on /v1/relay (allowed: POST)",
        "listener: answered 405 to GET /v1/relay from 127.0.0.1: "
        "GET is not allowed on /v1/relay (allowed: POST)",
        "listener: answered 404 to GET /v2/relay%0Ax from 127.0.0.1: "
        "no route GET /v2/relay%0Ax (GET / lists the routes)",
    ]


CHUNKED = head("POST", "/v1/relay", "Transfer-Encoding: chunked")

# Heads that promise a body the client never finishes sending, and what follows them.
LYING_BODIES = {
    "content-length longer than the body": (
        head("POST", "/v1/relay", "Content-Length: 100"),
        b'{"vaa": ',
    ),
    "huge chunk size declared": (CHUNKED, b"FFFFFFF\r\n{}"),
    # Once the head is parsed, aiohttp leaves a broken chunk to the handler's read, which
    # never ends: the body timeout is what answers it.
    "broken chunk after the head": (CHUNKED, b"zz\r\n{}\r\n"),
}


@pytest.mark.parametrize(("request_head", "then"), LYING_BODIES.values(), ids=LYING_BODIES.keys())
def test_a_body_that_never_arrives_is_cut_off_by_the_body_timeout(
    intake: Intake, caplog: pytest.LogCaptureFixture, request_head: bytes, then: bytes
) -> None:
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        async with serving(intake) as port:
            answer = await exchange(port, request_head, then=then)
            assert answer.status == 408
            assert answer.json() == {
                "status": "timeout",
                "reason": f"request body not received within {BODY_TIMEOUT:g} s",
            }
            # Answered at the body timeout; closed after at most as long again of draining.
            assert BODY_TIMEOUT <= answer.seconds < 2 * BODY_TIMEOUT + SLACK

    run(scenario)
    lines = [r.getMessage() for r in server_records(caplog)]
    assert lines == [
        f"listener: answered 408 to POST /v1/relay from 127.0.0.1: request body not received "
        f"within {BODY_TIMEOUT:g} s"
    ]


def test_a_trickled_body_is_cut_off_although_bytes_keep_coming(intake: Intake) -> None:
    async def scenario() -> None:
        async with serving(intake) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            start = time.monotonic()
            writer.write(head("POST", "/v1/relay", "Content-Length: 1000"))
            answer = b""
            for _ in range(100):  # one byte every 50 ms would take 50 s
                writer.write(b" ")
                with contextlib.suppress(asyncio.TimeoutError):
                    answer += await asyncio.wait_for(reader.read(4096), 0.05)
                if answer:
                    break
            seconds = time.monotonic() - start
            writer.close()
            assert answer.startswith(b"HTTP/1.1 408 ")
            assert seconds < BODY_TIMEOUT + SLACK

    run(scenario)


def test_a_head_that_never_ends_is_cut_off_by_the_header_timeout(intake: Intake) -> None:
    async def scenario() -> None:
        async with serving(intake) as port:
            silent = await exchange(port, b"")
            half = await exchange(port, b"POST /v1/relay HTTP/1.1\r\nHost: relayer\r\n")
            for answer in (silent, half):
                assert answer.status is None  # closed without an answer
                assert HEADER_TIMEOUT - 0.1 <= answer.seconds < HEADER_TIMEOUT + SLACK

            # On a kept-alive connection the clock restarts at each answer.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head("GET", "/healthz"))
            first = await reader.readuntil(b'{"status": "ok"}')
            answered = time.monotonic()
            writer.write(b"GET /healthz HTTP/1.1\r\n")
            tail = await asyncio.wait_for(reader.read(), HEADER_TIMEOUT + SLACK)
            seconds = time.monotonic() - answered
            writer.close()
            assert first.startswith(b"HTTP/1.1 200 ")
            assert tail == b""
            assert HEADER_TIMEOUT - 0.1 <= seconds < HEADER_TIMEOUT + SLACK

    run(scenario)


def test_slowloris_clients_are_cut_off_while_a_normal_client_is_served(intake: Intake) -> None:
    clients = 100

    async def trickle(port: int) -> float:
        """Send a head a header line at a time, forever; seconds until the server hangs up."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        start = time.monotonic()
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: relayer\r\n")
        try:
            for line in range(1000):
                with contextlib.suppress(asyncio.TimeoutError):
                    if await asyncio.wait_for(reader.read(1), 0.2) == b"":
                        return time.monotonic() - start
                writer.write(f"X-Trickle-{line}: 1\r\n".encode())
            return float("inf")
        except ConnectionError:
            return time.monotonic() - start
        finally:
            writer.close()

    async def scenario() -> None:
        async with serving(intake) as port:
            slow = [asyncio.create_task(trickle(port)) for _ in range(clients)]
            await asyncio.sleep(0.3)  # every slow client is connected and trickling
            normal = await exchange(port, head("GET", "/healthz", "Connection: close"), wait=2)
            assert (normal.status, normal.json()) == (200, {"status": "ok"})
            assert normal.seconds < HEADER_TIMEOUT / 2
            assert not any(task.done() for task in slow)  # answered while they all trickle
            cut_after = await asyncio.gather(*slow)
            assert max(cut_after) < HEADER_TIMEOUT + SLACK
            # aiohttp checks its keep-alive deadline on a coarse timer: not before half of it.
            assert min(cut_after) >= HEADER_TIMEOUT / 2

    run(scenario)
