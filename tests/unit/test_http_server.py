"""The HTTP server alone, with a stub app on loopback: it frames, bounds and refuses; the app
decides every body, including the server's own refusals."""

from __future__ import annotations

import asyncio
import logging

import pytest

from chainloom.http_server import HttpServer, Limits, Request, Response

LIMITS = Limits(max_body_bytes=16, header_timeout=2, body_timeout=2, max_head_bytes=256)


class EchoApp:
    """Answers the body back in plain text; fails on ``/boom``; refuses in its own shape."""

    async def respond(self, request: Request) -> Response:
        if request.path == "/boom":
            raise RuntimeError("a bug in a route")
        return Response(200, request.method.encode() + b" " + request.body, "text/plain")

    def refusal(self, status: int, reason: str) -> Response:
        return Response(status, f"refused {status}: {reason}".encode(), "text/x-refusal")


async def talk(request: bytes) -> bytes:
    server = HttpServer(EchoApp(), "127.0.0.1", 0, LIMITS)
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
    assert b"Content-Type: text/plain\r\n" in raw
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
    (record,) = caplog.records
    assert record.exc_info is None


def test_a_failing_route_is_a_500_in_the_apps_shape_with_its_traceback_logged(caplog):
    raw = asyncio.run(talk(b"GET /boom HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))
    assert raw.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert raw.endswith(b"refused 500: internal error")
    (record,) = caplog.records
    assert record.getMessage() == "listener: GET /boom failed"
    assert record.exc_info is not None  # a bug, not a hostile client: the traceback is wanted
