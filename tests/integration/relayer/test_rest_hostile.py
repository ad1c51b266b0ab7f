"""The REST endpoint under hostile HTTP, over raw loopback sockets against a real listener.

Broken framing, oversized heads, unsupported versions and codings, wrong methods and paths all
get the documented JSON error (``Content-Type: application/json``, ``{"status", "reason"}``) and
one log line without a traceback; a client that lies about its body or trickles its head is cut
off by the body and header timeouts, and a hundred such clients do not keep a normal one waiting.
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
from chainloom.relayer.rest import ERROR_STATUS
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


SERVER_LOGGERS = ("chainloom.web", "chainloom.relayer.rest")


def server_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the HTTP server and the REST endpoint logged (not the test's own client)."""
    return [r for r in caplog.records if r.name.startswith(SERVER_LOGGERS)]


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing at all (server, asyncio, the listener) logged a traceback or a multi-line record."""
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert "\n" not in record.getMessage(), record.getMessage()
    assert "Traceback" not in caplog.text


def assert_one_line(caplog: pytest.LogCaptureFixture, expected: str) -> None:
    """The server logged exactly ``expected``, once, and no traceback anywhere."""
    assert [r.getMessage() for r in server_records(caplog)] == [expected]
    assert_no_traceback(caplog)


@dataclass(frozen=True)
class Refused:
    """A request the server refuses before any route sees it, and what it must answer."""

    request: bytes
    status: int
    reason: str
    logged_as: str = "a malformed request"
    """How the log line names the request (its request line once that was read)."""


RELAY = "POST /v1/relay"

# Heads the server refuses on their own, whatever follows them.
REFUSED_HEADS = {
    "content-length not a number": Refused(
        head("POST", "/v1/relay", "Content-Length: abc"), 400, "bad Content-Length"
    ),
    "negative content-length": Refused(
        head("POST", "/v1/relay", "Content-Length: -5"), 400, "bad Content-Length"
    ),
    "two content-lengths": Refused(
        head("POST", "/v1/relay", "Content-Length: 2", "Content-Length: 3"),
        400,
        "conflicting Content-Length headers",
    ),
    "content-length and chunked": Refused(
        head("POST", "/v1/relay", "Content-Length: 5", "Transfer-Encoding: chunked") + b"0\r\n\r\n",
        400,
        "Content-Length together with Transfer-Encoding",
        RELAY,
    ),
    "chunked and content-length": Refused(
        head("POST", "/v1/relay", "Transfer-Encoding: chunked", "Content-Length: 2") + b"{}",
        400,
        "Content-Length together with Transfer-Encoding",
        RELAY,
    ),
    "transfer coding other than chunked": Refused(
        head("POST", "/v1/relay", "Transfer-Encoding: gzip, chunked"),
        501,
        "Only Transfer-Encoding: chunked is supported",
    ),
    "header line too long": Refused(
        head("GET", "/healthz", "X-Big: " + "a" * 9000),
        431,
        "request head exceeds 8192 bytes",
        "GET /healthz",
    ),
    "too many headers": Refused(
        head("GET", "/healthz", *(f"X-{i}: 1" for i in range(200))),
        431,
        "request head has 201 header lines (at most 128)",
        "GET /healthz",
    ),
    "request line too long": Refused(
        head("GET", "/" + "a" * 9000),
        431,
        "request head exceeds 8192 bytes",
        "GET /" + "a" * 199 + "...",
    ),
    "method not a token": Refused(
        head("G@T", "/healthz"), 400, "illegal request line: b'G@T /healthz HTTP/1.1'"
    ),
    "not an HTTP request line": Refused(
        b"hello there\r\n\r\n", 400, "illegal request line: b'hello there'"
    ),
    "tls on the plain port": Refused(
        bytes.fromhex("160301020001") + bytes(200), 400, "illegal request line"
    ),
    "no host in HTTP/1.1": Refused(
        b"GET /healthz HTTP/1.1\r\n\r\n", 400, "Missing mandatory Host: header"
    ),
    "unknown HTTP version": Refused(
        b"GET /healthz HTTP/9.9\r\nHost: relayer\r\n\r\n",
        505,
        "HTTP/9.9 is not supported (HTTP/1.1 and HTTP/1.0 are)",
        "GET /healthz",
    ),
    "bad chunk size": Refused(
        head("POST", "/v1/relay", "Transfer-Encoding: chunked") + b"zz\r\n{}\r\n",
        400,
        "illegal chunk header: b'zz\\r\\n'",
        RELAY,
    ),
    "declared body over the limit": Refused(
        head("POST", "/v1/relay", "Content-Length: 5000"),
        413,
        "request body exceeds 4096 bytes",
        RELAY,
    ),
    "chunked body over the limit": Refused(
        head("POST", "/v1/relay", "Transfer-Encoding: chunked")
        + b"".join(b"400\r\n" + b" " * 1024 + b"\r\n" for _ in range(5)),
        413,
        "request body exceeds 4096 bytes",
        RELAY,
    ),
}


@pytest.mark.parametrize("refused", REFUSED_HEADS.values(), ids=REFUSED_HEADS.keys())
def test_a_refused_request_gets_json_and_one_log_line_without_traceback(
    intake: Intake, caplog: pytest.LogCaptureFixture, refused: Refused
) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> None:
        async with serving(intake) as port:
            answer = await exchange(port, refused.request)
            assert answer.status == refused.status
            assert answer.headers["content-type"] == "application/json"
            assert answer.headers["connection"] == "close"
            assert answer.json() == {
                "status": ERROR_STATUS[refused.status],
                "reason": refused.reason,
            }
            assert answer.seconds < SLACK  # answered at once, then closed

    run(scenario)
    assert_one_line(
        caplog,
        f"listener: answered {refused.status} to {refused.logged_as} from 127.0.0.1: "
        f"{refused.reason}",
    )


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
            brew = await exchange(port, head("BREW", "/healthz", "Connection: close"))
            assert brew.status == 405
            assert brew.headers["allow"] == "GET, HEAD"
            assert brew.json() == {
                "status": "method_not_allowed",
                "reason": "BREW is not allowed on /healthz (allowed: GET, HEAD)",
            }
            missing = await exchange(port, head("GET", "/v2/relay%0Ax", "Connection: close"))
            assert missing.status == 404
            assert missing.json() == {
                "status": "not_found",
                "reason": "no route GET /v2/relay%0Ax (GET / lists the routes)",
            }

    run(scenario)
    assert_no_traceback(caplog)
    lines = [r.getMessage() for r in server_records(caplog)]
    assert lines == [
        "listener: answered 405 to PUT /v1/relay from 127.0.0.1: "
        "PUT is not allowed on /v1/relay (allowed: POST)",
        "listener: answered 405 to GET /v1/relay from 127.0.0.1: "
        "GET is not allowed on /v1/relay (allowed: POST)",
        "listener: answered 405 to BREW /healthz from 127.0.0.1: "
        "BREW is not allowed on /healthz (allowed: GET, HEAD)",
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
    "nothing after a chunked head": (CHUNKED, b""),
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
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == {
                "status": "timeout",
                "reason": f"request body not received within {BODY_TIMEOUT:g} s",
            }
            # Answered at the body timeout; closed after at most as long again of draining.
            assert BODY_TIMEOUT <= answer.seconds < 2 * BODY_TIMEOUT + SLACK

    run(scenario)
    assert_one_line(
        caplog,
        f"listener: answered 408 to POST /v1/relay from 127.0.0.1: request body not received "
        f"within {BODY_TIMEOUT:g} s",
    )


def test_a_broken_chunk_after_the_head_is_answered_at_once(
    intake: Intake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        async with serving(intake) as port:
            answer = await exchange(port, CHUNKED, then=b"zz\r\n{}\r\n")
            assert answer.status == 400
            assert answer.json() == {
                "status": "malformed",
                "reason": "illegal chunk header: b'zz\\r\\n'",
            }
            assert answer.seconds < SLACK

    run(scenario)
    assert_one_line(
        caplog,
        "listener: answered 400 to POST /v1/relay from 127.0.0.1: "
        "illegal chunk header: b'zz\\r\\n'",
    )


def test_a_body_cut_short_by_the_client_is_answered_400(
    intake: Intake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    reason = (
        "peer closed connection without sending complete message body "
        "(received 8 bytes, expected 100)"
    )

    async def scenario() -> None:
        async with serving(intake) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head("POST", "/v1/relay", "Content-Length: 100") + b'{"vaa": ')
            writer.write_eof()  # the client is done sending, but still reads
            raw = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            status_line, newline, rest = raw.partition(b"\r\n")
            assert status_line == b"HTTP/1.1 400 Bad Request"
            assert b"\r\ncontent-type: application/json\r\n" in (newline + rest).lower()
            assert json.loads(rest.partition(b"\r\n\r\n")[2]) == {
                "status": "malformed",
                "reason": reason,
            }

    run(scenario)
    assert_one_line(caplog, f"listener: answered 400 to POST /v1/relay from 127.0.0.1: {reason}")


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
            assert min(cut_after) >= HEADER_TIMEOUT - 0.1

    run(scenario)


def test_keep_alive_head_and_expect_continue(intake: Intake) -> None:
    async def scenario() -> None:
        async with serving(intake) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            # Three requests on one connection, the middle one refused by a route (404).
            writer.write(
                head("GET", "/healthz") + head("GET", "/nowhere") + head("HEAD", "/healthz")
            )
            first = await reader.readuntil(b'{"status": "ok"}')
            second = await reader.readuntil(b'(GET / lists the routes)"}')
            third = await reader.readuntil(b"\r\n\r\n")
            assert first.startswith(b"HTTP/1.1 200 OK\r\n")
            assert second.startswith(b"HTTP/1.1 404 Not Found\r\n")
            assert third.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"content-length: 16\r\n" in third.lower()  # the size of the body not sent
            # A client that waits for 100 Continue before sending its body.
            writer.write(head("POST", "/v1/relay", "Content-Length: 2", "Expect: 100-continue"))
            assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
            writer.write(b"{}")
            fourth = await reader.readuntil(b"}")
            assert fourth.startswith(b"HTTP/1.1 400 Bad Request\r\n")  # {} holds no "vaa"
            writer.write(head("GET", "/healthz", "Connection: close"))
            assert (await reader.read()).endswith(b'{"status": "ok"}')
            writer.close()

    run(scenario)


def test_stop_finishes_a_request_in_flight_and_closes_idle_connections(intake: Intake) -> None:
    rest = RestSettings(host="127.0.0.1", port=0, header_timeout=30, body_timeout=30)

    async def scenario() -> None:
        listener = Listener(intake, rest=rest)
        await listener.start()
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", listener.port)
        busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", listener.port)
        busy_writer.write(head("POST", "/v1/relay", "Content-Length: 2"))
        await asyncio.sleep(0.2)  # the head is in: the request is in flight
        stopping = asyncio.create_task(listener.stop())
        # The idle connection is closed at once, without an answer ...
        assert await asyncio.wait_for(idle_reader.read(), 5) == b""
        assert not stopping.done()
        # ... the request in flight gets its body and its answer, which closes the connection.
        busy_writer.write(b"{}")
        answer = await asyncio.wait_for(busy_reader.read(), 5)
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert b"\r\nconnection: close\r\n" in answer.lower()
        await asyncio.wait_for(stopping, 5)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", listener.port)
        for writer in (idle_writer, busy_writer):
            writer.close()

    run(scenario)
