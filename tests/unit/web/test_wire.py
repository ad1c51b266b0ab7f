"""The HTTP stack alone, with a stub app on loopback: the wire guard frames, bounds and refuses;
the app decides every body, including the guard's own refusals (through its error shape)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from chainloom.web import errors
from chainloom.web.server import WebServer
from chainloom.web.wire import Limits

LIMITS = Limits(
    max_body_bytes=16, header_timeout=2, body_timeout=2, max_head_bytes=256, log_name="listener"
)


class Refusals(errors.JsonErrors):
    """Refuses in its own plain-text shape."""

    def body(self, status: int, reason: str, **fields: object) -> bytes:
        return f"refused {status}: {reason}".encode()

    def render(self, status: int, reason: str) -> tuple[bytes, str]:
        return self.body(status, reason), "text/x-refusal"

    def response(
        self, status: int, reason: str, headers: Mapping[str, str] | None = None, **fields: Any
    ) -> Response:
        return Response(self.body(status, reason), status, headers, media_type="text/x-refusal")


REFUSALS = Refusals("error", {}, log_name="listener")


def echo_app() -> FastAPI:
    """Answers the body back in plain text; fails on ``/boom``."""
    app = FastAPI()
    errors.install(app, REFUSALS, routes_hint="none")

    @app.api_route("/{path}", methods=["GET", "POST"])
    async def echo(path: str, request: Request) -> Response:
        if path == "boom":
            raise RuntimeError("a bug in a route")
        body = await request.body()
        return Response(request.method.encode() + b" " + body, media_type="text/plain")

    return app


async def talk(request: bytes) -> bytes:
    server = WebServer(echo_app(), "127.0.0.1", 0, LIMITS, REFUSALS)
    port = await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        raw = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        await writer.wait_closed()
        return raw
    finally:
        await server.stop()


def test_bodies_are_read_whole_and_chunked_bodies_joined():
    raw = asyncio.run(
        talk(
            b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
            b"\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        )
    )
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-type: text/plain; charset=utf-8\r\n" in raw
    assert raw.endswith(b"\r\n\r\nPOST abcde")


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        (
            b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n",
            b"refused 413: request body exceeds 16 bytes",
        ),
        (
            b"GET /x HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 300 + b"\r\n\r\n",
            b"refused 431: request head exceeds 256 bytes",
        ),
        (
            b"GET /x HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 300 + b"\r\n",
            b"refused 431: request head exceeds 256 bytes",
        ),
        (
            b"GET /x HTTP/2.0\r\nHost: h\r\n\r\n",
            b"refused 505: HTTP/2.0 is not supported (HTTP/1.1 and HTTP/1.0 are)",
        ),
    ],
    ids=[
        "body over the limit",
        "whole head over the limit",
        "incomplete head over the limit",
        "version",
    ],
)
def test_refusals_are_rendered_by_the_app_and_close_the_connection(request_bytes, expected, caplog):
    caplog.set_level(logging.INFO)
    raw = asyncio.run(talk(request_bytes))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Content-Type: text/x-refusal\r\n" in head
    assert b"Connection: close\r\n" in head + b"\r\n"
    assert body == expected
    (record,) = [r for r in caplog.records if r.name.startswith("chainloom")]
    assert record.exc_info is None


def test_a_failing_route_is_a_500_in_the_apps_shape_with_its_traceback_logged(caplog):
    raw = asyncio.run(talk(b"GET /boom HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))
    assert raw.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert raw.endswith(b"refused 500: internal error")
    (record,) = [r for r in caplog.records if r.name.startswith("chainloom")]
    assert record.getMessage() == "listener: GET /boom failed"
    assert record.exc_info is not None  # a bug, not a hostile client: the traceback is wanted
