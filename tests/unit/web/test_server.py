"""The accept loop's out-of-descriptor reports: one line per interval, not a traceback each."""

from __future__ import annotations

import asyncio
import logging

import pytest

from chainloom.web.server import quiet_accept_errors


def test_accept_failures_are_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        quiet_accept_errors(loop)
        quiet_accept_errors(loop)  # installed once
        for _ in range(500):  # what asyncio reports at each failed accept
            loop.call_exception_handler(
                {
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(24, "Too many open files"),
                }
            )
        loop.call_exception_handler({"message": "something else"})

    asyncio.run(run())
    accept = [r for r in caplog.records if "cannot accept" in r.getMessage()]
    assert [r.getMessage() for r in accept] == [
        "http: cannot accept connections ([Errno 24] Too many open files); 1 time(s) in 10 s, "
        "retrying each second"
    ]
    assert all(r.exc_info is None for r in accept)
    assert any(r.getMessage() == "something else" for r in caplog.records)  # asyncio's own
