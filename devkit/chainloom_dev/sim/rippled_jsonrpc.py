"""A stand-in for rippled's JSON-RPC and WebSocket APIs: what ``chainloom ledger api``
forwards, answered.

Why it exists: the ledger API forwards what needs a live server (``submit``, ``fee``,
``server_state``, ``ledger_current``, calls on the ``current`` ledger) to rippled, and no
rippled runs on the development machine. This server answers those methods in rippled's
shapes with deterministic values (a current ledger index that does not move, fixed fees, one
AccountRoot for any account), decodes a submitted ``tx_blob`` with xrpl-py's codec and answers
an ``engine_result`` for it (``tesSUCCESS`` the first time a transaction is seen,
``tefPAST_SEQ`` for a copy), and refuses anything else with rippled's ``unknownCmd``.

Both APIs share one port (``POST /`` and a WebSocket on ``/``). For failover tests it can be
told to **fail** (HTTP 503 with rippled's plain-text overload line, which is no JSON-RPC
answer; a WebSocket closed with 1011) or to **hang** (hold every request until it stops),
and it **counts** the calls it received (:attr:`RippledStandIn.calls`: method and params, in
order), so a test sees which instance a call reached and that none was sent twice. It runs on
the project's HTTP stack (:mod:`chainloom.web`) in a thread of its own
(:class:`RippledStandInThread`), or as ``chainloom-dev ledger rippled``.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import Response
from xrpl.core import binarycodec

from chainloom.web.app import make_app
from chainloom.web.errors import JsonErrors
from chainloom.web.server import WebServer, WebSocketLimits
from chainloom.web.wire import Limits

BUILD_VERSION = "2.3.0-standin"
"""``server_state.state.build_version``."""
OVERLOADED = "Server is overloaded\n"
"""rippled's plain-text answer when it sheds load (HTTP 503)."""
TXN_PREFIX = b"TXN\x00"
"""The hash prefix of a signed transaction's ID (SHA-512Half of prefix + blob)."""
ACCOUNT_BALANCE = "100000000000"
"""Drops in the AccountRoot every ``account_info`` answers."""


class Mode(enum.Enum):
    """How the stand-in treats a request."""

    ANSWER = "answer"
    """Answer it as rippled would."""
    FAIL = "fail"
    """HTTP 503 with rippled's plain-text overload line (not a JSON-RPC answer)."""
    HANG = "hang"
    """Never answer (until the server stops)."""


