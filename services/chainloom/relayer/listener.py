"""The listener: VAAs from the spy stream and the REST endpoint, validated, into Incoming.

Why it is shaped this way:

* One :class:`Intake` decides every VAA, whichever way it arrived, so the spy path and the REST
  path cannot disagree. It answers with an :class:`IntakeResult` that tells the truth (queued,
  already known and where, rejected and why, malformed) - the reference answered 200 for all.
* Deduplication is the tables' atomic ``enqueue`` (by digest, across every table), so the ~19
  copies of one VAA that the spy forwards make one request even when they race.
* Where a chain adapter is configured, a cheap read (``locate``) runs before its
  ``is_redeemed`` so duplicates do not cost a chain query each; the atomic ``enqueue`` still
  decides. Without an adapter the enqueue is the only Redis call (the worker checks
  redemption again before submitting anyway).
* Redis and signature checks are blocking, so :class:`Listener` runs the intake in a small
  thread pool next to the asyncio loop that serves gRPC and HTTP; one pooled Redis client is
  shared by every thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chainloom.relayer.model import RelayRequest
from chainloom.relayer.validation import Accepted, Rule, RuleCounters, Validator

if TYPE_CHECKING:
    from aiohttp import web

    from chainloom.relayer.adapters import ChainAdapter
    from chainloom.relayer.config import RestConfig
    from chainloom.relayer.spy_client import SpyClient
    from chainloom.relayer.tables import RelayTables

log = logging.getLogger(__name__)


class Status(enum.Enum):
    """What became of one VAA, with the HTTP status the REST endpoint answers."""

    QUEUED = 202
    """Accepted and now in Incoming."""
    KNOWN = 200
    """Already in a table (or the Completed log); nothing new was queued."""
    REJECTED = 422
    """A validation rule refused it."""
    MALFORMED = 400
    """Not a VAA (or not a well-formed request)."""
    TOO_LARGE = 413
    """The request is larger than the configured limit."""
    UNAVAILABLE = 503
    """Redis could not be reached; nothing was queued, try again."""


@dataclass(frozen=True, slots=True)
class IntakeResult:
    """The answer for one VAA."""

    status: Status
    """The outcome."""
    reason: str | None = None
    """Why it was refused (for REJECTED, MALFORMED, TOO_LARGE, UNAVAILABLE)."""
    rule: Rule | None = None
    """The rule that decided, for rejections and duplicates."""
    digest: str | None = None
    """The VAA digest (``0x`` + 64 hex) once it parsed."""
    message_id: str | None = None
    """``chain/emitter/sequence`` once it parsed."""
    table: str | None = None
    """Where the request is now (QUEUED: incoming; KNOWN: the table that already holds it)."""

    def to_json(self) -> dict[str, Any]:
        """The REST response body."""
        body: dict[str, Any] = {"status": self.status.name.lower()}
        for name in ("digest", "message_id", "table", "reason"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        if self.rule is not None:
            body["rule"] = self.rule.value
        return body


@dataclass(slots=True)
class IntakeCounters:
    """Outcomes by status and by source (``spy`` / ``rest``)."""

    by_status: dict[str, int] = field(default_factory=dict)
    """``{"queued": n, ...}``."""
    by_source: dict[str, int] = field(default_factory=dict)
    """``{"spy": n, "rest": m}``."""
    redeem_check_skipped: int = 0
    """Queued VAAs whose target chain has no adapter to ask (the worker still checks)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, source: str, status: Status) -> None:
        """Count one outcome."""
        with self._lock:
            key = status.name.lower()
            self.by_status[key] = self.by_status.get(key, 0) + 1
            self.by_source[source] = self.by_source.get(source, 0) + 1

    def skipped_redeem_check(self) -> None:
        """Count a VAA whose target chain had no adapter to ask."""
        with self._lock:
            self.redeem_check_skipped += 1

    def snapshot(self) -> dict[str, Any]:
        """A copy for ``/v1/stats``."""
        with self._lock:
            return {
                "by_status": dict(self.by_status),
                "by_source": dict(self.by_source),
                "redeem_check_skipped": self.redeem_check_skipped,
            }


