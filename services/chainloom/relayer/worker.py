"""One relay worker per {target chain + wallet}: claim, check, submit, confirm, recover.

Why this shape: the worker is the only place where a request can be submitted twice or lost,
so everything it does is either a read (``is_redeemed``, ``finality``), a submission, or one
conditional atomic move in :class:`~chainloom.relayer.tables.RelayTables`. It never changes a
request in place: it computes the new request with the pure rules of
:mod:`chainloom.relayer.model` and asks the tables to move it *if it is still where this
worker believes it is*.

Exactly once: before every submission the worker asks the chain whether the transfer is
already redeemed. A worker that crashes after submitting but before recording the submission
leaves the request in its In-Work table; whoever resumes it (the same worker restarted, or any
worker after the reaper returned it to Incoming) asks the chain first, finds it redeemed, and
completes it without submitting. A request in Pending Confirmation already carries its
submission id (recorded in the same atomic move that put it there), so it is only ever checked
for finality, never resubmitted unless the chain reports a rollback.

Liveness: the worker holds a lease (a Redis key with a TTL) renewed by a heartbeat thread;
every worker periodically reaps the In-Work tables of workers whose lease expired.

Telemetry (docs/observability.md): each attempt continues the trace its request carries
(``relayer.attempt`` with ``relayer.redeemed_check`` and ``relayer.submit`` under it, then
``relayer.record`` for the move that was applied, ``relayer.confirm`` for finality), and the
worker counts submissions, retries, Failed requests and lease losses. Through the API only: with
telemetry off these are no-ops.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from opentelemetry import metrics, trace

from chainloom import telemetry
from chainloom.backoff import Backoff
from chainloom.relayer.adapters import BatchFinality, BatchRedeemedCheck, ChainAdapter
from chainloom.relayer.balances import WalletBalances
from chainloom.relayer.errors import (
    AlreadyRedeemedError,
    LeaseLostError,
    RefusedForGoodError,
    TablesUnavailableError,
    UnknownSubmissionError,
)
from chainloom.relayer.model import (
    Finality,
    Outcome,
    RelayRequest,
    RetryPolicy,
    Table,
    after_failure,
    after_rollback,
    after_submission,
)
from chainloom.relayer.tables import Move, RelayTables
from chainloom.relayer.wallet import Wallet
from chainloom.wormhole import WormholeError, parse_vaa

logger = logging.getLogger("chainloom.relayer.worker")

_tracer = trace.get_tracer("chainloom.relayer.worker")
_meter = metrics.get_meter("chainloom.relayer.worker")
_submit_duration = _meter.create_histogram(
    "chainloom.relayer.submit.duration",
    unit="s",
    description="Time one submission to the target chain took (failed ones too).",
)
_retries = _meter.create_counter(
    "chainloom.relayer.retries",
    unit="{attempt}",
    description="Failed attempts returned to Incoming to be retried after a backoff.",
)
_failed = _meter.create_counter(
    "chainloom.relayer.failed",
    unit="{request}",
    description="Requests moved to Failed (retries exhausted): the growth of the Failed table.",
)
_completed = _meter.create_counter(
    "chainloom.relayer.completed",
    unit="{request}",
    description="Requests completed, by outcome (confirmed, already_redeemed).",
)
_lease_losses = _meter.create_counter(
    "chainloom.relayer.lease.losses",
    unit="{lease}",
    description="Times a worker lost its lease (paused past the TTL, or Redis lost the key).",
)

_REDIS_BACKOFF = Backoff(initial=0.1, maximum=5.0)
"""Waits between attempts while Redis is unreachable (0.1 s doubling to 5 s)."""


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """How a worker paces itself."""

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    """Retries, backoff and jitter after failed submissions."""
    lease_ttl: float = 15.0
    """Seconds a lease lives without renewal; a worker silent this long is presumed dead."""
    batch: int = 64
    """Requests claimed (and finality checks taken) per step."""
    idle_sleep: float = 0.05
    """Seconds to sleep after a step that found nothing to do."""
    recheck: float = 1.0
    """Seconds between two finality checks of one pending submission."""
    first_check: float = 0.0
    """Seconds after a submission before its first finality check."""
    reap_every: float = 5.0
    """Seconds between two reaper passes over the other workers' leases."""
    balance_every: float = 30.0
    """Seconds between two reads of the wallet's balance (adapters that can read it)."""
    stop_when_idle: float | None = None
    """Stop after this many seconds without work (None: run until stopped)."""
    seed: int | None = None
    """Seed of the backoff jitter (None: unpredictable)."""

    def __post_init__(self) -> None:
        if self.lease_ttl <= 0 or self.batch < 1:
            raise ValueError("lease_ttl must be > 0 and batch >= 1")


