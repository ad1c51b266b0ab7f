"""The listener: the spy stream and the REST endpoint, both feeding one intake.

Why a module of its own: the intake (:mod:`chainloom.relayer.intake`) decides VAAs and knows
no transport; the REST mapping (:mod:`chainloom.relayer.rest`) knows routes and answers and
nothing of Redis; the HTTP stack (:mod:`chainloom.web`) knows the wire and no
route. This module only wires them: it runs the blocking intake in a small thread pool next to
the asyncio loop that serves gRPC and HTTP (one pooled Redis client is shared by every
thread), subscribes to the spy, serves REST, and answers readiness and counters for both
(``/metrics`` through :class:`~chainloom.relayer.metrics.ListenerMetrics`).
The import direction is one way: listener -> rest -> intake (and both -> web).

Readiness also reports how Redis persists the tables (:func:`read_persistence`), and the
listener warns once at start when the append-only file is off: a request answered 202 lives
only in Redis until a worker takes it, so without AOF a Redis crash loses every queued transfer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from chainloom.relayer._redis import sync, text
from chainloom.relayer.intake import Intake, IntakeResult, Outcome
from chainloom.relayer.metrics import ListenerMetrics
from chainloom.relayer.rest import ERRORS, rest_app
from chainloom.web.server import WebServer
from chainloom.web.wire import Limits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from opentelemetry.sdk.metrics.export import MetricReader

    from chainloom.relayer.config import RestSettings
    from chainloom.relayer.recovery import MissedVaaRecovery
    from chainloom.spy.client import SpyClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RedisPersistence:
    """How the Redis of the relay tables keeps what it acknowledged."""

    aof: bool
    """Whether the append-only file is on (``appendonly yes``; ``aof_enabled`` in INFO)."""
    appendfsync: str | None
    """``always``, ``everysec`` or ``no``; None where the server refuses ``CONFIG GET``."""

    def to_json(self) -> dict[str, Any]:
        """The ``redis_persistence`` part of the ``/readyz`` body."""
        return {"aof": "on" if self.aof else "off", "appendfsync": self.appendfsync}


def read_persistence(client: redis.Redis) -> RedisPersistence:
    """Ask Redis whether it persists writes (blocking; raises the client's errors).

    ``INFO persistence`` says whether AOF is on and is allowed everywhere; the fsync policy is
    only in ``CONFIG GET``, which managed services often rename or forbid.
    """
    info = sync(client.info("persistence"))
    aof = int(info.get("aof_enabled", 0)) == 1
    try:
        config = sync(client.config_get("appendfsync"))
    except redis.ResponseError:
        return RedisPersistence(aof, None)
    fsync = next(iter(config.values()), None)
    return RedisPersistence(aof, None if fsync is None else text(fsync))


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
        recovery: MissedVaaRecovery | None = None,
        metric_readers: Sequence[MetricReader] = (),
    ) -> None:
        self.intake = intake
        self.spy = spy
        self.recovery = recovery
        """Missed-VAA recovery (None: off; it needs public_rpc.endpoints)."""
        self.rest = rest
        self.spy_workers = spy_workers
        self.port = 0
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="intake")
        self._server: WebServer | None = None
        self._spy_task: asyncio.Task[None] | None = None
        self._recovery_task: asyncio.Task[None] | None = None
        self._recovery_stop = asyncio.Event()
        self._started = False
        self.metrics = ListenerMetrics(self.stats, intake.tables.depths, readers=metric_readers)
        """The counters below as metrics (``/metrics``; OTLP through ``metric_readers``)."""

    async def submit(self, data: bytes, *, source: str) -> IntakeResult:
        """Decide one VAA off the event loop (and tell recovery its sequence was seen)."""
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            self._executor, lambda: self.intake.submit(data, source=source)
        )
        if self.recovery is not None and result.outcome is not Outcome.UNAVAILABLE:
            self.recovery.seen(result.message_id)
        return result

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether the listener can queue (Redis answers), with details (blocking)."""
        details: dict[str, Any] = {}
        try:
            client = self.intake.tables.client
            client.ping()
            details["redis"] = "ok"
            details["redis_persistence"] = read_persistence(client).to_json()
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
        if self.recovery is not None:
            stats["recovery"] = self.recovery.stats()
        return stats

    def metrics_exposition(self) -> bytes:
        """``/metrics``: every counter and the queue depths, Prometheus text (blocking)."""
        return self.metrics.exposition()

    async def start(self) -> None:
        """Start the REST server (if configured) and the spy subscription (if configured)."""
        self._started = True
        # In the pool, not awaited: an unreachable Redis must not hold up the REST server.
        self._executor.submit(self._warn_if_volatile)
        if self.rest is not None:
            self._server = rest_server(self, self.rest)
            self.port = await self._server.start()
            log.info("listener: REST on %s:%d", self.rest.host, self.port)
        if self.spy is not None:
            self._spy_task = asyncio.create_task(self._consume_spy(self.spy))
        if self.recovery is not None:
            self._recovery_task = asyncio.create_task(
                self.recovery.run(self._submit_recovered, self._recovery_stop)
            )

    async def _submit_recovered(self, vaa: bytes) -> IntakeResult:
        return await self.submit(vaa, source="recovery")

    def _warn_if_volatile(self) -> None:
        client = self.intake.tables.client
        try:
            persistence = read_persistence(client)
        except redis.RedisError as error:
            log.warning("listener: cannot read Redis's persistence setting yet: %s", error)
            return
        if not persistence.aof:
            log.warning(
                "listener: Redis %s runs without its append-only file (appendonly no): "
                "transfers answered 202 are lost if Redis stops before a worker takes them; "
                "turn AOF on (see docs/relayer.md)",
                _address(client),
            )

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
        """Stop the spy subscription and the REST server; wait for in-flight requests."""
        if self.spy is not None:
            self.spy.stop()
        self._recovery_stop.set()
        if self._recovery_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._recovery_task, 10)
            self._recovery_task = None
        if self._spy_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._spy_task, 5)
            self._spy_task = None
        if self._server is not None:
            await self._server.stop()
            self._server = None
        self._executor.shutdown(wait=True)
        self.metrics.shutdown()


def rest_server(listener: Listener, config: RestSettings) -> WebServer:
    """The REST endpoint of ``listener`` on the address and within the limits of ``config``."""
    limits = Limits(
        max_body_bytes=config.max_request_bytes,
        header_timeout=config.header_timeout,
        body_timeout=config.body_timeout,
        log_name="listener",
    )
    app = rest_app(listener, max_request_bytes=config.max_request_bytes)
    return WebServer(app, config.host, config.port, limits, ERRORS)


def _address(client: redis.Redis) -> str:
    """``host:port`` of a client's server (never its password), for log lines."""
    kwargs = client.get_connection_kwargs()
    if "path" in kwargs:
        return str(kwargs["path"])
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
