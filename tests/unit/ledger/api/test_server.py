"""A malformed request never reaches the backend: the server answers it from parsing alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import struct
import time
from dataclasses import replace
from typing import Any, cast

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from chainloom.ledger.api.server import ApiOptions, LedgerApi, web_server
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.errors import BackendError
from chainloom.ledger.types import LedgerRange
from chainloom.web.server import DESCRIPTOR_RESERVE, connection_cap

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"


class UntouchableBackend:
    """Fails the test on any use: the requests below must be refused before a backend call."""

    def __init__(self) -> None:
        self.touched: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.touched.append(name)
        raise AssertionError(f"the backend was used: {name}")


MALFORMED: list[tuple[bytes, int, str]] = [
    (b"{not json", 400, "Unable to parse request"),
    (b'{"params": [{}]}', 400, "Null method"),
    (b'{"method": "ledger", "params": {"ledger_index": 1}}', 400, "params unparseable"),
    (b'{"method": "path_find", "params": [{}]}', 405, "unknownCmd"),
    (b'{"method": "submit", "params": [{}]}', 501, "notEnabled"),  # no rippled configured
    (b'{"method": "fee", "params": [{"api_version": 9}]}', 400, "invalidParams"),
    (b'{"method": "stop", "params": [{"ledger_index": "current"}]}', 405, "unknownCmd"),
    (b'{"method": "ledger", "params": [{"ledger_index": "latest"}]}', 400, "invalidParams"),
    (b'{"method": "ledger", "params": [{"api_version": 9}]}', 400, "invalidParams"),
    (b'{"method": "account_tx", "params": [{"account": "rNope"}]}', 200, "actMalformed"),
    (
        b'{"method": "account_tx", "params": [{"account": "' + ACCOUNT.encode() + b'", '
        b'"marker": "x"}]}',
        400,
        "invalidParams",
    ),
    (b'{"method": "ledger_data", "params": [{"marker": "12"}]}', 400, "invalidParams"),
    (b'{"method": "ledger_entry", "params": [{}]}', 400, "invalidParams"),
    (b'{"method": "tx", "params": [{"transaction": "AB"}]}', 400, "invalidParams"),
    (b'{"method": "x", "pad": "' + b"a" * 70_000 + b'"}', 413, ""),
]


async def _send_all(client: httpx.AsyncClient) -> None:
    for body, status, expected in MALFORMED:
        reply = await client.post("/", content=body)
        text = reply.text
        assert (reply.status_code, expected in text) == (status, True), (body[:80], text)
        if reply.headers["content-type"] == "application/json":
            result = orjson.loads(text)["result"]
            assert result["status"] == "error"
            assert result["error"] == expected


def test_malformed_requests_are_answered_without_the_backend() -> None:
    backend = UntouchableBackend()

    async def run() -> None:
        api = LedgerApi(cast(BackendInterface, backend), ApiOptions(range_refresh_seconds=3600))
        transport = httpx.ASGITransport(app=api.app())
        async with httpx.AsyncClient(transport=transport, base_url="http://ledger") as client:
            await _send_all(client)
        await api.close()

    asyncio.run(run())
    assert backend.touched == []


def _serving(test: Any, backend: Any = None) -> None:
    """Run ``test(port)`` in a thread against the API served on loopback."""

    async def run() -> None:
        used = backend if backend is not None else UntouchableBackend()
        api = LedgerApi(cast(BackendInterface, used), ApiOptions(range_refresh_seconds=3600.0))
        server = web_server(api, "127.0.0.1", 0)
        port = await server.start()
        try:
            await asyncio.get_running_loop().run_in_executor(None, test, port)
        finally:
            await server.stop(drain_timeout=2)
            await api.close()

    asyncio.run(run())


def test_websocket_answers_are_text_frames_and_binary_requests_are_answered() -> None:
    answers: list[str | bytes] = []

    def talk(port: int) -> None:
        with connect(f"ws://127.0.0.1:{port}/", open_timeout=5) as socket:
            socket.send("{not json")
            answers.append(socket.recv(timeout=5))
            socket.send(b'{"id": 7, "command": "path_find"}')  # a binary frame holding a request
            answers.append(socket.recv(timeout=5))
            socket.send(b"\xff\xfe")  # a binary frame that is not UTF-8
            answers.append(socket.recv(timeout=5))

    _serving(talk)
    assert all(isinstance(answer, str) for answer in answers), answers
    malformed, binary, garbage = (orjson.loads(answer) for answer in answers)
    assert (malformed["error"], malformed["type"]) == ("jsonInvalid", "response")
    assert (binary["id"], binary["error"]) == (7, "unknownCmd")
    assert garbage["error"] == "jsonInvalid"
    assert "UTF-8" in garbage["value"]


class SlowBackend:
    """Answers ``fetch_ledger_range`` after ``delay`` seconds with no ledgers stored."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def fetch_ledger_range(self) -> None:
        time.sleep(self.delay)


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