@dataclass(slots=True)
class WorkerCounters:
    """What one worker did (for logs, metrics and tests)."""

    claimed: int = 0
    """Requests claimed from Incoming."""
    recovered: int = 0
    """Requests found in its own In-Work at start (left by a previous instance)."""
    submitted: int = 0
    """Accepted submissions."""
    already_redeemed: int = 0
    """Requests completed without submitting because the chain had already redeemed them."""
    failed_attempts: int = 0
    """Submissions (or redemption checks) that failed and were retried or failed for good."""
    failed_final: int = 0
    """Requests moved to Failed."""
    confirmed: int = 0
    """Submissions that reached finality (requests purged)."""
    rolled_back: int = 0
    """Submissions rolled back (requests returned to Incoming)."""
    lost_moves: int = 0
    """Moves refused because the request was no longer where this worker left it."""
    reaped: int = 0
    """Requests this worker's reaper returned from dead workers to Incoming."""


def worker_id_for(chain_id: int, wallet: Wallet) -> str:
    """The worker identity: target chain + the wallet's public address (never the key)."""
    return f"{chain_id}:{wallet.address}"


class Worker:
    """Relays the requests of one target chain with one wallet."""

    def __init__(
        self,
        tables: RelayTables,
        adapter: ChainAdapter,
        wallet: Wallet,
        settings: WorkerSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tables = tables
        self.adapter = adapter
        self.wallet = wallet
        self.settings = settings or WorkerSettings()
        self.chain_id = adapter.chain_id
        self.worker_id = worker_id_for(self.chain_id, wallet)
        self.counters = WorkerCounters()
        self._clock = clock
        self._token = uuid.uuid4().hex
        self._rng = random.Random(self.settings.seed)  # noqa: S311  (jitter, not crypto)
        self._stop = threading.Event()
        self._beat_stop = threading.Event()
        self._lease_lost = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._holding = False
        self._recover = True
        self._last_reap = 0.0
        self._balances = WalletBalances(tables, adapter, wallet.address)

    def __repr__(self) -> str:
        return f"Worker({self.worker_id})"

    # lifecycle ----------------------------------------------------------------------------
    def start(self, *, timeout: float | None = None) -> None:
        """Take the lease (waiting for a dead predecessor's to expire) and start heartbeats."""
        deadline = None if timeout is None else time.monotonic() + timeout
        poll = min(0.2, self.settings.lease_ttl / 5)
        waited = False
        while not self.tables.acquire_lease(
            self.worker_id, self.chain_id, self._token, self.settings.lease_ttl
        ):
            if not waited:
                logger.info(
                    "worker %s: lease held by another instance; waiting for it to expire",
                    self.worker_id,
                )
                waited = True
            if self._stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                raise LeaseLostError(f"worker {self.worker_id}: another instance holds the lease")
            time.sleep(poll)
        self._holding = True
        self._lease_lost.clear()
        self._beat_stop = threading.Event()
        self._heartbeat = threading.Thread(
            target=self._beat, args=(self._beat_stop,), name=f"lease-{self.worker_id}", daemon=True
        )
        self._heartbeat.start()
        logger.info("worker %s: started", self.worker_id)

    def _beat(self, stop: threading.Event) -> None:
        interval = self.settings.lease_ttl / 3
        while not stop.wait(interval):
            try:
                renewed = self.tables.renew_lease(
                    self.worker_id, self.chain_id, self._token, self.settings.lease_ttl
                )
            except Exception as exc:  # a Redis outage: the lease may expire; stop submitting
                logger.warning("worker %s: lease renewal failed: %s", self.worker_id, exc)
                continue
            if not renewed:
                logger.error("worker %s: lease lost; stopping", self.worker_id)
                _lease_losses.add(1, {"chainloom.target_chain": self.chain_id})
                self._lease_lost.set()
                return

    def stop(self) -> None:
        """Ask :meth:`run` to finish its current step and return."""
        self._stop.set()

    def close(self) -> None:
        """Stop heartbeats and release the lease (In-Work is empty after a finished step)."""
        self._stop.set()
        self._stop_heartbeat()
        if self._holding:
            self._holding = False
            try:
                self.tables.release_lease(self.worker_id, self.chain_id, self._token)
            except TablesUnavailableError as exc:  # the lease then simply expires
                logger.warning("worker %s: could not release its lease: %s", self.worker_id, exc)

    def _stop_heartbeat(self) -> None:
        self._beat_stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
            self._heartbeat = None

    def _start_when_possible(self) -> bool:
        """:meth:`start`, retrying while Redis is unreachable; False when stopped meanwhile."""
        failures = 0
        while not self._stop.is_set():
            try:
                self.start()
            except TablesUnavailableError as exc:
                self._wait_for_redis(failures, "Redis unreachable at start", exc)
                failures += 1
            except LeaseLostError:
                if self._stop.is_set():
                    return False
                raise
            else:
                return True
        return False

    def _wait_for_redis(self, failures: int, what: str, error: Exception) -> None:
        """Log a Redis failure and wait out its back-off (``failures``: those in a row before)."""
        delay = _REDIS_BACKOFF.delay(failures)
        logger.warning("worker %s: %s (%s); retrying in %.1f s", self.worker_id, what, error, delay)
        self._stop.wait(delay)

    def run(self) -> WorkerCounters:
        """Start, then step until stopped (or idle for ``stop_when_idle``); then close.

        A Redis outage does not end the worker: it backs off and resumes (its own In-Work
        first). A lost lease (e.g. the worker was paused longer than the TTL and the reaper
        returned its In-Work) makes it stop submitting, take a new lease and carry on.
        """
        if not self._start_when_possible():
            return self.counters
        idle_since = time.monotonic()
        redis_failures = 0  # in a row; a successful step resets it
        try:
            while not self._stop.is_set():
                try:
                    done = self.step()
                except LeaseLostError:
                    logger.error("worker %s: lease lost; taking a new one", self.worker_id)
                    self._stop_heartbeat()
                    self._holding = False
                    self._token = uuid.uuid4().hex
                    self._recover = True
                    if not self._start_when_possible():
                        break
                    continue
                except TablesUnavailableError as exc:
                    self._recover = True
                    self._wait_for_redis(redis_failures, "Redis error", exc)
                    redis_failures += 1
                    continue
                redis_failures = 0
                if done:
                    idle_since = time.monotonic()
                    continue
                limit = self.settings.stop_when_idle
                if limit is not None and time.monotonic() - idle_since >= limit:
                    break
                self._stop.wait(self.settings.idle_sleep)
        finally:
            self.close()
            logger.info("worker %s: stopped; %s", self.worker_id, self.counters)
        return self.counters

    # one step -----------------------------------------------------------------------------
    def step(self) -> int:
        """One round: own In-Work first, then a claim, then due finality checks, then reaping.

        Returns how many requests it acted on (0: nothing to do).
        """
        if self._lease_lost.is_set():
            raise LeaseLostError(f"worker {self.worker_id} lost its lease")
        done = 0
        if self._recover:
            own = self.tables.in_work(self.worker_id)
            if own:
                logger.info(
                    "worker %s: resuming %d request(s) left in its In-Work",
                    self.worker_id,
                    len(own),
                )
                self.counters.recovered += len(own)
                done += self._process(own)
            self._recover = False
        claimed = self.tables.claim(
            self.worker_id,
            self.chain_id,
            self._token,
            limit=self.settings.batch,
            lease_ttl=self.settings.lease_ttl,
            now=self._clock(),
        )
        if claimed:
            self.counters.claimed += len(claimed)
            done += self._process(claimed)
        done += self._confirm()
        now = self._clock()
        if now - self._last_reap >= self.settings.reap_every:
            self._last_reap = now
            for worker_id, returned in self.tables.reap_expired(now=now).items():
                if returned:
                    logger.warning(
                        "worker %s: returned %d request(s) of dead worker %s to Incoming",
                        self.worker_id,
                        returned,
                        worker_id,
                    )
                self.counters.reaped += returned
                done += returned
        self._balances.maybe_publish(now, self.settings.balance_every)
        return done

    def _process(self, requests: list[RelayRequest]) -> int:
        """Decide and submit each claimed request, then record every outcome in one pipeline."""
        moves: list[Move] = []
        redeemed = self._redeemed(requests)
        try:
            for request in requests:
                moves.append(self._attempt(request, redeemed.get(request.digest)))
        finally:
            # Record what was decided even if a later request raised (e.g. lease lost): the
            # rest stay in our In-Work and are resumed (is_redeemed first) after a restart.
            applied = self.tables.apply(moves, now=self._clock())
            self._count(moves, applied)
        return len(requests)

    def _redeemed(self, requests: list[RelayRequest]) -> dict[str, bool]:
        """Whether each request is redeemed, asked for the whole batch at once when the adapter
        can (an empty answer: each request is asked alone, just before its submission)."""
        if not isinstance(self.adapter, BatchRedeemedCheck) or len(requests) < 2:
            return {}
        try:
            answers = self.adapter.redeemed_many([r.vaa for r in requests])
        except Exception as exc:  # asked again one by one, where failures are handled
            logger.debug("batched redemption check failed (%s); asking one by one", exc)
            return {}
        return {r.digest: answer for r, answer in zip(requests, answers, strict=True)}

    def _attempt(self, request: RelayRequest, redeemed: bool | None = None) -> Move:
        if self._lease_lost.is_set():
            self._recover = True
            raise LeaseLostError(f"worker {self.worker_id} lost its lease; not submitting")
        with telemetry.start_span(
            _tracer, "relayer.attempt", context=telemetry.context_from(request.traceparent)
        ) as span:
            if span.is_recording():
                span.set_attributes(_request_attributes(request))
            move = self._decide(request, redeemed)
            if span.is_recording():
                span.set_attribute("chainloom.outcome", _move_outcome(move))
            return move

    def _decide(self, request: RelayRequest, redeemed: bool | None) -> Move:
        """``redeemed``: the chain's answer for this request if already asked (in a batch)."""
        try:
            with telemetry.start_span(_tracer, "relayer.redeemed_check") as span:
                if redeemed is None:
                    redeemed = self.adapter.is_redeemed(request.vaa)
                span.set_attribute("chainloom.redeemed", redeemed)
            if redeemed:
                return Move(
                    request,
                    Table.IN_WORK,
                    Table.COMPLETED,
                    worker_id=self.worker_id,
                    outcome=Outcome.ALREADY_REDEEMED,
                )
            started = time.monotonic()
            try:
                with telemetry.start_span(_tracer, "relayer.submit"):
                    submission_id = self.adapter.submit(request.vaa, self.wallet)
            finally:
                _submit_duration.record(
                    time.monotonic() - started, {"chainloom.target_chain": self.chain_id}
                )
        except LeaseLostError:
            raise
        except AlreadyRedeemedError:
            return Move(
                request,
                Table.IN_WORK,
                Table.COMPLETED,
                worker_id=self.worker_id,
                outcome=Outcome.ALREADY_REDEEMED,
            )
        except RefusedForGoodError as exc:
            return self._failure(request, f"{type(exc).__name__}: {exc}", for_good=True)
        except Exception as exc:  # any chain failure is retried with backoff, then Failed
            return self._failure(request, f"{type(exc).__name__}: {exc}")
        now = self._clock()
        return Move(
            after_submission(request, submission_id, self.worker_id),
            Table.IN_WORK,
            Table.PENDING_CONFIRMATION,
            worker_id=self.worker_id,
            score=now + self.settings.first_check,
        )

    def _failure(self, request: RelayRequest, error: str, *, for_good: bool = False) -> Move:
        self.counters.failed_attempts += 1
        now = self._clock()
        decision = after_failure(
            request, error, now=now, policy=self.settings.policy, rng=self._rng, for_good=for_good
        )
        if decision.destination is Table.FAILED:
            logger.warning(
                "worker %s: %s failed for good after %d attempts: %s",
                self.worker_id,
                request.digest,
                decision.request.retries,
                error,
            )
            return Move(
                decision.request,
                Table.IN_WORK,
                Table.FAILED,
                worker_id=self.worker_id,
                score=now,
            )
        return Move(
            decision.request,
            Table.IN_WORK,
            Table.INCOMING,
            worker_id=self.worker_id,
            score=decision.request.next_attempt_at,
        )

    def _confirm(self) -> int:
        """Check finality of due pending submissions: purge the final, requeue the rolled back."""
        now = self._clock()
        due = self.tables.due_pending(
            self.chain_id, limit=self.settings.batch, recheck_in=self.settings.recheck, now=now
        )
        moves: list[Move] = []
        states = self._finalities(due)
        for request in due:
            state = states.get(request.digest)
            if state is None:
                continue
            with telemetry.start_span(
                _tracer, "relayer.confirm", context=telemetry.context_from(request.traceparent)
            ) as span:
                span.set_attribute("chainloom.finality", state.value)
            if state is Finality.FINAL:
                moves.append(
                    Move(
                        request,
                        Table.PENDING_CONFIRMATION,
                        Table.COMPLETED,
                        outcome=Outcome.CONFIRMED,
                    )
                )
            elif state is Finality.ROLLED_BACK:
                logger.warning(
                    "worker %s: submission %s of %s rolled back; requeued",
                    self.worker_id,
                    request.submission_id,
                    request.digest,
                )
                moves.append(
                    Move(
                        after_rollback(request, now=now),
                        Table.PENDING_CONFIRMATION,
                        Table.INCOMING,
                        score=now,
                    )
                )
        applied = self.tables.apply(moves, now=now)
        self._count(moves, applied)
        return len(due)

    def _finalities(self, due: list[RelayRequest]) -> dict[str, Finality]:
        """The finality of each due submission by digest; one left out is unknown for now
        (the chain is unreachable) and asked again at its next check."""
        asked = [r for r in due if r.submission_id is not None]
        if len(asked) < len(due):  # cannot happen: recorded by the same move
            logger.error("%d pending request(s) without a submission id", len(due) - len(asked))
        ids = [r.submission_id for r in asked if r.submission_id is not None]
        if isinstance(self.adapter, BatchFinality) and len(ids) > 1:
            try:
                states = self.adapter.finality_many(ids)
            except Exception as exc:  # the chain is unreachable: ask again at the next check
                logger.warning("finality of %d submission(s) unknown: %s", len(ids), exc)
                return {}
            return {r.digest: state for r, state in zip(asked, states, strict=True)}
        known: dict[str, Finality] = {}
        for request, submission_id in zip(asked, ids, strict=True):
            try:
                known[request.digest] = self.adapter.finality(submission_id)
            except UnknownSubmissionError:
                known[request.digest] = Finality.ROLLED_BACK
            except Exception as exc:  # the chain is unreachable: ask again at the next check
                logger.warning("finality of %s unknown: %s", submission_id, exc)
        return known

    def _count(self, moves: list[Move], applied: list[bool]) -> None:
        counters = self.counters
        for move, done in zip(moves, applied, strict=True):
            if not done:
                counters.lost_moves += 1
                logger.warning(
                    "worker %s: %s was no longer in %s; move to %s skipped",
                    self.worker_id,
                    move.request.digest,
                    move.source.value,
                    move.destination.value,
                )
                continue
            destination = move.destination
            _record(move, self.chain_id)
            if destination is Table.PENDING_CONFIRMATION:
                counters.submitted += 1
            elif destination is Table.FAILED:
                counters.failed_final += 1
            elif destination is Table.COMPLETED:
                if move.outcome is Outcome.ALREADY_REDEEMED:
                    counters.already_redeemed += 1
                else:
                    counters.confirmed += 1
            elif move.source is Table.PENDING_CONFIRMATION:
                counters.rolled_back += 1


def _request_attributes(request: RelayRequest) -> dict[str, str | int]:
    """What a worker span says about its request: public facts, never the wallet or its key."""
    attributes: dict[str, str | int] = {
        "chainloom.digest": request.digest,
        "chainloom.target_chain": request.target_chain,
        "chainloom.retries": request.retries,
    }
    # Queued VAAs parsed at intake; a stored one that does not parse just lacks the id.
    with contextlib.suppress(WormholeError):
        attributes["chainloom.message_id"] = parse_vaa(request.vaa).message_id
    return attributes


def _move_outcome(move: Move) -> str:
    """The word for where a move takes its request (``pending_confirmation``, ``retry``, ...)."""
    if move.destination is Table.COMPLETED and move.outcome is not None:
        return str(move.outcome.value)
    if move.destination is Table.INCOMING:
        return "rolled_back" if move.source is Table.PENDING_CONFIRMATION else "retry"
    return str(move.destination.value)


def _record(move: Move, chain_id: int) -> None:
    """Count an applied move and close its request's trace with a ``relayer.record`` span."""
    outcome = _move_outcome(move)
    labels = {"chainloom.target_chain": chain_id}
    if move.destination is Table.COMPLETED:
        _completed.add(1, {**labels, "chainloom.outcome": outcome})
    elif move.destination is Table.FAILED:
        _failed.add(1, labels)
    elif outcome == "retry":
        _retries.add(1, labels)
    parent = telemetry.context_from(move.request.traceparent)
    with telemetry.start_span(_tracer, "relayer.record", context=parent) as span:
        if span.is_recording():
            span.set_attributes(_request_attributes(move.request))
            span.set_attribute("chainloom.outcome", outcome)
            span.set_attribute("chainloom.table", move.destination.value)
