"""The relay tables in Redis: Incoming, In-Work (per worker), Pending Confirmation, Failed,
and a bounded Completed log, where every move is one atomic Lua step.

Why Lua and a location index: the reference relayer claimed work with ``DEL`` then ``SET``
(a crash between them lost the request), deduplicated with a read before a write (two guardians'
copies could both get in), and left in-work items stuck after a crash. Here every request has
exactly one location, recorded in the ``loc`` hash, and every script first checks that the
request is where the caller believes it is, then moves it, in a single script that Redis runs
atomically. A crash of the caller before or after the script changes nothing or everything;
never half. See ``docs/relayer.md`` for the key layout and the crash analysis.

Keys (``P`` is ``{<prefix>}``; the braces keep every key in one cluster slot, and the prefix
carries a format version so a future layout can live next to this one)::

    P:req                   hash    digest -> request state JSON (every request not yet purged)
    P:vaa                   hash    digest -> the signed VAA (immutable; purged with the request)
    P:loc                   hash    digest -> 'I' | 'W:<worker>' | 'P' | 'F'
    P:incoming:<chain>      zset    digest -> time it may be claimed (enqueue time or backoff)
    P:inwork:<worker>       zset    digest -> time claimed
    P:pending:<chain>       zset    digest -> time of the next finality check
    P:failed:<chain>        zset    digest -> time it failed for good
    P:completed:<chain>     zset    digest -> time completed (bounded: oldest trimmed)
    P:completed:<chain>:log hash    digest -> {outcome, completed_at, worker, request: state}
    P:chains                set     target chains seen
    P:workers               hash    worker id -> chain (workers that may hold In-Work items)
    P:lease:<worker>        string  lease token of the live instance, with a TTL

One pooled client per process: the caller passes its ``redis.Redis``; nothing here connects.
Every failure of Redis itself (refused, timed out, reset, an error reply) leaves this module as
:class:`~chainloom.relayer.errors.TablesUnavailableError` naming the server and the cause, so
callers never need the client library's own errors.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import orjson
import redis

from chainloom.redis_client import first_contact_refusal, refusal
from chainloom.relayer._redis import sync
from chainloom.relayer._redis import text as _text
from chainloom.relayer.errors import (
    LeaseLostError,
    TableError,
    TablesRefusedError,
    TablesUnavailableError,
)
from chainloom.relayer.model import (
    Outcome,
    RelayRequest,
    Table,
    for_retry_from_failed,
    validate_digest,
)

if TYPE_CHECKING:
    from redis.commands.core import Script

__all__ = ["DEFAULT_PREFIX", "EnqueueResult", "Move", "RelayTables", "Table"]

DEFAULT_PREFIX = "chainloom:relay:v1"
DEFAULT_COMPLETED_RETENTION = 100_000
MAX_PER_CALL = 1000
"""Most requests or moves in one script call, so that no call blocks Redis for long."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """The answer of :meth:`RelayTables.enqueue`."""

    accepted: bool
    """True when the request was queued in Incoming by this call."""
    table: Table | None
    """Where the request already was when it was not accepted (None when accepted)."""


@dataclass(frozen=True, slots=True)
class Move:
    """One conditional move of a request out of In-Work or Pending Confirmation."""

    request: RelayRequest
    """The request as it must be stored at the destination."""
    source: Table
    """Where the caller believes it is: IN_WORK (of ``worker_id``), PENDING_CONFIRMATION or
    FAILED. The move happens only if it is really there."""
    destination: Table
    """INCOMING, PENDING_CONFIRMATION, FAILED or COMPLETED (purge + Completed log)."""
    worker_id: str | None = None
    """The worker whose In-Work holds it (when ``source`` is IN_WORK)."""
    score: float = 0.0
    """Destination score: claim time (Incoming), next check (Pending), failure time (Failed)."""
    outcome: Outcome | None = None
    """Why it completed (when ``destination`` is COMPLETED)."""


def _load(name: str) -> str:
    return resources.files("chainloom.relayer").joinpath("lua", f"{name}.lua").read_text()


_LOCATION_TABLES = {"I": Table.INCOMING, "P": Table.PENDING_CONFIRMATION, "F": Table.FAILED}


def server_address(client: redis.Redis) -> str:
    """Where ``client`` connects (``host:port/db`` or the socket path), never the password."""
    settings = client.get_connection_kwargs()
    database = settings.get("db", 0)
    if settings.get("path"):
        return f"unix:{settings['path']}/{database}"
    return f"{settings.get('host', 'localhost')}:{settings.get('port', 6379)}/{database}"


def _translating_redis_errors(
    method: Callable[Concatenate[RelayTables, _P], _R],
) -> Callable[Concatenate[RelayTables, _P], _R]:
    """Raise :class:`TablesRefusedError` when Redis refused us (credentials, TLS) and
    :class:`TablesUnavailableError` (address and cause) for any other error of Redis."""

    @functools.wraps(method)
    def translated(tables: RelayTables, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(tables, *args, **kwargs)
        except redis.RedisError as error:
            refused = refusal(error)
            if refused is None:
                cause = str(error) or type(error).__name__
                raise TablesUnavailableError(
                    f"Redis at {tables.address} failed: {cause}"
                ) from error
        # Raised outside the handler, so the refusal is not taken for the client's outage.
        raise TablesRefusedError(f"Redis at {tables.address} refused the connection: {refused}")

    return translated


def table_of_location(code: str) -> Table:
    """The :class:`Table` a location code names."""
    if code.startswith("W:"):
        return Table.IN_WORK
    if code == "C":
        return Table.COMPLETED
    try:
        return _LOCATION_TABLES[code]
    except KeyError:
        raise TableError(f"unknown location code {code!r} in the loc hash") from None


class RelayTables:
    """The Redis adapter of the relay tables (see the module docstring for the layout)."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = DEFAULT_PREFIX,
        *,
        completed_retention: int = DEFAULT_COMPLETED_RETENTION,
    ) -> None:
        if completed_retention < 1:
            raise ValueError("completed_retention must be at least 1")
        self.client = client
        self.prefix = prefix
        self.completed_retention = completed_retention
        self.address = server_address(client)
        """Where the client connects, for messages (``host:port/db``; no password)."""
        self.tls = issubclass(client.connection_pool.connection_class, redis.SSLConnection)
        """Whether the client speaks TLS to Redis (a ``rediss://`` URL)."""
        self._p = "{" + prefix + "}"
        self._scripts: dict[str, Script] = {
            name: client.register_script(_load(name))
            for name in ("enqueue", "claim", "apply", "due_pending", "reap", "lease")
        }

    # keys ---------------------------------------------------------------------------------
    def key(self, *parts: object) -> str:
        """The full key of one structure, e.g. ``key("incoming", 2)``."""
        return ":".join([self._p, *(str(p) for p in parts)])

    def _zset(self, table: Table, chain: int, worker_id: str | None = None) -> str:
        if table is Table.INCOMING:
            return self.key("incoming", chain)
        if table is Table.IN_WORK:
            if worker_id is None:
                raise TableError("a move out of In-Work needs the worker id")
            return self.key("inwork", worker_id)
        if table is Table.PENDING_CONFIRMATION:
            return self.key("pending", chain)
        if table is Table.FAILED:
            return self.key("failed", chain)
        return self.key("completed", chain)

    @staticmethod
    def _code(table: Table, worker_id: str | None = None) -> str:
        if table is Table.IN_WORK:
            return f"W:{worker_id}"
        if table is Table.INCOMING:
            return "I"
        if table is Table.PENDING_CONFIRMATION:
            return "P"
        if table is Table.FAILED:
            return "F"
        raise TableError(f"{table.value} has no location code")

    def ping(self) -> None:
        """Check that Redis answers: :class:`TablesRefusedError` when it refused us (the
        credentials, a certificate, a handshake in the wrong protocol),
        :class:`TablesUnavailableError` when it does not answer."""
        try:
            self.client.ping()
            return
        except redis.RedisError as error:
            refused = first_contact_refusal(error, self.tls)
            if refused is None:
                cause = str(error) or type(error).__name__
                raise TablesUnavailableError(f"Redis at {self.address} failed: {cause}") from error
        raise TablesRefusedError(f"Redis at {self.address} refused the connection: {refused}")

    # enqueue / locate / read ----------------------------------------------------------------
    @staticmethod
    def _enqueue_result(raw: bytes | str) -> EnqueueResult:
        if not raw:  # b"" or ""
            return EnqueueResult(accepted=True, table=None)
        return EnqueueResult(accepted=False, table=table_of_location(_text(raw)))

    @_translating_redis_errors
    def enqueue(self, request: RelayRequest) -> EnqueueResult:
        """Queue ``request`` in Incoming unless its digest is in any table or the Completed log.

        The check and the insert are one Lua step, so 19 copies of one VAA from 19 guardians,
        arriving at once through several listeners, make exactly one request.
        """
        return self.enqueue_many([request])[0]

    @_translating_redis_errors
    def enqueue_many(self, requests: Sequence[RelayRequest]) -> list[EnqueueResult]:
        """:meth:`enqueue` for many requests: one script call per 1,000 requests (each request
        decided on its own), all calls in one pipeline."""
        pipe = self.client.pipeline(transaction=False)
        base = [self.key("req"), self.key("loc"), self.key("chains"), self.key("vaa")]
        for first in range(0, len(requests), MAX_PER_CALL):
            keys: list[Any] = list(base)
            args: list[Any] = []
            for request in requests[first : first + MAX_PER_CALL]:
                chain = request.target_chain
                keys += [self.key("completed", chain), self.key("incoming", chain)]
                args += [
                    request.digest,
                    request.state_json(),
                    repr(request.ready_at),
                    chain,
                    request.vaa,
                ]
            self._scripts["enqueue"](keys=keys, args=args, client=pipe)
        return [self._enqueue_result(code) for raw in pipe.execute() for code in raw]

    @_translating_redis_errors
    def locate(self, digest: str) -> Table | None:
        """Where the request with ``digest`` is, COMPLETED if only in the log, None if unknown."""
        validate_digest(digest)
        raw = sync(self.client.hget(self.key("loc"), digest))
        if raw is not None:
            return table_of_location(_text(raw))
        for chain in self.chains():
            if sync(self.client.zscore(self.key("completed", chain), digest)) is not None:
                return Table.COMPLETED
        return None

    @_translating_redis_errors
    def get(self, digest: str) -> RelayRequest | None:
        """The stored request (None once purged or unknown)."""
        validate_digest(digest)
        return self._read([digest])[0]

    def _read(self, digests: Sequence[bytes | str]) -> list[RelayRequest | None]:
        if not digests:
            return []
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(self.key("req"), list(digests))
        pipe.hmget(self.key("vaa"), list(digests))
        states, vaas = pipe.execute()
        return [
            RelayRequest.from_state(state, vaa) if state is not None and vaa is not None else None
            for state, vaa in zip(states, vaas, strict=True)
        ]

    @staticmethod
    def _pairs(raw: Sequence[bytes]) -> list[RelayRequest]:
        """Requests from a script's flat (state, VAA, state, VAA, ...) reply."""
        return [
            RelayRequest.from_state(state, vaa)
            for state, vaa in zip(raw[::2], raw[1::2], strict=True)
            if state is not None and vaa is not None
        ]

    @_translating_redis_errors
    def chains(self) -> list[int]:
        """Target chains that ever had a request, ascending."""
        return sorted(int(c) for c in sync(self.client.smembers(self.key("chains"))))

    @_translating_redis_errors
    def workers(self) -> dict[str, int]:
        """Registered workers (id -> chain): live ones and dead ones not yet reaped."""
        raw = sync(self.client.hgetall(self.key("workers")))
        return {_text(k): int(v) for k, v in raw.items()}

    @_translating_redis_errors
    def depths(self) -> dict[Table, dict[int, int]]:
        """Number of requests per table and target chain (COMPLETED: entries in the log)."""
        chains = self.chains()
        workers = self.workers()
        pipe = self.client.pipeline(transaction=False)
        plan: list[tuple[Table, int]] = []
        for chain in chains:
            for table in (
                Table.INCOMING,
                Table.PENDING_CONFIRMATION,
                Table.FAILED,
                Table.COMPLETED,
            ):
                pipe.zcard(self._zset(table, chain))
                plan.append((table, chain))
        for worker_id, chain in workers.items():
            pipe.zcard(self.key("inwork", worker_id))
            plan.append((Table.IN_WORK, chain))
        out: dict[Table, dict[int, int]] = {t: dict.fromkeys(chains, 0) for t in Table}
        for (table, chain), count in zip(plan, pipe.execute(), strict=True):
            out[table][chain] = out[table].get(chain, 0) + int(count)
        return out

    # leases -------------------------------------------------------------------------------
    def _lease(self, worker_id: str, token: str, ttl: float, action: str, chain: int) -> bool:
        result = self._scripts["lease"](
            keys=[self.key("lease", worker_id), self.key("workers")],
            args=[token, max(1, int(ttl * 1000)), action, worker_id, chain],
        )
        return bool(int(result))

    @_translating_redis_errors
    def acquire_lease(self, worker_id: str, chain: int, token: str, ttl: float) -> bool:
        """Take the worker's lease (False while another instance, live or dead, holds it)."""
        return self._lease(worker_id, token, ttl, "acquire", chain)

    @_translating_redis_errors
    def renew_lease(self, worker_id: str, chain: int, token: str, ttl: float) -> bool:
        """Extend our lease; False when it expired or was taken over (the worker must stop)."""
        return self._lease(worker_id, token, ttl, "renew", chain)

    @_translating_redis_errors
    def release_lease(self, worker_id: str, chain: int, token: str) -> bool:
        """Give up our lease on a clean stop."""
        return self._lease(worker_id, token, 1.0, "release", chain)

    # worker steps -------------------------------------------------------------------------
    @_translating_redis_errors
    def claim(
        self,
        worker_id: str,
        chain: int,
        token: str,
        *,
        limit: int,
        lease_ttl: float,
        now: float | None = None,
    ) -> list[RelayRequest]:
        """Move up to ``limit`` due requests of ``chain`` from Incoming into our In-Work.

        Raises :class:`LeaseLostError` (and claims nothing) when our lease is gone.
        """
        moment = time.time() if now is None else now
        try:
            raw = self._scripts["claim"](
                keys=[
                    self.key("lease", worker_id),
                    self.key("incoming", chain),
                    self.key("inwork", worker_id),
                    self.key("loc"),
                    self.key("req"),
                    self.key("vaa"),
                ],
                args=[
                    token,
                    repr(moment),
                    min(limit, MAX_PER_CALL),
                    f"W:{worker_id}",
                    max(1, int(lease_ttl * 1000)),
                ],
            )
        except redis.ResponseError as exc:
            if "LEASE_LOST" in str(exc):
                raise LeaseLostError(
                    f"worker {worker_id} lost its lease; it must stop and let the reaper act"
                ) from None
            raise
        return self._pairs(raw)

    @_translating_redis_errors
    def in_work(self, worker_id: str) -> list[RelayRequest]:
        """The requests in the In-Work table of ``worker_id`` (oldest claim first)."""
        digests = sync(self.client.zrange(self.key("inwork", worker_id), 0, -1))
        if not digests:
            return []
        return [r for r in self._read(digests) if r is not None]

    @_translating_redis_errors
    def due_pending(
        self, chain: int, *, limit: int, recheck_in: float, now: float | None = None
    ) -> list[RelayRequest]:
        """Pending Confirmation requests of ``chain`` due a finality check (their next check
        is pushed ``recheck_in`` seconds ahead, so workers do not check them in parallel)."""
        moment = time.time() if now is None else now
        raw = self._scripts["due_pending"](
            keys=[self.key("pending", chain), self.key("req"), self.key("vaa")],
            args=[repr(moment), min(limit, MAX_PER_CALL), repr(moment + recheck_in)],
        )
        return self._pairs(raw)

    def _move_parts(self, move: Move, now: float) -> tuple[list[str], list[Any]]:
        request, chain = move.request, move.request.target_chain
        source = self._zset(move.source, chain, move.worker_id)
        expected = self._code(move.source, move.worker_id)
        if move.destination is Table.IN_WORK:
            raise TableError("requests enter In-Work only by claim()")
        if move.destination is Table.COMPLETED:
            outcome = move.outcome or Outcome.CONFIRMED
            record = {
                "outcome": outcome.value,
                "completed_at": now,
                "worker": move.worker_id or request.submitted_by,
            }
            # The script appends the stored request state and the closing brace.
            entry = orjson.dumps(record)[:-1] + b',"request":'
            keys = [source, self.key("completed", chain), self.key("completed", chain, "log")]
            return keys, ["C", request.digest, expected, "", "0", entry]
        target = self._zset(move.destination, chain)
        code = self._code(move.destination)
        state = request.state_json()
        return [source, target, target], [
            "M",
            request.digest,
            expected,
            code,
            repr(move.score),
            state,
        ]

    @_translating_redis_errors
    def apply(self, moves: Iterable[Move], *, now: float | None = None) -> list[bool]:
        """Apply moves; each is its own conditional step (one script call per 1,000 moves).

        Returns, per move, whether it happened (False: the request was not at ``source``, e.g.
        a reaper returned it to Incoming after this worker's lease expired).
        """
        moment = time.time() if now is None else now
        pending = list(moves)
        applied: list[bool] = []
        for first in range(0, len(pending), MAX_PER_CALL):
            keys: list[Any] = [self.key("loc"), self.key("req"), self.key("vaa")]
            args: list[Any] = [repr(moment), self.completed_retention]
            for move in pending[first : first + MAX_PER_CALL]:
                move_keys, move_args = self._move_parts(move, moment)
                keys += move_keys
                args += move_args
            applied += [bool(int(r)) for r in self._scripts["apply"](keys=keys, args=args)]
        return applied

    @_translating_redis_errors
    def move(self, move: Move, *, now: float | None = None) -> bool:
        """Apply one move (see :meth:`apply`)."""
        return self.apply([move], now=now)[0]

    # crash recovery -----------------------------------------------------------------------
    @_translating_redis_errors
    def reap(self, worker_id: str, chain: int, *, now: float | None = None) -> int:
        """Return a dead worker's In-Work requests to Incoming (-1 if its lease is alive)."""
        moment = time.time() if now is None else now
        result = self._scripts["reap"](
            keys=[
                self.key("lease", worker_id),
                self.key("inwork", worker_id),
                self.key("incoming", chain),
                self.key("loc"),
                self.key("workers"),
            ],
            args=[f"W:{worker_id}", repr(moment), worker_id],
        )
        return int(result)

    @_translating_redis_errors
    def reap_expired(self, *, now: float | None = None) -> dict[str, int]:
        """Reap every registered worker whose lease has expired; worker id -> requests returned."""
        reaped: dict[str, int] = {}
        for worker_id, chain in self.workers().items():
            returned = self.reap(worker_id, chain, now=now)
            if returned >= 0:
                reaped[worker_id] = returned
        return reaped

    # Failed and Completed -------------------------------------------------------------------
    @_translating_redis_errors
    def failed(self, chain: int | None = None, *, limit: int = 1000) -> list[RelayRequest]:
        """Requests in Failed (of one chain, or all), oldest failure first."""
        chains = [chain] if chain is not None else self.chains()
        out: list[RelayRequest] = []
        for target in chains:
            digests = sync(self.client.zrange(self.key("failed", target), 0, limit - 1))
            if digests:
                out += [r for r in self._read(digests) if r is not None]
        return out[:limit]

    @_translating_redis_errors
    def retry_failed(self, digest: str, *, now: float | None = None) -> bool:
        """Move a Failed request back to Incoming with a fresh retry budget."""
        request = self.get(digest)
        if request is None:
            return False
        moment = time.time() if now is None else now
        fresh = for_retry_from_failed(request, now=moment)
        return self.move(Move(fresh, Table.FAILED, Table.INCOMING, score=moment), now=moment)

    @_translating_redis_errors
    def drop_failed(self, digest: str, *, now: float | None = None) -> bool:
        """Purge a Failed request, recording it in the Completed log as dropped."""
        request = self.get(digest)
        if request is None:
            return False
        return self.move(
            Move(request, Table.FAILED, Table.COMPLETED, outcome=Outcome.DROPPED), now=now
        )

    @_translating_redis_errors
    def completed_entry(self, chain: int, digest: str) -> dict[str, Any] | None:
        """One request's record in the Completed log of ``chain`` (as in :meth:`completed_log`),
        or None when it is not there."""
        validate_digest(digest)
        raw = sync(self.client.hget(self.key("completed", chain, "log"), digest))
        if raw is None:
            return None
        record = orjson.loads(raw)
        return {**(record.pop("request") or {}), **record}

    @_translating_redis_errors
    def completed_log(self, chain: int) -> dict[str, dict[str, Any]]:
        """The Completed log of ``chain``: digest -> the request's last state (retries,
        rollbacks, submission id, ...) with ``outcome``, ``completed_at`` and ``worker``."""
        raw = sync(self.client.hgetall(self.key("completed", chain, "log")))
        out: dict[str, dict[str, Any]] = {}
        for digest, value in raw.items():
            record = orjson.loads(value)
            out[_text(digest)] = {**(record.pop("request") or {}), **record}
        return out
