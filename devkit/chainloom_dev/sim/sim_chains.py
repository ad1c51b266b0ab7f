"""Simulated target chains for the relayer's workers, behind its ChainAdapter Protocol.

Why: a worker's guarantees (each transfer redeemed exactly once, retries, roll-backs, crashes
between submit and commit) must be proven against a chain that can fail on command, and the
tests, the bench and the demo cannot use a real one. Both simulations implement
:class:`chainloom.relayer.adapters.ChainAdapter`:

* :class:`InProcessAdapter` keeps its "chain" in memory and can fail, stall or roll back on
  command; one process only.
* :class:`RedisLedgerAdapter` keeps the simulated chain in a separate Redis key space
  (``chainloom:simchain:v1:<chain>:...``), so worker processes that are killed and restarted,
  and the test that audits them, all see the same chain. Its behaviour (which transfers always
  fail, fail once, or are rolled back once; how long finality takes) is a set of
  deterministic :class:`SimChainRules` stored next to it.

Both behave as a token bridge does: redeeming a transfer twice is refused (the second
submission raises :class:`SubmitError` and is counted as a duplicate attempt), so a test can
prove the relayer never even tried to submit twice.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from chainloom.relayer._redis import sync
from chainloom.relayer._redis import text as _text
from chainloom.relayer.errors import SubmitError, UnknownSubmissionError
from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet
from chainloom.wormhole import parse_vaa

if TYPE_CHECKING:
    from collections.abc import Callable

    import redis

    from chainloom.relayer.adapters import ChainAdapter

__all__ = [
    "InProcessAdapter",
    "RedisLedgerAdapter",
    "SimChainRules",
    "Submission",
    "simulated_adapters",
    "vaa_identity",
]


@functools.lru_cache(maxsize=4096)
def vaa_identity(vaa: bytes) -> tuple[str, int]:
    """(digest hex, sequence) of a signed VAA, via :mod:`chainloom.wormhole`.

    Cached: a worker asks ``is_redeemed`` and then ``submit`` about the same VAA.
    """
    parsed = parse_vaa(vaa)
    return parsed.digest_hex, parsed.sequence


@dataclass(frozen=True, slots=True)
class Submission:
    """One submission the simulated chain received."""

    submission_id: str
    """The simulated transaction id."""
    digest: str
    """Digest of the VAA it redeems."""
    wallet: str
    """Public address of the wallet that signed it."""
    submitted_at: float
    """Unix time it was received."""


# --------------------------------------------------------------------------------------------
# In memory


class InProcessAdapter:
    """A simulated chain in memory, for unit tests, the bench and single-process demos.

    Commands: :meth:`fail_next`, :meth:`fail_always`, :meth:`stall`, :meth:`roll_back`,
    :meth:`mark_redeemed` (another relayer scooped it), :meth:`hold_finality`.
    """

    def __init__(self, chain_id: int, *, confirmations: int = 0) -> None:
        self.chain_id = chain_id
        self.confirmations = confirmations
        """How many finality checks answer PENDING before a submission is FINAL."""
        self.submissions: list[Submission] = []
        """Every submission that was accepted, in order."""
        self.duplicate_attempts = 0
        """Submissions refused because the transfer was already redeemed."""
        self.failed_attempts = 0
        """Submissions failed on command."""
        self._lock = threading.Lock()
        self._redeemed: dict[str, str | None] = {}
        self._by_id: dict[str, Submission] = {}
        self._rolled_back: set[str] = set()
        self._checks: Counter[str] = Counter()
        self._fail_next: list[str] = []
        self._fail_always: dict[str, str] = {}
        self._stall_seconds = 0.0
        self._hold = False
        self._id_prefix = uuid.uuid4().hex[:16]
        self._ids = itertools.count(1)

    # commands ---------------------------------------------------------------------------
    def fail_next(self, count: int = 1, reason: str = "injected failure") -> None:
        """The next ``count`` submissions fail with ``reason``."""
        with self._lock:
            self._fail_next.extend([reason] * count)

    def fail_always(self, digest: str, reason: str = "injected permanent failure") -> None:
        """Every submission of the VAA with ``digest`` fails."""
        with self._lock:
            self._fail_always[digest] = reason

    def stall(self, seconds: float) -> None:
        """Every submission takes ``seconds`` longer (0 to stop stalling)."""
        self._stall_seconds = seconds

    def hold_finality(self, hold: bool = True) -> None:
        """While held, every finality check answers PENDING."""
        self._hold = hold

    def roll_back(self, submission_id: str) -> None:
        """Drop an accepted submission: the transfer is no longer redeemed."""
        with self._lock:
            submission = self._by_id.get(submission_id)
            if submission is None:
                raise UnknownSubmissionError(f"no submission {submission_id!r} on this chain")
            self._rolled_back.add(submission_id)
            if self._redeemed.get(submission.digest) == submission_id:
                del self._redeemed[submission.digest]

    def mark_redeemed(self, vaa: bytes) -> None:
        """Redeem the transfer outside this relayer (another relayer scooped it)."""
        digest, _ = vaa_identity(vaa)
        with self._lock:
            self._redeemed[digest] = None

    def submissions_of(self, digest: str) -> list[Submission]:
        """Accepted submissions of one VAA."""
        with self._lock:
            return [s for s in self.submissions if s.digest == digest]

    # ChainAdapter -------------------------------------------------------------------------
    def is_redeemed(self, vaa: bytes) -> bool:
        digest, _ = vaa_identity(vaa)
        with self._lock:
            return digest in self._redeemed

    def submit(self, vaa: bytes, wallet: Wallet) -> str:
        digest, _ = vaa_identity(vaa)
        if self._stall_seconds:
            time.sleep(self._stall_seconds)
        with self._lock:
            reason = self._fail_always.get(digest)
            if reason is None and self._fail_next:
                reason = self._fail_next.pop(0)
            if reason is not None:
                self.failed_attempts += 1
                raise SubmitError(reason)
            if digest in self._redeemed:
                self.duplicate_attempts += 1
                raise SubmitError(f"transfer {digest} is already redeemed")
            submission = Submission(
                submission_id=f"0x{self._id_prefix}{next(self._ids):016x}",
                digest=digest,
                wallet=wallet.address,
                submitted_at=time.time(),
            )
            self.submissions.append(submission)
            self._by_id[submission.submission_id] = submission
            self._redeemed[digest] = submission.submission_id
            return submission.submission_id

    def finality(self, submission_id: str) -> Finality:
        with self._lock:
            if submission_id not in self._by_id:
                raise UnknownSubmissionError(f"no submission {submission_id!r} on this chain")
            if submission_id in self._rolled_back:
                return Finality.ROLLED_BACK
            if self._hold:
                return Finality.PENDING
            self._checks[submission_id] += 1
            if self._checks[submission_id] <= self.confirmations:
                return Finality.PENDING
            return Finality.FINAL


# --------------------------------------------------------------------------------------------
# In Redis, shared by processes


@dataclass(frozen=True, slots=True)
class SimChainRules:
    """Deterministic behaviour of a simulated chain in Redis (stored next to it)."""

    fail_modulo: int = 0
    """Every submission of a transfer whose sequence % fail_modulo == 0 fails (0: none)."""
    transient_fail_percent: int = 0
    """About this percentage of transfers (chosen by digest) fail their first attempt."""
    rollback_modulo: int = 0
    """The first submission of a transfer whose sequence % rollback_modulo == 1 is rolled
    back at its first finality check (0: none)."""
    confirm_after: float = 0.0
    """Seconds after submission before finality answers FINAL."""
    stall_seconds: float = 0.0
    """Extra seconds every submission takes."""
    pre_redeemed: tuple[str, ...] = field(default=())
    """Digests that another relayer redeemed before this one saw them (applied by ``install``)."""

    def always_fails(self, sequence: int) -> bool:
        """Whether the injected-failure rule makes every submission of ``sequence`` fail."""
        return self.fail_modulo > 0 and sequence % self.fail_modulo == 0

    def fails_once(self, digest: str) -> bool:
        """Whether the transfer with ``digest`` fails its first attempt."""
        return int(digest[2:10], 16) % 100 < self.transient_fail_percent

    def rolls_back_first(self, sequence: int) -> bool:
        """Whether the first submission of ``sequence`` is rolled back."""
        return self.rollback_modulo > 0 and sequence % self.rollback_modulo == 1


_SUBMIT_LUA = """
-- KEYS: redeemed hash, submissions hash, per-digest submission count hash, duplicates counter
-- ARGV: digest, submission id, submission json
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('INCR', KEYS[4])
  return 0