@dataclass
class RippledStandIn:
    """The stand-in's state: its fixed ledger, its mode, what it received."""

    current_ledger: int = 1000
    """``ledger_current_index``; the newest validated ledger is the one before it."""
    mode: Mode = Mode.ANSWER
    """How requests are treated (tests switch it while the server runs)."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Every JSON-RPC call received, in order: method and params (whatever the mode)."""
    submitted: dict[str, str] = field(default_factory=dict)
    """Transaction hash -> tx_blob of every transaction submitted."""

    def count(self, method: str | None = None) -> int:
        """Calls received, of ``method`` or of any."""
        return sum(1 for name, _ in self.calls if method is None or name == method)

    # ------------------------------------------------------------------------------ answers

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """rippled's ``result`` for one call."""
        handler = _METHODS.get(method)
        result = _refusal("unknownCmd", 32, "Unknown method.")
        if handler is not None:
            result = handler(self, params)
        if "error" in result:
            return {**result, "request": {**params, "command": method}, "status": "error"}
        return {**result, "status": "success"}

    def _validated(self) -> int:
        return self.current_ledger - 1

    def _ledger_hash(self, sequence: int) -> str:
        return hashlib.sha512(f"standin-ledger-{sequence}".encode()).hexdigest()[:64].upper()

    def fee(self, params: dict[str, Any]) -> dict[str, Any]:
        del params
        return {
            "current_ledger_size": "14",
            "current_queue_size": "0",
            "drops": {
                "base_fee": "10",
                "median_fee": "5000",
                "minimum_fee": "10",
                "open_ledger_fee": "10",
            },
            "expected_ledger_size": "24",
            "ledger_current_index": self.current_ledger,
            "levels": {
                "median_level": "128000",
                "minimum_level": "256",
                "open_ledger_level": "256",
                "reference_level": "256",
            },
            "max_queue_size": "480",
        }

    def server_state(self, params: dict[str, Any]) -> dict[str, Any]:
        del params
        validated = self._validated()
        return {
            "state": {
                "build_version": BUILD_VERSION,
                "complete_ledgers": f"{validated - 999}-{validated}",
                "io_latency_ms": 1,
                "load_base": 256,
                "load_factor": 256,
                "peers": 21,
                "server_state": "full",
                "validated_ledger": {
                    "base_fee": 10,
                    "close_time": 800000000 + validated,
                    "hash": self._ledger_hash(validated),
                    "reserve_base": 1000000,
                    "reserve_inc": 200000,
                    "seq": validated,
                },
                "validation_quorum": 28,
            }
        }

    def ledger_current(self, params: dict[str, Any]) -> dict[str, Any]:
        del params
        return {"ledger_current_index": self.current_ledger}

    def ledger_closed(self, params: dict[str, Any]) -> dict[str, Any]:
        del params
        validated = self._validated()
        return {"ledger_hash": self._ledger_hash(validated), "ledger_index": validated}

    def account_info(self, params: dict[str, Any]) -> dict[str, Any]:
        account = params.get("account")
        if not isinstance(account, str) or not account.startswith("r"):
            return _refusal("actMalformed", 35, "Account malformed.")
        return {
            "account_data": {
                "Account": account,
                "Balance": ACCOUNT_BALANCE,
                "Flags": 0,
                "LedgerEntryType": "AccountRoot",
                "OwnerCount": 0,
                "PreviousTxnID": "0" * 64,
                "PreviousTxnLgrSeq": self._validated(),
                "Sequence": 1,
                "index": hashlib.sha512(account.encode()).hexdigest()[:64].upper(),
            },
            "ledger_current_index": self.current_ledger,
            "validated": False,
        }

    def submit(self, params: dict[str, Any]) -> dict[str, Any]:
        blob = params.get("tx_blob")
        if not isinstance(blob, str):
            return _refusal("invalidParams", 31, "Missing field 'tx_blob'.")
        try:
            tx_json = binarycodec.decode(blob)
        except Exception as bad:
            return {
                "error": "invalidTransaction",
                "error_exception": f"Cannot decode the transaction: {bad}",
            }
        return self._applied(blob.upper(), tx_json)

    def submit_multisigned(self, params: dict[str, Any]) -> dict[str, Any]:
        tx_json = params.get("tx_json")
        if not isinstance(tx_json, dict):
            return _refusal("invalidParams", 31, "Missing field 'tx_json'.")
        try:
            blob = binarycodec.encode(tx_json)
        except Exception as bad:
            return {"error": "invalidTransaction", "error_exception": str(bad)}
        return self._applied(blob.upper(), binarycodec.decode(blob))

    def _applied(self, blob: str, tx_json: dict[str, Any]) -> dict[str, Any]:
        tx_hash = transaction_hash(blob)
        again = tx_hash in self.submitted
        self.submitted.setdefault(tx_hash, blob)
        result, code, message = (
            ("tefPAST_SEQ", -190, "This sequence number has already passed.")
            if again
            else ("tesSUCCESS", 0, "The transaction was applied. Only final in a validated ledger.")
        )
        return {
            "accepted": not again,
            "applied": not again,
            "broadcast": not again,
            "engine_result": result,
            "engine_result_code": code,
            "engine_result_message": message,
            "kept": not again,
            "queued": False,
            "tx_blob": blob,
            "tx_json": {**tx_json, "hash": tx_hash},
            "validated_ledger_index": self._validated(),
        }


def transaction_hash(blob: str) -> str:
    """A signed transaction's ID: SHA-512Half of ``TXN\\0`` and the blob, upper-case hex."""
    return hashlib.sha512(TXN_PREFIX + bytes.fromhex(blob)).digest()[:32].hex().upper()


def _refusal(token: str, code: int, message: str) -> dict[str, Any]:
    """rippled's error fields (:meth:`RippledStandIn.answer` adds the request and status)."""
    return {"error": token, "error_code": code, "error_message": message}


_METHODS: dict[str, Callable[[RippledStandIn, dict[str, Any]], dict[str, Any]]] = {
    "fee": RippledStandIn.fee,
    "server_state": RippledStandIn.server_state,
    "ledger_current": RippledStandIn.ledger_current,
    "ledger_closed": RippledStandIn.ledger_closed,
    "account_info": RippledStandIn.account_info,
    "submit": RippledStandIn.submit,
    "submit_multisigned": RippledStandIn.submit_multisigned,
}