HOSTILE = {
    "content-length and chunked": (
        b"POST / HTTP/1.1\r\nHost: l\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n",
        400,
    ),
    "two content-lengths": (
        b"POST / HTTP/1.1\r\nHost: l\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        400,
    ),
    "a header over 8,190 bytes": (
        b"POST / HTTP/1.1\r\nHost: l\r\nX-Big: " + b"a" * 8191 + b"\r\n\r\n",
        431,
    ),
}


@pytest.mark.parametrize(("request_bytes", "status"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_http_is_one_log_line_without_traceback(
    request_bytes: bytes, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answers: list[bytes] = []
    _serving(lambda port: answers.append(_raw(port, request_bytes)))
    (answer,) = answers
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:100]
    _assert_at_most_one_line(caplog)


def test_a_websocket_reset_with_an_answer_pending_logs_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    def reset(port: int) -> None:
        for _ in range(3):
            with contextlib.suppress(OSError), connect(f"ws://127.0.0.1:{port}/") as client:
                client.send('{"id": 1, "command": "ledger_range"}')
                client.send('{"id": 2, "command": "ledger_range"}')
                linger = struct.pack("ii", 1, 0)
                client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                client.socket.close()  # a TCP reset while both answers are pending
        time.sleep(1.5)  # the answers are due and written to a reset connection

    _serving(reset, backend=SlowBackend(0.3))
    _assert_at_most_one_line(caplog, per=3)


def _assert_at_most_one_line(caplog: pytest.LogCaptureFixture, per: int = 1) -> None:
    """The server side (not the test's own client) logged at most ``per`` lines, none of them
    a traceback."""
    server = [r for r in caplog.records if not r.name.startswith("websockets.client")]
    for record in server:
        assert record.exc_info is None, record.getMessage()
        assert "\n" not in record.getMessage(), record.getMessage()
    said = [r for r in server if r.name.startswith(("chainloom", "uvicorn"))]
    assert len(said) <= per, [r.getMessage() for r in said]


def _serving_with(options: ApiOptions, test: Any) -> None:
    async def run() -> None:
        api = LedgerApi(cast(BackendInterface, UntouchableBackend()), options)
        server = web_server(api, "127.0.0.1", 0)
        port = await server.start()
        try:
            await asyncio.get_running_loop().run_in_executor(None, test, port)
        finally:
            await server.stop(drain_timeout=2)
            await api.close()

    asyncio.run(run())


def _closed_after(conn: socket.socket, within: float) -> float:
    """Seconds until the server closes ``conn`` (reading and dropping what it sends)."""
    start = time.monotonic()
    conn.settimeout(within)
    while conn.recv(65536):
        pass
    return time.monotonic() - start


SHORT = ApiOptions(
    range_refresh_seconds=3600.0,
    header_timeout=0.5,
    body_timeout=0.5,
    ws_idle_timeout=0.5,
    max_connections=5,
)


def test_idle_and_slow_connections_are_closed() -> None:
    seconds: dict[str, float] = {}

    def idle(port: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as silent:
            seconds["silent"] = _closed_after(silent, 5)
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"POST / HTTP/1.1\r\nHost: l\r\n")  # and nothing more
            seconds["slow head"] = _closed_after(slow, 5)
        with socket.create_connection(("127.0.0.1", port)) as kept:
            kept.sendall(b"POST / HTTP/1.1\r\nHost: l\r\nContent-Length: 2\r\n\r\n{}")
            seconds["kept alive"] = _closed_after(kept, 5)
        with connect(f"ws://127.0.0.1:{port}/") as client:
            start = time.monotonic()
            with pytest.raises(ConnectionClosed) as closed:
                client.recv(timeout=5)
            seconds["websocket"] = time.monotonic() - start
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1001, "idle")

    _serving_with(SHORT, idle)
    assert all(0.4 <= s < 2.5 for s in seconds.values()), seconds


def test_connections_past_the_cap_are_refused_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    answers: list[bytes] = []
    options = replace(SHORT, header_timeout=10.0)

    def crowd(port: int) -> None:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        time.sleep(0.2)
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port)) as late:
                late.settimeout(5)
                answers.append(late.recv(65536))
        for conn in held:
            conn.close()

    _serving_with(options, crowd)
    assert all(a.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") for a in answers), answers
    assert all(a.endswith(b"more than 5 connections open; retry shortly\n") for a in answers)
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused == ["ledger api: 1 connection(s) refused: over max_connections (5)"]
    assert all(r.exc_info is None for r in caplog.records)


def test_the_connection_cap_stays_below_the_descriptor_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert connection_cap(10**9) == soft - DESCRIPTOR_RESERVE
    assert connection_cap(5) == 5


class HeavyBackend:
    """A stored range at once; a ledger header only after ``delay`` seconds (and none)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def fetch_ledger_range(self) -> LedgerRange:
        return LedgerRange(1, 10)

    def fetch_ledger_by_sequence(self, sequence: int) -> None:
        time.sleep(self.delay)


def test_one_client_cannot_starve_another() -> None:
    """300 ledger_data from one client (Clio's DoS case, scaled down): the client's budget
    refuses what is past it at once (slowDown), and another client's ledger_range is answered
    at once, never queued behind the expensive calls."""
    api = LedgerApi(
        cast(BackendInterface, HeavyBackend(2.0)),
        ApiOptions(range_refresh_seconds=3600.0, workers=2, max_pending=8, client_budget=32),
    )
    app = api.app()
    heavy = b'{"method": "ledger_data", "params": [{"ledger_index": 5}]}'
    cheap = b'{"method": "ledger_range", "params": [{}]}'

    async def run() -> tuple[list[httpx.Response], httpx.Response, float]:
        flood = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("192.0.2.1", 1)), base_url="http://l"
        )
        other = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("192.0.2.2", 1)), base_url="http://l"
        )
        async with flood, other:
            calls = [asyncio.create_task(flood.post("/", content=heavy)) for _ in range(30)]
            await asyncio.sleep(0.1)  # the flood is in flight
            start = time.monotonic()
            answer = await other.post("/", content=cheap)
            seconds = time.monotonic() - start
            return await asyncio.gather(*calls), answer, seconds

    flooded, answer, seconds = asyncio.run(run())
    asyncio.run(api.close())
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["ledger_index_max"] == 10
    assert seconds < 1.0  # queued behind the flood, it would wait 2 s or more
    refused = [r for r in flooded if r.json()["result"].get("error") == "slowDown"]
    assert len(refused) == 30 - 32 // 8  # weight 8 each: four in flight, the rest refused
    assert all(r.status_code == 503 for r in refused)


def test_a_forwarded_for_header_does_not_change_who_the_client_is() -> None:
    api = LedgerApi(
        cast(BackendInterface, HeavyBackend(0.5)),
        ApiOptions(range_refresh_seconds=3600.0, client_budget=8),
    )
    heavy = b'{"method": "ledger_data", "params": [{"ledger_index": 5}]}'
    errors: list[str | None] = []

    async def run() -> None:
        server = web_server(api, "127.0.0.1", 0)
        port = await server.start()
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                replies = await asyncio.gather(
                    *(
                        client.post("/", content=heavy, headers={"X-Forwarded-For": f"192.0.2.{n}"})
                        for n in (1, 2)
                    )
                )
            errors.extend(r.json()["result"].get("error") for r in replies)
        finally:
            await server.stop(drain_timeout=2)
            await api.close()

    asyncio.run(run())
    assert sorted(errors, key=str) == sorted(["lgrNotFound", "slowDown"], key=str)


class RangeBackend:
    """Answers the range read, or fails it as an unreachable database does."""

    def __init__(self) -> None:
        self.down = False
        self.reads = 0

    def hard_fetch_ledger_range(self) -> LedgerRange | None:
        self.reads += 1
        if self.down:
            raise BackendError("cassandra 10.0.0.9:9042: no host answered")
        return LedgerRange(38129, 38137)


def test_readiness_reads_the_range_from_the_backend_and_liveness_does_not() -> None:
    backend = RangeBackend()

    async def run() -> list[tuple[int, Any]]:
        api = LedgerApi(cast(BackendInterface, backend), ApiOptions(range_refresh_seconds=3600))
        transport = httpx.ASGITransport(app=api.app())
        seen = []
        async with httpx.AsyncClient(transport=transport, base_url="http://ledger") as client:
            for down, path in ((False, "/readyz"), (False, "/healthz"), (True, "/readyz"),
                               (True, "/healthz")):  # fmt: skip
                backend.down = down
                reply = await client.get(path)
                seen.append((reply.status_code, reply.json()))
        await api.close()
        return seen

    assert asyncio.run(run()) == [
        (200, {"status": "ready", "complete_ledgers": "38129-38137"}),
        (200, {"status": "ok"}),
        (503, {"status": "unavailable", "reason": "cassandra 10.0.0.9:9042: no host answered"}),
        (200, {"status": "ok"}),
    ]
    assert backend.reads == 2  # each readiness check a round trip; liveness none
