"""The listener: the spy stream and the REST endpoint, both feeding one intake.

Why a module of its own: the intake (:mod:`chainloom.relayer.intake`) decides VAAs and knows
no transport; the REST mapping (:mod:`chainloom.relayer.rest`) knows HTTP and nothing of
Redis. This module only wires them: it runs the blocking intake in a small thread pool next to
the asyncio loop that serves gRPC and HTTP (one pooled Redis client is shared by every
thread), subscribes to the spy, serves REST, and answers readiness and counters for both.
The import direction is one way: listener -> rest -> intake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from chainloom.relayer.intake import Intake, IntakeResult, Outcome
from chainloom.relayer.rest import RestServer

if TYPE_CHECKING:
    from chainloom.relayer.config import RestSettings
    from chainloom.relayer.spy_client import SpyClient

log = logging.getLogger(__name__)


class Listener:
    """The running service: a spy subscription and the REST endpoint, both feeding an Intake."""

    def __init__(
        self,
        intake: Intake,
        *,
        spy: SpyClient | None = None,
        rest: RestSettings | None = None,
        threads: int = 8,
        spy_workers: int = 4,
    ) -> None:
        self.intake = intake
        self.spy = spy
        self.rest = rest
        self.spy_workers = spy_workers
        self.port = 0
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="intake")
        self._server: RestServer | None = None
        self._spy_task: asyncio.Task[None] | None = None
        self._started = False

    async def submit(self, data: bytes, *, source: str) -> IntakeResult:
        """Decide one VAA off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, lambda: self.intake.submit(data, source=source)
        )

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether the listener can queue (Redis answers), with details (blocking)."""
        details: dict[str, Any] = {}
        try:
            self.intake.tables.client.ping()
            details["redis"] = "ok"
            ok = True
        except Exception as error:  # any failure means "not ready"; the reason is reported
            details["redis"] = f"unreachable: {error}"
            ok = False
        if self.spy is not None:
            details["spy"] = "connected" if self.spy.connected else "disconnected"
            if self.spy.counters.last_error:
                details["spy_last_error"] = self.spy.counters.last_error
        return ok, details

    def stats(self) -> dict[str, Any]:
        """Counters of every part, for ``/v1/stats`` and the CLI."""
        stats: dict[str, Any] = {
            "intake": self.intake.counters.snapshot(),
            "rules": self.intake.rule_counters.snapshot(),
        }
        if self.spy is not None:
            counters = self.spy.counters
            stats["spy"] = {
                "connected": self.spy.connected,
                "connections": counters.connections,
                "disconnects": counters.disconnects,
                "messages": counters.messages,
                "drops": counters.drops,
                "consumer_errors": counters.consumer_errors,
                "last_error": counters.last_error,
            }
        return stats

    async def start(self) -> None:
        """Start the REST server (if configured) and the spy subscription (if configured)."""
        self._started = True
        if self.rest is not None:
            self._server = RestServer(self, self.rest)
            self.port = await self._server.start()
        if self.spy is not None:
            self._spy_task = asyncio.create_task(self._consume_spy(self.spy))

    async def _consume_spy(self, spy: SpyClient) -> None:
        async def consume(vaa: bytes) -> None:
            # A REST caller is told 503 and retries; a spy VAA has nobody to retry it, so it
            # waits here for Redis (while the client's bounded buffer absorbs, then drops).
            delay = 0.05
            while (result := await self.submit(vaa, source="spy")).outcome is Outcome.UNAVAILABLE:
                log.warning("spy VAA waits for Redis: %s", result.reason)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            if result.outcome in (Outcome.REJECTED, Outcome.MALFORMED):
                log.info("spy VAA %s: %s", result.message_id or "?", result.reason)

        await spy.run(consume, workers=self.spy_workers)

    async def run_forever(self) -> None:
        """Serve until cancelled (or until the spy subscription fails for good)."""
        if not self._started:
            await self.start()
        try:
            if self._spy_task is not None:
                await self._spy_task
            else:
                await asyncio.Event().wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Stop the spy subscription and the REST server; wait for in-flight intakes."""
        if self.spy is not None:
            self.spy.stop()
        if self._spy_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._spy_task, 5)
            self._spy_task = None
        if self._server is not None:
            await self._server.stop()
            self._server = None
        self._executor.shutdown(wait=True)
