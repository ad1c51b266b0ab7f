"""A malformed request never reaches the backend: the server answers it from parsing alone."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import httpx
import orjson
from websockets.sync.client import connect

from chainloom.ledger.api.server import ApiOptions, LedgerApi, web_server
from chainloom.ledger.backend import BackendInterface

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
    (b'{"method": "submit", "params": [{}]}', 405, "unknownCmd"),
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


def _serving(test: Any) -> None:
    """Run ``test(port)`` in a thread against the API served on loopback."""

    async def run() -> None:
        api = LedgerApi(cast(BackendInterface, UntouchableBackend()), ApiOptions(3600.0))
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
            socket.send(b'{"id": 7, "command": "submit"}')  # a binary frame holding a request
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