class Intake:
    """Validation, the redemption check and the atomic enqueue, for one VAA at a time."""

    def __init__(
        self,
        validator: Validator,
        tables: RelayTables,
        adapters: Mapping[int, ChainAdapter] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.validator = validator
        self.tables = tables
        self.adapters = dict(adapters or {})
        self.clock = clock
        self.counters = IntakeCounters()

    @property
    def rule_counters(self) -> RuleCounters:
        """The per-rule counters (shared with the validator)."""
        return self.validator.counters

    def submit(self, data: bytes, *, source: str = "rest") -> IntakeResult:
        """Decide one VAA (blocking: Redis, and maybe the chain adapter)."""
        import redis

        try:
            result = self._submit(data)
        except redis.RedisError as error:
            result = IntakeResult(Status.UNAVAILABLE, reason=f"redis unavailable: {error}")
        self.counters.record(source, result.status)
        return result

    def _submit(self, data: bytes) -> IntakeResult:
        checked = self.validator.check(data)
        if not isinstance(checked, Accepted):
            status = Status.MALFORMED if checked.rule is Rule.PARSES else Status.REJECTED
            vaa = checked.vaa
            return IntakeResult(
                status,
                reason=checked.reason,
                rule=checked.rule,
                digest=vaa.digest_hex if vaa is not None else None,
                message_id=vaa.message_id if vaa is not None else None,
            )
        vaa = checked.vaa
        digest, message_id = vaa.digest_hex, vaa.message_id
        counters = self.validator.counters

        adapter = self.adapters.get(checked.target_chain)
        if adapter is not None:
            # A cheap read first, so the guardians' copies of a queued VAA cost no chain query.
            where = self.tables.locate(digest)
            if where is not None:
                counters.rejected(Rule.NOT_QUEUED)
                return IntakeResult(
                    Status.KNOWN,
                    reason=f"already in {where.value}",
                    rule=Rule.NOT_QUEUED,
                    digest=digest,
                    message_id=message_id,
                    table=where.value,
                )
        if adapter is not None and adapter.is_redeemed(data):
            counters.passed(Rule.NOT_QUEUED)
            counters.rejected(Rule.NOT_REDEEMED)
            return IntakeResult(
                Status.REJECTED,
                reason=f"already redeemed on target chain {checked.target_chain}",
                rule=Rule.NOT_REDEEMED,
                digest=digest,
                message_id=message_id,
            )

        request = RelayRequest(
            digest=digest,
            vaa=bytes(data),
            target_chain=checked.target_chain,
            emitter_chain=vaa.emitter_chain,
            sequence=vaa.sequence,
            enqueued_at=self.clock(),
        )
        enqueued = self.tables.enqueue(request)
        if not enqueued.accepted:
            counters.rejected(Rule.NOT_QUEUED)
            table = enqueued.table.value if enqueued.table is not None else None
            return IntakeResult(
                Status.KNOWN,
                reason=f"already in {table}",
                rule=Rule.NOT_QUEUED,
                digest=digest,
                message_id=message_id,
                table=table,
            )
        if adapter is None:
            counters.passed(Rule.NOT_QUEUED)
            self.counters.skipped_redeem_check()
        else:
            counters.passed(Rule.NOT_QUEUED, Rule.NOT_REDEEMED)
        return IntakeResult(Status.QUEUED, digest=digest, message_id=message_id, table="incoming")


class Listener:
    """The running service: a spy subscription and the REST endpoint, both feeding an Intake."""

    def __init__(
        self,
        intake: Intake,
        *,
        spy: SpyClient | None = None,
        rest: RestConfig | None = None,
        threads: int = 8,
        spy_workers: int = 4,
    ) -> None:
        self.intake = intake
        self.spy = spy
        self.rest = rest
        self.spy_workers = spy_workers
        self.port = 0
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="intake")
        self._runner: web.AppRunner | None = None
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
            from aiohttp import web

            from chainloom.relayer.rest import build_app

            self._runner = web.AppRunner(build_app(self, self.rest), access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.rest.host, self.rest.port)
            await site.start()
            addresses = self._runner.addresses
            self.port = int(addresses[0][1]) if addresses else self.rest.port
            log.info("listener: REST on %s:%d", self.rest.host, self.port)
        if self.spy is not None:
            self._spy_task = asyncio.create_task(self._consume_spy(self.spy))

    async def _consume_spy(self, spy: SpyClient) -> None:
        async def consume(vaa: bytes) -> None:
            # A REST caller is told 503 and retries; a spy VAA has nobody to retry it, so it
            # waits here for Redis (while the client's bounded buffer absorbs, then drops).
            delay = 0.05
            while (result := await self.submit(vaa, source="spy")).status is Status.UNAVAILABLE:
                log.warning("spy VAA waits for Redis: %s", result.reason)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            if result.status in (Status.REJECTED, Status.MALFORMED):
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
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._executor.shutdown(wait=True)