ERRORS = JsonErrors("error", {}, log_name="rippled stand-in")


def make_standin_app(standin: RippledStandIn, release: asyncio.Event) -> FastAPI:
    """``POST /``: one JSON-RPC call, treated as :attr:`RippledStandIn.mode` says; a hanging
    call is held until ``release`` is set (then answered as a failure)."""
    app = make_app("rippled stand-in", ERRORS, routes_hint="POST /")

    @app.post("/")
    async def call(request: Request) -> Response:
        body = await request.body()
        try:
            document = orjson.loads(body)
            method = str(document["method"])
            params = dict((document.get("params") or [{}])[0])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            return Response("Unable to parse request\n", 400, media_type="text/plain")
        standin.calls.append((method, params))
        if standin.mode is Mode.FAIL:
            return Response(OVERLOADED, 503, media_type="text/plain")
        if standin.mode is Mode.HANG:
            await release.wait()
            return Response(OVERLOADED, 503, media_type="text/plain")
        result = standin.answer(method, params)
        return Response(orjson.dumps({"result": result}), 200, media_type="application/json")

    @app.websocket("/")
    async def websocket(socket: WebSocket) -> None:
        await socket.accept()
        try:
            while True:
                await _websocket_call(standin, release, socket, await socket.receive_text())
        except (WebSocketDisconnect, _Hangup):
            return

    return app


class _Hangup(Exception):  # noqa: N818 - a signal between two functions, not an error
    """The stand-in closed the WebSocket (it was told to fail or to hang)."""


async def _websocket_call(
    standin: RippledStandIn, release: asyncio.Event, socket: WebSocket, text: str
) -> None:
    """One message of rippled's WebSocket API: ``{"id", "command", ...params}``."""
    try:
        document = orjson.loads(text)
        method = str(document["command"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        await socket.send_text('{"error": "jsonInvalid", "status": "error", "type": "response"}')
        return
    params = {k: v for k, v in document.items() if k not in ("id", "command")}
    standin.calls.append((method, params))
    if standin.mode is Mode.FAIL:
        await socket.close(1011, "overloaded")
        raise _Hangup
    if standin.mode is Mode.HANG:
        await release.wait()
        await socket.close(1001, "stopping")
        raise _Hangup
    result = standin.answer(method, params)
    if result["status"] == "error":
        answer = {"id": document.get("id"), **result, "type": "response"}
    else:
        status = result.pop("status")
        answer = {"id": document.get("id"), "result": result, "status": status, "type": "response"}
    await socket.send_text(orjson.dumps(answer).decode())


class RippledStandInThread:
    """The stand-in served from a thread with its own event loop: ``start`` -> URL, ``stop``."""

    def __init__(self, standin: RippledStandIn | None = None, *, host: str = "127.0.0.1",
                 port: int = 0) -> None:  # fmt: skip
        self.standin = standin or RippledStandIn()
        limits = Limits(max_body_bytes=1 << 20, header_timeout=20.0, body_timeout=20.0,
                        log_name="rippled stand-in")  # fmt: skip
        self._release = asyncio.Event()
        app = make_standin_app(self.standin, self._release)
        websocket = WebSocketLimits(ping_interval=None, ping_timeout=None)
        self._server = WebServer(app, host, port, limits, ERRORS, websocket=websocket)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.url = ""
        """``http://host:port/`` once started: rippled's JSON-RPC API."""
        self.websocket_url = ""
        """``ws://host:port/`` once started: rippled's WebSocket API, on the same port."""

    def start(self) -> str:
        """Bind and serve; the URL (its JSON-RPC API; :attr:`websocket_url` the other)."""
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._server.start(), self._loop).result(30)
        self.url = f"http://{self._server.host}:{port}/"
        self.websocket_url = f"ws://{self._server.host}:{port}/"
        return self.url

    def stop(self) -> None:
        """Stop serving (requests still hanging are let go first) and end the thread; once."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._release.set)
        stopping = self._server.stop(drain_timeout=1.0)
        asyncio.run_coroutine_threadsafe(stopping, self._loop).result(60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
