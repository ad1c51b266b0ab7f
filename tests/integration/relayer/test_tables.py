"""The relay tables on the real Redis: atomic dedupe, claims, conditional moves, reaping."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import replace

import pytest
import redis

from chainloom.relayer.errors import LeaseLostError, TablesUnavailableError
from chainloom.relayer.model import Outcome, Table
from chainloom.relayer.tables import Move, RelayTables
from tests.integration.relayer.relay_support import requests

W1, W2 = "2:0x" + "11" * 20, "2:0x" + "22" * 20


@pytest.fixture
def client(redis_url):
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


@pytest.fixture
def tables(client):
    return RelayTables(client)


@pytest.fixture(scope="module")
def batch():
    return requests(40, target_chain=2) + requests(10, target_chain=4, start=1000)


def test_enqueue_dedupes_by_digest_and_reports_where_it_is(tables, batch):
    first = batch[0]
    assert tables.enqueue(first).accepted
    again = tables.enqueue(replace(first, enqueued_at=first.enqueued_at + 5))
    assert not again.accepted
    assert again.table is Table.INCOMING
    assert tables.locate(first.digest) is Table.INCOMING
    assert tables.get(first.digest) == first  # the first copy wins, unchanged
    assert tables.locate(batch[1].digest) is None


def test_an_unreachable_redis_is_a_tables_error_naming_the_server_and_the_cause(batch):
    dead = redis.Redis(host="127.0.0.1", port=1, db=3, socket_connect_timeout=0.2)
    tables = RelayTables(dead)
    for call in (
        lambda: tables.enqueue(batch[0]),
        lambda: tables.claim(W1, 2, "t", limit=1, lease_ttl=1),
        lambda: tables.locate(batch[0].digest),
        tables.ping,
    ):
        with pytest.raises(TablesUnavailableError, match=r"Redis at 127\.0\.0\.1:1/3 failed: .*"):
            call()
    dead.close()


def test_concurrent_copies_of_the_same_vaas_make_one_request_each(tables, batch):
    # 19 "guardian copies" of every VAA, enqueued at once from 8 threads sharing one pool.
    accepted: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(8)

    def listener() -> None:
        start.wait()
        for _ in range(3):
            results = tables.enqueue_many(batch)
            with lock:
                for request, result in zip(batch, results, strict=True):
                    if result.accepted:
                        accepted[request.digest] += 1

    threads = [threading.Thread(target=listener) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(accepted) == {r.digest for r in batch}
    assert set(accepted.values()) == {1}
    assert tables.depths()[Table.INCOMING] == {2: 40, 4: 10}


def test_claims_are_disjoint_across_concurrent_workers_and_respect_the_chain(tables, batch):
    tables.enqueue_many(batch)
    assert tables.acquire_lease(W1, 2, "t1", 10)
    assert tables.acquire_lease(W2, 2, "t2", 10)
    claimed: dict[str, list[str]] = {W1: [], W2: []}

    def claimer(worker_id: str, token: str) -> None:
        while got := tables.claim(worker_id, 2, token, limit=3, lease_ttl=10):
            claimed[worker_id] += [r.digest for r in got]

    threads = [threading.Thread(target=claimer, args=a) for a in ((W1, "t1"), (W2, "t2"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not set(claimed[W1]) & set(claimed[W2])
    assert set(claimed[W1]) | set(claimed[W2]) == {r.digest for r in batch[:40]}
    for worker_id, digests in claimed.items():
        for digest in digests:
            assert tables.locate(digest) is Table.IN_WORK
        assert sorted(r.digest for r in tables.in_work(worker_id)) == sorted(digests)
    depths = tables.depths()
    assert depths[Table.INCOMING] == {2: 0, 4: 10}
    assert depths[Table.IN_WORK] == {2: 40, 4: 0}


def test_claim_without_the_lease_claims_nothing(tables, batch):
    tables.enqueue_many(batch[:5])
    with pytest.raises(LeaseLostError, match="lost its lease"):
        tables.claim(W1, 2, "never-acquired", limit=5, lease_ttl=1)
    assert tables.acquire_lease(W1, 2, "mine", 10)
    with pytest.raises(LeaseLostError):
        tables.claim(W1, 2, "someone-else", limit=5, lease_ttl=1)
    assert tables.depths()[Table.INCOMING][2] == 5


def test_a_second_instance_cannot_take_a_live_lease(tables):
    assert tables.acquire_lease(W1, 2, "first", 10)
    assert not tables.acquire_lease(W1, 2, "second", 10)
    assert not tables.renew_lease(W1, 2, "second", 10)
    assert tables.renew_lease(W1, 2, "first", 10)
    assert not tables.release_lease(W1, 2, "second")
    assert tables.release_lease(W1, 2, "first")
    assert tables.acquire_lease(W1, 2, "second", 10)


def test_backed_off_requests_are_not_claimed_before_their_time(tables, batch):
    now = time.time()
    later = replace(batch[0], retries=1, next_attempt_at=now + 60)
    tables.enqueue(later)
    tables.enqueue(batch[1])
    tables.acquire_lease(W1, 2, "t", 10)
    got = tables.claim(W1, 2, "t", limit=10, lease_ttl=10, now=now)
    assert [r.digest for r in got] == [batch[1].digest]
    got = tables.claim(W1, 2, "t", limit=10, lease_ttl=10, now=now + 61)
    assert [r.digest for r in got] == [later.digest]


def test_moves_happen_only_from_where_the_caller_believes_the_request_is(tables, batch):
    request = batch[0]
    tables.enqueue(request)
    tables.acquire_lease(W1, 2, "t", 10)
    (claimed,) = tables.claim(W1, 2, "t", limit=1, lease_ttl=10)
    submitted = replace(claimed, submission_id="0xsub", submitted_by=W1)
    wrong_worker = Move(submitted, Table.IN_WORK, Table.PENDING_CONFIRMATION, worker_id=W2)
    assert tables.apply([wrong_worker]) == [False]
    assert tables.locate(request.digest) is Table.IN_WORK
    assert tables.get(request.digest) == claimed  # unchanged
    right = Move(submitted, Table.IN_WORK, Table.PENDING_CONFIRMATION, worker_id=W1, score=0)
    assert tables.apply([right]) == [True]
    assert tables.apply([right]) == [False]  # a replay after a crash is harmless
    assert tables.locate(request.digest) is Table.PENDING_CONFIRMATION
    assert tables.get(request.digest) == submitted  # submission id recorded in the same step
    assert tables.in_work(W1) == []


def test_due_pending_spreads_finality_checks(tables, batch):
    tables.enqueue(batch[0])
    tables.acquire_lease(W1, 2, "t", 10)
    (claimed,) = tables.claim(W1, 2, "t", limit=1, lease_ttl=10)
    tables.move(Move(claimed, Table.IN_WORK, Table.PENDING_CONFIRMATION, worker_id=W1, score=0))
    now = time.time()
    assert len(tables.due_pending(2, limit=10, recheck_in=30, now=now)) == 1
    assert tables.due_pending(2, limit=10, recheck_in=30, now=now) == []  # pushed ahead
    assert len(tables.due_pending(2, limit=10, recheck_in=30, now=now + 31)) == 1


def test_reaper_returns_a_dead_workers_in_work_and_spares_the_living(tables, batch):
    tables.enqueue_many(batch[:6])
    assert tables.acquire_lease(W1, 2, "dies", 0.2)
    assert tables.acquire_lease(W2, 2, "lives", 30)
    tables.claim(W1, 2, "dies", limit=4, lease_ttl=0.2)
    tables.claim(W2, 2, "lives", limit=2, lease_ttl=30)
    assert tables.reap_expired() == {}  # both alive
    time.sleep(0.3)
    assert tables.reap_expired() == {W1: 4}
    assert W1 not in tables.workers()
    depths = tables.depths()
    assert depths[Table.INCOMING][2] == 4
    assert depths[Table.IN_WORK][2] == 2
    assert tables.reap(W2, 2) == -1


def test_completed_log_is_bounded_and_dedupes_what_it_retains(client, batch):
    tables = RelayTables(client, completed_retention=3)
    tables.acquire_lease(W1, 2, "t", 10)
    tables.enqueue_many(batch[:5])
    claimed = tables.claim(W1, 2, "t", limit=5, lease_ttl=10)
    for i, request in enumerate(claimed):
        move = Move(
            request,
            Table.IN_WORK,
            Table.COMPLETED,
            worker_id=W1,
            outcome=Outcome.ALREADY_REDEEMED,
        )
        assert tables.move(move, now=1000.0 + i)
    log = tables.completed_log(2)
    assert set(log) == {r.digest for r in claimed[2:]}
    assert {entry["outcome"] for entry in log.values()} == {"already_redeemed"}
    assert tables.locate(claimed[4].digest) is Table.COMPLETED
    assert tables.enqueue(claimed[4]).table is Table.COMPLETED
    # trimmed out of the log: may be enqueued again (the worker then finds it redeemed)
    assert tables.locate(claimed[0].digest) is None
    assert tables.enqueue(claimed[0]).accepted
    assert tables.depths()[Table.COMPLETED][2] == 3


def test_failed_requests_can_be_listed_retried_and_dropped(tables, batch):
    tables.acquire_lease(W1, 2, "t", 10)
    tables.enqueue_many(batch[:2])
    for request in tables.claim(W1, 2, "t", limit=2, lease_ttl=10):
        gave_up = replace(request, retries=11, last_error="SubmitError: out of gas")
        tables.move(Move(gave_up, Table.IN_WORK, Table.FAILED, worker_id=W1, score=1.0))
    failed = tables.failed(2)
    assert {r.digest for r in failed} == {r.digest for r in batch[:2]}
    assert {r.last_error for r in failed} == {"SubmitError: out of gas"}
    assert tables.retry_failed(batch[0].digest)
    assert not tables.retry_failed(batch[0].digest)  # no longer in Failed
    assert tables.locate(batch[0].digest) is Table.INCOMING
    assert tables.get(batch[0].digest).retries == 0
    assert tables.drop_failed(batch[1].digest)
    assert tables.locate(batch[1].digest) is Table.COMPLETED
    assert tables.completed_log(2)[batch[1].digest]["outcome"] == "dropped"
    assert tables.failed() == []


def test_prefixes_isolate_table_sets_and_keys_carry_the_version(client, batch):
    old = RelayTables(client, prefix="chainloom:relay:v1")
    new = RelayTables(client, prefix="chainloom:relay:v2")
    assert old.enqueue(batch[0]).accepted
    assert new.enqueue(batch[0]).accepted
    keys = {k.decode() for k in client.keys("*")}
    assert keys
    assert all(k.startswith(("{chainloom:relay:v1}:", "{chainloom:relay:v2}:")) for k in keys)


def test_a_digest_named_twice_in_one_call_is_queued_and_moved_once(tables, batch):
    first, again = tables.enqueue_many([batch[0], batch[0], batch[1]])[:2]
    assert first.accepted
    assert (again.accepted, again.table) == (False, Table.INCOMING)
    tables.acquire_lease(W1, 2, "t", 10)
    claimed = tables.claim(W1, 2, "t", limit=10, lease_ttl=10)
    assert len(claimed) == 2
    failed = Move(claimed[0], Table.IN_WORK, Table.FAILED, worker_id=W1, score=1.0)
    requeued = Move(claimed[0], Table.IN_WORK, Table.INCOMING, worker_id=W1, score=1.0)
    assert tables.apply([failed, requeued]) == [True, False]
    assert tables.locate(claimed[0].digest) is Table.FAILED
    assert tables.depths()[Table.INCOMING][2] == 0


def test_states_read_back_are_what_redis_holds_even_after_another_instance_moved_them(
    client, batch
):
    mine, other = RelayTables(client), RelayTables(client)
    mine.enqueue_many(batch[:2])
    mine.acquire_lease(W1, 2, "t", 10)
    first, second = mine.claim(W1, 2, "t", limit=2, lease_ttl=10)
    mine.apply(
        [
            Move(
                replace(r, submission_id=f"0x{i}", submitted_by=W1),
                Table.IN_WORK,
                Table.PENDING_CONFIRMATION,
                worker_id=W1,
                score=0,
            )
            for i, r in enumerate((first, second))
        ]
    )
    # Another instance rolls the first back (a new state); the second stays as written.
    (stale,) = [r for r in other.due_pending(2, limit=10, recheck_in=0) if r.digest == first.digest]
    rolled = replace(stale, submission_id=None, submitted_by=None, rollbacks=1, last_error="rb")
    assert other.move(Move(rolled, Table.PENDING_CONFIRMATION, Table.PENDING_CONFIRMATION))
    due = {r.digest: r for r in mine.due_pending(2, limit=10, recheck_in=0)}
    assert due[first.digest] == rolled
    assert due[second.digest] == other.get(second.digest)
    assert due[second.digest].submission_id == "0x1"
