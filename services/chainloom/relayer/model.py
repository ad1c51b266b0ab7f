"""The relay request and the rules that move it between tables, as pure data and functions.

Why pure: the worker's decisions (retry or give up, how long to back off, what a rollback does
to a request) are where the reference relayer went wrong, so they live here where a unit test
can pin them down without Redis or a chain. The Redis adapter (:mod:`chainloom.relayer.tables`)
only stores what these functions return, and the worker (:mod:`chainloom.relayer.worker`) only
wires the two together.

A request is stored in Redis as the small JSON of :meth:`RelayRequest.state_json` plus its
VAA bytes next to it (:meth:`RelayRequest.to_json` is the complete form). It never holds a
secret: the wallet is named by its public address only (``submitted_by``).
"""

from __future__ import annotations

import base64
import binascii
import enum
import math
import random
import re
from dataclasses import dataclass, replace
from typing import Any

import orjson

from chainloom.backoff import Backoff
from chainloom.relayer.errors import RequestFormatError

#: Version of the stored JSON form; bumped (with a new key prefix) if the form ever changes.
REQUEST_FORMAT_VERSION = 1

_DIGEST = re.compile(r"^0x[0-9a-f]{64}$")
_MAX_U64 = 2**64 - 1


class Table(enum.Enum):
    """Where a request is. Every request is in exactly one place (or nowhere once purged)."""

    INCOMING = "incoming"
    """Queued by the listener (or returned after a failure, rollback or crash); not in work."""
    IN_WORK = "in_work"
    """Claimed by one worker (per target chain + wallet) that is deciding or submitting it."""
    PENDING_CONFIRMATION = "pending_confirmation"
    """Submitted on chain; waiting for the chain adapter to report finality or a rollback."""
    FAILED = "failed"
    """Gave up after ``max_retries`` failures; kept until an operator retries or drops it."""
    COMPLETED = "completed"
    """The audit log of finished requests (confirmed or already redeemed), bounded in size."""


class Finality(enum.Enum):
    """What a chain says about a submission."""

    PENDING = "pending"
    """Not final yet: ask again later."""
    FINAL = "final"
    """Final: the transfer is redeemed for good."""
    ROLLED_BACK = "rolled_back"
    """The submission was dropped or reorganised away: the transfer must be submitted again."""


class Outcome(enum.Enum):
    """How a request left the queue, as recorded in the Completed log."""

    CONFIRMED = "confirmed"
    """This relayer's submission reached finality."""
    ALREADY_REDEEMED = "already_redeemed"
    """The transfer was redeemed before this relayer submitted it (someone scooped it)."""
    DROPPED = "dropped"
    """An operator dropped it from Failed."""


def validate_digest(digest: str) -> str:
    """Return ``digest`` if it is ``0x`` + 64 lower-case hex characters, else raise."""
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise RequestFormatError(
            f"digest must be '0x' followed by 64 lower-case hex characters, got {digest!r:.80}"
        )
    return digest