end
local n = redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return n
"""

_ROLLBACK_LUA = """
-- KEYS: redeemed hash, rolled-back set ; ARGV: digest, submission id
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
redis.call('SADD', KEYS[2], ARGV[2])
return 1
"""


class RedisLedgerAdapter:
    """A simulated chain stored in Redis, shared by every process that opens it.

    Key space (separate from the relay tables): ``<prefix>:<chain>:redeemed`` (digest ->
    submission id), ``:submissions`` (id -> JSON), ``:count`` (digest -> accepted submissions),
    ``:attempts`` (digest -> submit calls), ``:rolled_back`` (ids), ``:duplicates`` (refused
    second redemptions), ``:rules`` (the :class:`SimChainRules` JSON).
    """

    def __init__(
        self, client: redis.Redis, chain_id: int, *, prefix: str = "chainloom:simchain:v1"
    ) -> None:
        self.chain_id = chain_id
        self._client = client
        self._base = f"{prefix}:{chain_id}"
        self._submit = client.register_script(_SUBMIT_LUA)
        self._rollback = client.register_script(_ROLLBACK_LUA)
        raw = sync(client.get(self.key("rules")))
        self.rules = _rules_from_json(raw) if raw else SimChainRules()

    def key(self, name: str) -> str:
        """The full Redis key of one part of the simulated chain."""
        return f"{self._base}:{name}"

    @staticmethod
    def install(
        client: redis.Redis,
        chain_id: int,
        rules: SimChainRules,
        *,
        prefix: str = "chainloom:simchain:v1",
    ) -> None:
        """Store the rules (and pre-redeemed transfers) for adapters opened afterwards."""
        base = f"{prefix}:{chain_id}"
        client.set(f"{base}:rules", json.dumps(asdict(rules)))
        for digest in rules.pre_redeemed:
            client.hset(f"{base}:redeemed", digest, "scooped-by-another-relayer")

    # audit helpers ----------------------------------------------------------------------
    def submissions(self) -> dict[str, Submission]:
        """Every accepted submission by id."""
        out: dict[str, Submission] = {}
        for key, value in sync(self._client.hgetall(self.key("submissions"))).items():
            data = json.loads(value)
            out[_text(key)] = Submission(
                submission_id=_text(key),
                digest=data["digest"],
                wallet=data["wallet"],
                submitted_at=data["at"],
            )
        return out

    def submission_counts(self) -> dict[str, int]:
        """Accepted submissions per digest."""
        raw = sync(self._client.hgetall(self.key("count")))
        return {_text(k): int(v) for k, v in raw.items()}

    def rolled_back(self) -> set[str]:
        """Ids of rolled-back submissions."""
        return {_text(m) for m in sync(self._client.smembers(self.key("rolled_back")))}

    def redeemed(self) -> dict[str, str]:
        """Digest -> the submission id that redeemed it."""
        raw = sync(self._client.hgetall(self.key("redeemed")))
        return {_text(k): _text(v) for k, v in raw.items()}

    def duplicate_attempts(self) -> int:
        """Submissions refused because the transfer was already redeemed."""
        return int(sync(self._client.get(self.key("duplicates"))) or 0)

    # ChainAdapter -------------------------------------------------------------------------
    def is_redeemed(self, vaa: bytes) -> bool:
        digest, _ = vaa_identity(vaa)
        return bool(sync(self._client.hexists(self.key("redeemed"), digest)))

    def submit(self, vaa: bytes, wallet: Wallet) -> str:
        digest, sequence = vaa_identity(vaa)
        if self.rules.stall_seconds:
            time.sleep(self.rules.stall_seconds)
        attempt = int(sync(self._client.hincrby(self.key("attempts"), digest, 1)))
        if self.rules.always_fails(sequence):
            raise SubmitError(f"injected failure: sequence {sequence} always fails")
        if attempt == 1 and self.rules.fails_once(digest):
            raise SubmitError("injected transient failure on the first attempt")
        submission_id = "0x" + uuid.uuid4().hex
        record = json.dumps(
            {"digest": digest, "wallet": wallet.address, "at": time.time(), "seq": sequence}
        )
        number = self._submit(
            keys=[
                self.key("redeemed"),
                self.key("submissions"),
                self.key("count"),
                self.key("duplicates"),
            ],
            args=[digest, submission_id, record],
        )
        if int(number) == 0:
            raise SubmitError(f"transfer {digest} is already redeemed")
        return submission_id

    def finality(self, submission_id: str) -> Finality:
        if sync(self._client.sismember(self.key("rolled_back"), submission_id)):
            return Finality.ROLLED_BACK
        raw = sync(self._client.hget(self.key("submissions"), submission_id))
        if raw is None:
            raise UnknownSubmissionError(f"no submission {submission_id!r} on this chain")
        data = json.loads(raw)
        digest = data["digest"]
        if self.rules.rolls_back_first(int(data["seq"])):
            first = sync(self._client.hget(self.key("first"), digest))
            if first is None:
                sync(self._client.hsetnx(self.key("first"), digest, submission_id))
                first = sync(self._client.hget(self.key("first"), digest))
            if first is not None and _text(first) == submission_id:
                self._rollback(
                    keys=[self.key("redeemed"), self.key("rolled_back")],
                    args=[digest, submission_id],
                )
                return Finality.ROLLED_BACK
        if time.time() - float(data["at"]) < self.rules.confirm_after:
            return Finality.PENDING
        return Finality.FINAL


def _rules_from_json(raw: bytes | str) -> SimChainRules:
    data = json.loads(raw)
    data["pre_redeemed"] = tuple(data.get("pre_redeemed", ()))
    return SimChainRules(**data)


def simulated_adapters(name: str) -> Callable[[redis.Redis, int], ChainAdapter]:
    """The factory of one kind of simulated chain, by the name the settings use.

    ``inprocess``: an in-memory chain per worker process; ``redis-sim``: a chain kept in the
    relay tables' Redis, shared by every process (what the listener's redemption check and the
    multi-process tests need).
    """
    if name == "inprocess":
        return lambda _client, chain: InProcessAdapter(chain)
    if name == "redis-sim":
        return RedisLedgerAdapter
    raise ValueError(f"unknown simulated chain {name!r} (inprocess or redis-sim)")
