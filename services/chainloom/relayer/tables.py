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
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from chainloom.relayer._redis import sync
from chainloom.relayer._redis import text as _text
from chainloom.relayer.errors import LeaseLostError, TableError
from chainloom.relayer.model import Outcome, RelayRequest, Table, validate_digest

if TYPE_CHECKING:
    import redis
    from redis.commands.core import Script

__all__ = ["DEFAULT_PREFIX", "EnqueueResult", "Move", "RelayTables", "Table"]

DEFAULT_PREFIX = "chainloom:relay:v1"
DEFAULT_COMPLETED_RETENTION = 100_000
MAX_PER_CALL = 1000
"""Most requests or moves in one script call, so that no call blocks Redis for long."""
_WRITTEN_KEPT = 2048
"""How many of the states it wrote a :class:`RelayTables` keeps to read back without parsing."""


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
_json_string = json.encoder.encode_basestring_ascii  # json.dumps of a str, without its wrapper
_ACCEPTED = EnqueueResult(accepted=True, table=None)
_REFUSED = {table: EnqueueResult(accepted=False, table=table) for table in Table}


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
        self._p = "{" + prefix + "}"
        self._keys: dict[tuple[object, ...], str] = {}
        # (source, destination, worker id, chain) -> the move's three keys, the source's and
        # the destination's location codes (None for COMPLETED); bounded like ``_keys``.
        self._routes: dict[
            tuple[Table, Table, str | None, int],
            tuple[tuple[bytes, bytes, bytes], bytes, bytes | None],
        ] = {}
        # Keys and constant arguments go out already encoded, by the client's own encoder (the
        # very bytes redis-py would send; it passes bytes through without looking at them).
        self._encode: Callable[[object], bytes] = client.get_encoder().encode
        self._move_op, self._complete_op, self._no_code, self._no_score = map(
            self._encode, ("M", "C", "", "0")
        )
        # The last states this instance wrote by a move (exactly as sent) -> the request: a
        # worker reads them back at its finality checks, or claims a retried request again,
        # and these need no parsing. Keyed by the whole state, so a hit is what parsing gives.
        self._written: dict[bytes, RelayRequest] = {}
        self._scripts: dict[str, Script] = {
            name: client.register_script(_load(name))
            for name in ("enqueue", "claim", "apply", "due_pending", "reap", "lease")
        }

    # keys ---------------------------------------------------------------------------------
    def key(self, *parts: object) -> str:
        """The full key of one structure, e.g. ``key("incoming", 2)``."""
        known = self._keys.get(parts)
        if known is None:
            if len(self._keys) > 10_000:  # worker ids are unbounded over a long life
                self._keys.clear()
            known = self._keys[parts] = ":".join([self._p, *(str(p) for p in parts)])
        return known

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

    # enqueue / locate / read ----------------------------------------------------------------
    @staticmethod
    def _enqueue_result(raw: bytes | str) -> EnqueueResult:
        # Results are frozen, so the few possible ones are shared.
        if not raw:  # b"" or ""
            return _ACCEPTED
        return _REFUSED[table_of_location(_text(raw))]

    def enqueue(self, request: RelayRequest) -> EnqueueResult:
        """Queue ``request`` in Incoming unless its digest is in any table or the Completed log.

        The check and the insert are one Lua step, so 19 copies of one VAA from 19 guardians,
        arriving at once through several listeners, make exactly one request.
        """
        return self.enqueue_many([request])[0]

    def enqueue_many(self, requests: Sequence[RelayRequest]) -> list[EnqueueResult]:
        """:meth:`enqueue` for many requests: one script call per 1,000 requests (each request
        decided on its own), all calls in one pipeline."""
        pipe = self.client.pipeline(transaction=False)
        encode = self._encode
        # chain -> its Completed and Incoming keys and itself, encoded (exact int chains)
        known: dict[int, tuple[bytes, bytes, bytes]] = {}
        base = [self.key("req"), self.key("loc"), self.key("chains"), self.key("vaa")]
        for first in range(0, len(requests), MAX_PER_CALL):
            keys: list[Any] = list(base)
            args: list[Any] = []
            for request in requests[first : first + MAX_PER_CALL]:
                chain = request.target_chain
                parts = known.get(chain) if type(chain) is int else None
                if parts is None:
                    parts = (
                        encode(self.key("completed", chain)),
                        encode(self.key("incoming", chain)),
                        encode(chain),
                    )
                    if type(chain) is int:
                        known[chain] = parts
                keys += parts[:2]
                args += (
                    request.digest,
                    request.state_json(),
                    repr(request.ready_at),
                    parts[2],
                    request.vaa,
                )
            self._scripts["enqueue"](keys=keys, args=args, client=pipe)
        return [self._enqueue_result(code) for raw in pipe.execute() for code in raw]

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

    def worker_of(self, digest: str) -> str | None:
        """The worker whose In-Work holds ``digest``, if any."""
        raw = sync(self.client.hget(self.key("loc"), digest))
        code = _text(raw) if raw is not None else ""
        return code[2:] if code.startswith("W:") else None

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

    def _pairs(self, raw: Sequence[bytes]) -> list[RelayRequest]:
        written = self._written
        out: list[RelayRequest] = []
        for i in range(0, len(raw), 2):
            state, vaa = raw[i], raw[i + 1]
            if state is None or vaa is None:
                continue
            known = written.get(state)
            if known is not None and known.vaa == vaa:
                out.append(known)
            else:
                out.append(RelayRequest.from_state(state, vaa))
        return out

    def _state_arg(self, request: RelayRequest) -> str | bytes:
        """The state JSON to send for ``request``, remembered when it reads back as it."""
        text = request.exact_state_json()
        if text is None:
            return request.state_json()
        state = self._encode(text)  # the bytes redis-py would send for the text
        written = self._written
        if len(written) >= _WRITTEN_KEPT:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del written[next(iter(written))]  # the oldest
        written[state] = request
        return state

    def chains(self) -> list[int]:
        """Target chains that ever had a request, ascending."""
        return sorted(int(c) for c in sync(self.client.smembers(self.key("chains"))))

    def workers(self) -> dict[str, int]:
        """Registered workers (id -> chain): live ones and dead ones not yet reaped."""
        raw = sync(self.client.hgetall(self.key("workers")))
        return {_text(k): int(v) for k, v in raw.items()}

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

    def acquire_lease(self, worker_id: str, chain: int, token: str, ttl: float) -> bool:
        """Take the worker's lease (False while another instance, live or dead, holds it)."""
        return self._lease(worker_id, token, ttl, "acquire", chain)

    def renew_lease(self, worker_id: str, chain: int, token: str, ttl: float) -> bool:
        """Extend our lease; False when it expired or was taken over (the worker must stop)."""
        return self._lease(worker_id, token, ttl, "renew", chain)

    def release_lease(self, worker_id: str, chain: int, token: str) -> bool:
        """Give up our lease on a clean stop."""
        return self._lease(worker_id, token, 1.0, "release", chain)

    # worker steps -------------------------------------------------------------------------
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
        import redis

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

    def in_work(self, worker_id: str) -> list[RelayRequest]:
        """The requests in the In-Work table of ``worker_id`` (oldest claim first)."""
        digests = sync(self.client.zrange(self.key("inwork", worker_id), 0, -1))
        if not digests:
            return []
        return [r for r in self._read(digests) if r is not None]

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

    def _route(
        self, source: Table, destination: Table, worker_id: str | None, chain: int
    ) -> tuple[tuple[bytes, bytes, bytes], bytes, bytes | None]:
        """The keys and location codes of a move, encoded (computed once per kind of move)."""
        route_key = (source, destination, worker_id, chain)
        route = self._routes.get(route_key)
        if route is None:
            encode = self._encode
            source_key = encode(self._zset(source, chain, worker_id))
            expected = encode(self._code(source, worker_id))
            if destination is Table.COMPLETED:
                completed = encode(self.key("completed", chain))
                log = encode(self.key("completed", chain, "log"))
                route = ((source_key, completed, log), expected, None)
            elif destination is Table.IN_WORK:
                raise TableError("requests enter In-Work only by claim()")
            else:
                target = encode(self._zset(destination, chain))
                route = ((source_key, target, target), expected, encode(self._code(destination)))
            if len(self._routes) > 10_000:  # worker ids are unbounded over a long life
                self._routes.clear()
            self._routes[route_key] = route
        return route

    def _move_parts(self, move: Move, now: float) -> tuple[Sequence[bytes], list[Any]]:
        request = move.request
        keys, expected, code = self._route(
            move.source, move.destination, move.worker_id, request.target_chain
        )
        if code is None:  # to COMPLETED
            outcome = move.outcome.value if move.outcome else Outcome.CONFIRMED.value
            # The script appends the stored request state and the closing brace.
            who = move.worker_id or request.submitted_by
            worker = _json_string(who) if type(who) is str else json.dumps(who)
            entry = f'{{"outcome":"{outcome}","completed_at":{now!r},"worker":{worker},"request":'
            return keys, [
                self._complete_op,
                request.digest,
                expected,
                self._no_code,
                self._no_score,
                entry,
            ]
        return keys, [
            self._move_op,
            request.digest,
            expected,
            code,
            repr(move.score),
            self._state_arg(request),
        ]

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

    def move(self, move: Move, *, now: float | None = None) -> bool:
        """Apply one move (see :meth:`apply`)."""
        return self.apply([move], now=now)[0]

    # crash recovery -----------------------------------------------------------------------
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

    def reap_expired(self, *, now: float | None = None) -> dict[str, int]:
        """Reap every registered worker whose lease has expired; worker id -> requests returned."""
        reaped: dict[str, int] = {}
        for worker_id, chain in self.workers().items():
            returned = self.reap(worker_id, chain, now=now)
            if returned >= 0:
                reaped[worker_id] = returned
        return reaped

    # Failed and Completed -------------------------------------------------------------------
    def failed(self, chain: int | None = None, *, limit: int = 1000) -> list[RelayRequest]:
        """Requests in Failed (of one chain, or all), oldest failure first."""
        chains = [chain] if chain is not None else self.chains()
        out: list[RelayRequest] = []
        for target in chains:
            digests = sync(self.client.zrange(self.key("failed", target), 0, limit - 1))
            if digests:
                out += [r for r in self._read(digests) if r is not None]
        return out[:limit]

    def retry_failed(self, digest: str, *, now: float | None = None) -> bool:
        """Move a Failed request back to Incoming with a fresh retry budget."""
        from chainloom.relayer.model import for_retry_from_failed

        request = self.get(digest)
        if request is None:
            return False
        moment = time.time() if now is None else now
        fresh = for_retry_from_failed(request, now=moment)
        return self.move(Move(fresh, Table.FAILED, Table.INCOMING, score=moment), now=moment)

    def drop_failed(self, digest: str, *, now: float | None = None) -> bool:
        """Purge a Failed request, recording it in the Completed log as dropped."""
        request = self.get(digest)
        if request is None:
            return False
        return self.move(
            Move(request, Table.FAILED, Table.COMPLETED, outcome=Outcome.DROPPED), now=now
        )

    def completed_log(self, chain: int) -> dict[str, dict[str, Any]]:
        """The Completed log of ``chain``: digest -> the request's last state (retries,
        rollbacks, submission id, ...) with ``outcome``, ``completed_at`` and ``worker``."""
        raw = sync(self.client.hgetall(self.key("completed", chain, "log")))
        out: dict[str, dict[str, Any]] = {}
        for digest, value in raw.items():
            record = json.loads(value)
            out[_text(digest)] = {**(record.pop("request") or {}), **record}
        return out