@dataclass(frozen=True, slots=True)
class RelayRequest:
    """One signed VAA to redeem on its target chain, and its progress through the tables."""

    digest: str
    """The VAA digest, ``0x`` + 64 lower-case hex: the identity used for deduplication."""
    vaa: bytes
    """The signed VAA exactly as received."""
    target_chain: int
    """Wormhole chain id the transfer is redeemed on (selects the workers that may take it)."""
    emitter_chain: int
    """Wormhole chain id of the emitter (for operators and metrics)."""
    sequence: int
    """The emitter's sequence number (for operators and metrics)."""
    retries: int = 0
    """How many attempts failed so far."""
    next_attempt_at: float = 0.0
    """Unix time before which no worker may claim it again (0: immediately)."""
    last_error: str | None = None
    """The error of the last failed attempt, or of the rollback that returned it."""
    enqueued_at: float = 0.0
    """Unix time it first entered Incoming."""
    submission_id: str | None = None
    """The chain's id of the submission awaiting finality (only in Pending Confirmation)."""
    submitted_by: str | None = None
    """The worker (``<chain>:<wallet address>``) that made that submission; never a key."""
    rollbacks: int = 0
    """How many of its submissions were rolled back."""
    traceparent: str | None = None
    """W3C trace context of the intake that queued it (None when not traced): the worker
    continues that trace, so one VAA is one trace across processes."""

    def __post_init__(self) -> None:
        validate_digest(self.digest)
        for name in ("target_chain", "emitter_chain", "sequence", "retries", "rollbacks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_U64:
                raise RequestFormatError(
                    f"{name} must be a non-negative integer below 2^64, got {value!r}"
                )
        for name in ("next_attempt_at", "enqueued_at"):
            if not math.isfinite(getattr(self, name)):
                raise RequestFormatError(f"{name} must be a finite time, got {getattr(self, name)}")
        if type(self.vaa) is not bytes or not self.vaa:
            raise RequestFormatError("vaa must be non-empty bytes")

    @property
    def ready_at(self) -> float:
        """The Incoming score: when it may be claimed (enqueue time for a fresh request)."""
        return self.next_attempt_at if self.next_attempt_at > 0 else self.enqueued_at

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "v": REQUEST_FORMAT_VERSION,
            "digest": self.digest,
            "target_chain": self.target_chain,
            "emitter_chain": self.emitter_chain,
            "sequence": self.sequence,
            "retries": self.retries,
            "next_attempt_at": self.next_attempt_at,
            "last_error": self.last_error,
            "enqueued_at": self.enqueued_at,
            "submission_id": self.submission_id,
            "submitted_by": self.submitted_by,
            "rollbacks": self.rollbacks,
        }
        if self.traceparent is not None:  # untraced requests stay as small as before
            state["traceparent"] = self.traceparent
        return state

    def to_json(self) -> str:
        """The complete request as compact JSON (VAA in base64). Holds no secret."""
        data = self._state()
        data["vaa"] = base64.b64encode(self.vaa).decode("ascii")
        return orjson.dumps(data).decode()

    def state_json(self) -> str:
        """Everything but the VAA, as compact JSON: what the tables rewrite on every move.

        The tables keep the (immutable, ~1 KB) VAA in a hash of its own, so moves carry only
        this small record.
        """
        return orjson.dumps(self._state()).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> RelayRequest:
        """Parse :meth:`to_json` output; raises :class:`RequestFormatError` naming the field."""
        data = _object(text)
        try:
            vaa = base64.b64decode(_field(data, "vaa", str), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise RequestFormatError(f"field 'vaa' is not base64: {exc}") from exc
        return cls._from_state(data, vaa)

    @classmethod
    def from_state(cls, state: str | bytes, vaa: bytes) -> RelayRequest:
        """Rebuild a request from :meth:`state_json` output and its VAA."""
        return cls._from_state(_object(state), vaa)

    @classmethod
    def _from_state(cls, data: dict[str, Any], vaa: bytes) -> RelayRequest:
        # Integers and the digest are checked by __post_init__, which names the field.
        try:
            return cls(
                digest=data["digest"],
                vaa=vaa,
                target_chain=data["target_chain"],
                emitter_chain=data["emitter_chain"],
                sequence=data["sequence"],
                retries=data["retries"],
                next_attempt_at=_time(data, "next_attempt_at"),
                last_error=_optional_text(data, "last_error"),
                enqueued_at=_time(data, "enqueued_at"),
                submission_id=_optional_text(data, "submission_id"),
                submitted_by=_optional_text(data, "submitted_by"),
                rollbacks=data["rollbacks"],
                # Absent in requests stored before traces were carried.
                traceparent=_optional_text(data, "traceparent") if "traceparent" in data else None,
            )
        except KeyError as missing:
            raise RequestFormatError(f"stored request lacks field {missing}") from None


def _object(text: str | bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RequestFormatError(f"stored request is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RequestFormatError("stored request is not a JSON object")
    if data.get("v") != REQUEST_FORMAT_VERSION:
        raise RequestFormatError(
            f"stored request has format version {data.get('v')!r}, "
            f"expected {REQUEST_FORMAT_VERSION}"
        )
    return data


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in data:
        raise RequestFormatError(f"stored request lacks field {name!r}")
    value = data[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RequestFormatError(f"field {name!r} has the wrong type: {value!r:.80}")
    return value


def _time(data: dict[str, Any], name: str) -> float:
    value = data[name]
    if type(value) is not float and type(value) is not int:
        raise RequestFormatError(f"field {name!r} has the wrong type: {value!r:.80}")
    return float(value)


def _optional_text(data: dict[str, Any], name: str) -> str | None:
    value = data[name]
    if value is not None and type(value) is not str:
        raise RequestFormatError(f"field {name!r} must be a string or null: {value!r:.80}")
    return value


# --------------------------------------------------------------------------------------------
# Retry policy


DEFAULT_RETRY_BACKOFF = Backoff(initial=1.0, maximum=3600.0, jitter=0.5)
"""1 s doubling up to an hour, half of each wait random so that failed requests do not retry
in lockstep (the defaults of :class:`chainloom.settings.BackoffSettings`)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How failures are retried: exponential backoff with jitter, then Failed."""

    max_retries: int = 10
    """Failures allowed before the request goes to Failed (the reference's MAX_RETRIES)."""
    schedule: Backoff = DEFAULT_RETRY_BACKOFF
    """The waits between attempts (``worker.backoff`` in the settings)."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")


@dataclass(frozen=True, slots=True)
class FailureDecision:
    """What to do with a request whose attempt failed."""

    destination: Table
    """:attr:`Table.INCOMING` (retry later) or :attr:`Table.FAILED` (give up)."""
    request: RelayRequest
    """The request as it must be stored there."""


def after_failure(
    request: RelayRequest,
    error: str,
    *,
    now: float,
    policy: RetryPolicy,
    rng: random.Random,
    for_good: bool = False,
) -> FailureDecision:
    """A failed attempt: one more retry with backoff, or Failed once past ``max_retries`` (at
    once when the chain refused it ``for_good``)."""
    error = _storable(error)
    retries = request.retries + 1
    if for_good or retries > policy.max_retries:
        failed = replace(
            request, retries=retries, last_error=error, next_attempt_at=0.0, submission_id=None
        )
        return FailureDecision(Table.FAILED, failed)
    delay = policy.schedule.after_failures(retries, rng)
    retried = replace(
        request,
        retries=retries,
        last_error=error,
        next_attempt_at=now + delay,
        submission_id=None,
    )
    return FailureDecision(Table.INCOMING, retried)


def _storable(text: str) -> str:
    """``text`` with anything UTF-8 cannot carry (lone surrogates) replaced by ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8")


def after_rollback(request: RelayRequest, *, now: float) -> RelayRequest:
    """A rolled-back submission: back to Incoming at once (not a failure of this relayer)."""
    return replace(
        request,
        rollbacks=request.rollbacks + 1,
        last_error=f"submission {request.submission_id} was rolled back",
        submission_id=None,
        submitted_by=None,
        next_attempt_at=now,
    )


def after_submission(request: RelayRequest, submission_id: str, worker_id: str) -> RelayRequest:
    """A successful submission: the request as stored in Pending Confirmation."""
    return replace(request, submission_id=submission_id, submitted_by=worker_id)


def for_retry_from_failed(request: RelayRequest, *, now: float) -> RelayRequest:
    """An operator's retry of a Failed request: a fresh retry budget, claimable at once."""
    return replace(request, retries=0, next_attempt_at=now, submission_id=None)
