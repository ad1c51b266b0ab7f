"""The intake: one VAA in, validated and (if accepted) atomically queued, one outcome out.

Why it is shaped this way:

* One :class:`Intake` decides every VAA, whichever way it arrived (spy stream or REST), so the
  two paths cannot disagree. It answers with an :class:`IntakeResult` that tells the truth
  (queued, already known and where, rejected and why, malformed, Redis unavailable) - the
  reference answered 200 for all.
* It knows nothing of HTTP or gRPC: the REST mapping (:mod:`chainloom.relayer.rest`) turns an
  :class:`Outcome` into a status code and a JSON body, and the wiring
  (:mod:`chainloom.relayer.listener`) feeds it from both sources.
* Deduplication is the tables' atomic ``enqueue`` (by digest, across every table), so the ~19
  copies of one VAA that the spy forwards make one request even when they race.
* Where a chain adapter is configured, a cheap read (``locate``) runs before its
  ``is_redeemed`` so duplicates do not cost a chain query each; the atomic ``enqueue`` still
  decides. Without an adapter the enqueue is the only Redis call (the worker checks
  redemption again before submitting anyway).
* It is blocking (Redis, signature checks): the listener runs it in a thread pool.
* Each VAA is one trace (``relayer.receive`` with ``relayer.validate`` and ``relayer.enqueue``
  under it; docs/observability.md): the W3C ``traceparent`` of the receipt is stored in the
  queued request, and the worker continues the same trace. With tracing off the spans are the
  API's no-op ones.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from chainloom import telemetry
from chainloom.relayer.errors import TablesRefusedError, TablesUnavailableError
from chainloom.relayer.model import RelayRequest
from chainloom.relayer.validation import Accepted, Rule, RuleCounters, Validator

if TYPE_CHECKING:
    from chainloom.relayer.adapters import ChainAdapter
    from chainloom.relayer.tables import RelayTables

_tracer = trace.get_tracer("chainloom.relayer.intake")


class Outcome(enum.Enum):
    """What became of one VAA at intake (its value is the word the REST body and counters use)."""

    QUEUED = "queued"
    """Accepted and now in Incoming."""
    KNOWN = "known"
    """Already in a table (or the Completed log); nothing new was queued."""
    REJECTED = "rejected"
    """A validation rule refused it."""
    MALFORMED = "malformed"
    """Not a VAA."""
    UNAVAILABLE = "unavailable"
    """Redis could not be reached; nothing was queued, try again."""


@dataclass(frozen=True, slots=True)
class IntakeResult:
    """The answer for one VAA."""

    outcome: Outcome
    """What became of it."""
    reason: str | None = None
    """Why it was refused or not queued (for KNOWN, REJECTED, MALFORMED, UNAVAILABLE)."""
    rule: Rule | None = None
    """The rule that decided, for rejections and duplicates."""
    digest: str | None = None
    """The VAA digest (``0x`` + 64 hex) once it parsed."""
    message_id: str | None = None
    """``chain/emitter/sequence`` once it parsed."""
    table: str | None = None
    """Where the request is now (QUEUED: incoming; KNOWN: the table that already holds it)."""


@dataclass(slots=True)
class IntakeCounters:
    """Outcomes by outcome word and by source (``spy`` / ``rest``); safe across threads."""

    by_status: dict[str, int] = field(default_factory=dict)
    """``{"queued": n, ...}``."""
    by_source: dict[str, int] = field(default_factory=dict)
    """``{"spy": n, "rest": m}``."""
    redeem_check_skipped: int = 0
    """Queued VAAs whose target chain has no adapter to ask (the worker still checks)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Guards the counters: intakes run in several threads."""

    def record(self, source: str, outcome: Outcome) -> None:
        """Count one outcome."""
        with self.lock:
            self.by_status[outcome.value] = self.by_status.get(outcome.value, 0) + 1
            self.by_source[source] = self.by_source.get(source, 0) + 1

    def skipped_redeem_check(self) -> None:
        """Count a VAA whose target chain had no adapter to ask."""
        with self.lock:
            self.redeem_check_skipped += 1

    def snapshot(self) -> dict[str, Any]:
        """A copy, for ``/v1/stats``."""
        with self.lock:
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
        with telemetry.start_span(
            _tracer, "relayer.receive", attributes={"chainloom.source": source}
        ) as span:
            try:
                result = self._decide(data)
            except (TablesUnavailableError, TablesRefusedError) as error:
                result = IntakeResult(Outcome.UNAVAILABLE, reason=f"redis unavailable: {error}")
            self.counters.record(source, result.outcome)
            if span.is_recording():
                span.set_attributes(_span_attributes(result))
        return result

    def _decide(self, data: bytes) -> IntakeResult:
        with telemetry.start_span(_tracer, "relayer.validate") as span:
            checked = self.validator.check(data)
            if span.is_recording() and not isinstance(checked, Accepted):
                span.set_attribute("chainloom.rule", checked.rule.value)
        if not isinstance(checked, Accepted):
            outcome = Outcome.MALFORMED if checked.rule is Rule.PARSES else Outcome.REJECTED
            vaa = checked.vaa
            return IntakeResult(
                outcome,
                reason=checked.reason,
                rule=checked.rule,
                digest=vaa.digest_hex if vaa is not None else None,
                message_id=vaa.message_id if vaa is not None else None,
            )
        vaa = checked.vaa
        digest, message_id = vaa.digest_hex, vaa.message_id
        counters = self.validator.counters
        trace.get_current_span().set_attribute("chainloom.target_chain", checked.target_chain)

        adapter = self.adapters.get(checked.target_chain)
        if adapter is not None:
            # A cheap read first, so the guardians' copies of a queued VAA cost no chain query.
            where = self.tables.locate(digest)
            if where is not None:
                counters.rejected(Rule.NOT_QUEUED)
                return IntakeResult(
                    Outcome.KNOWN,
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
                Outcome.REJECTED,
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
            traceparent=telemetry.current_traceparent(),
        )
        with telemetry.start_span(_tracer, "relayer.enqueue"):
            enqueued = self.tables.enqueue(request)
        if not enqueued.accepted:
            counters.rejected(Rule.NOT_QUEUED)
            table = enqueued.table.value if enqueued.table is not None else None
            return IntakeResult(
                Outcome.KNOWN,
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
        return IntakeResult(Outcome.QUEUED, digest=digest, message_id=message_id, table="incoming")


def _span_attributes(result: IntakeResult) -> dict[str, str]:
    """What a ``relayer.receive`` span says about its VAA (public facts only)."""
    attributes = {"chainloom.outcome": result.outcome.value}
    if result.message_id is not None:
        attributes["chainloom.message_id"] = result.message_id
    if result.digest is not None:
        attributes["chainloom.digest"] = result.digest
    if result.rule is not None:
        attributes["chainloom.rule"] = result.rule.value
    if result.table is not None:
        attributes["chainloom.table"] = result.table
    return attributes
