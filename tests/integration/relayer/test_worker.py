"""Workers on the real Redis with the in-process chain: lifecycle, retries, rollbacks, crashes,
leases, and wallet keys that never leak."""

from __future__ import annotations

import logging
import random
import time

import pytest
import redis

from chainloom.backoff import Backoff
from chainloom.relayer.config import RelayerSettings
from chainloom.relayer.errors import AlreadyRedeemedError, LeaseLostError, RefusedForGoodError
from chainloom.relayer.model import RetryPolicy, Table
from chainloom.relayer.service import build_worker
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.wallet import Wallet
from chainloom.relayer.worker import Worker, WorkerSettings
from chainloom_dev.sim.sim_chains import InProcessAdapter
from tests.integration.relayer.relay_support import dump_redis, requests

KEY_A = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
KEY_B = "8da4ef21b864d2cc526dbdb2a120bd2874c36c9d0a1fb7f8c63d7f7a8b41de8f"


@pytest.fixture
def client(redis_url):
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


@pytest.fixture
def tables(client):
    return RelayTables(client)


@pytest.fixture
def wallet_a(tmp_path):
    path = tmp_path / "wallet-a"
    path.write_text(KEY_A + "\n")
    return Wallet.from_file(path)


@pytest.fixture
def wallet_b(tmp_path):
    path = tmp_path / "wallet-b"
    path.write_text("0x" + KEY_B)
    return Wallet.from_file(path)


@pytest.fixture(scope="module")
def transfers():
    return requests(30, target_chain=2)


FAST = WorkerSettings(
    policy=RetryPolicy(max_retries=2, schedule=Backoff(initial=0.0, maximum=0.0)),
    lease_ttl=5.0,
    batch=8,
    idle_sleep=0.0,
    recheck=0.0,
    seed=1,
)


def drain(*workers: Worker, rounds: int = 200) -> None:
    """Step every worker until a full round does nothing."""
    for worker in workers:
        if not worker._holding:
            worker.start(timeout=5)
    for _ in range(rounds):
        if sum(worker.step() for worker in workers) == 0:
            return
    raise AssertionError("workers never became idle")


def empty_but(tables: RelayTables, *keep: Table) -> bool:
    depths = tables.depths()
    live = (Table.INCOMING, Table.IN_WORK, Table.PENDING_CONFIRMATION, Table.FAILED)
    return all(sum(depths[t].values()) == 0 for t in live if t not in keep)


def test_every_request_is_submitted_once_confirmed_and_purged(tables, wallet_a, transfers):
    chain = InProcessAdapter(2, confirmations=2)
    tables.enqueue_many(transfers)
    worker = Worker(tables, chain, wallet_a, FAST)
    drain(worker)
    worker.close()
    assert sorted(s.digest for s in chain.submissions) == sorted(r.digest for r in transfers)
    assert {s.wallet for s in chain.submissions} == {wallet_a.address}
    assert chain.duplicate_attempts == 0
    assert empty_but(tables)
    log = tables.completed_log(2)
    assert set(log) == {r.digest for r in transfers}
    assert {e["outcome"] for e in log.values()} == {"confirmed"}
    assert {e["worker"] for e in log.values()} == {worker.worker_id}
    assert worker.counters.submitted == worker.counters.confirmed == 30
    assert tables.client.hlen(tables.key("req")) == 0  # purged, not just moved


def test_already_redeemed_transfers_complete_without_submitting(tables, wallet_a, transfers):
    chain = InProcessAdapter(2)
    scooped = transfers[:5]
    for request in scooped:
        chain.mark_redeemed(request.vaa)
    tables.enqueue_many(transfers[:10])
    worker = Worker(tables, chain, wallet_a, FAST)
    drain(worker)
    assert {s.digest for s in chain.submissions} == {r.digest for r in transfers[5:10]}
    log = tables.completed_log(2)
    assert {d for d, e in log.items() if e["outcome"] == "already_redeemed"} == {
        r.digest for r in scooped
    }
    assert worker.counters.already_redeemed == 5


def test_failures_retry_with_backoff_then_land_in_failed_with_the_last_error(
    tables, wallet_a, transfers
):
    chain = InProcessAdapter(2)
    doomed = transfers[0]
    chain.fail_always(doomed.digest, "execution reverted: bad signature set")
    chain.fail_next(1, "connection reset")  # a transient failure for one other transfer
    tables.enqueue_many(transfers[:4])
    worker = Worker(tables, chain, wallet_a, FAST)
    drain(worker)
    failed = tables.failed(2)
    assert [r.digest for r in failed] == [doomed.digest]
    assert failed[0].retries == 3  # max_retries=2: the third failure gives up
    assert failed[0].last_error == "SubmitError: execution reverted: bad signature set"
    assert {s.digest for s in chain.submissions} == {r.digest for r in transfers[1:4]}
    assert empty_but(tables, Table.FAILED)
    retried = [e for e in tables.completed_log(2).values() if e["retries"] == 1]
    assert len(retried) == 1  # the transient failure succeeded on its second attempt


def test_backoff_keeps_a_failed_request_out_of_reach_until_its_time(tables, wallet_a, transfers):
    chain = InProcessAdapter(2)
    chain.fail_next(1, "nonce too low")
    tables.enqueue(transfers[0])
    slow = WorkerSettings(
        policy=RetryPolicy(max_retries=5, schedule=Backoff(initial=60.0, maximum=60.0)),
        idle_sleep=0.0,
    )
    worker = Worker(tables, chain, wallet_a, slow)
    drain(worker)
    assert tables.locate(transfers[0].digest) is Table.INCOMING
    stored = tables.get(transfers[0].digest)
    assert stored.retries == 1
    assert stored.next_attempt_at >= time.time() + 55
    assert chain.submissions == []


def test_a_rolled_back_submission_is_requeued_and_submitted_again(tables, wallet_a, transfers):
    chain = InProcessAdapter(2)
    chain.hold_finality()
    request = transfers[0]
    tables.enqueue(request)
    worker = Worker(tables, chain, wallet_a, FAST)
    worker.start()
    worker.step()
    assert tables.locate(request.digest) is Table.PENDING_CONFIRMATION
    (first,) = chain.submissions
    assert tables.get(request.digest).submission_id == first.submission_id
    chain.roll_back(first.submission_id)
    chain.hold_finality(False)
    drain(worker)
    submissions = chain.submissions_of(request.digest)
    assert len(submissions) == 2
    assert worker.counters.rolled_back == 1
    entry = tables.completed_log(2)[request.digest]
    assert entry["rollbacks"] == 1
    assert entry["submission_id"] == submissions[1].submission_id


def test_a_crash_between_submit_and_record_does_not_submit_twice(
    tables, wallet_a, wallet_b, transfers
):
    """Worker A claims and submits, then dies before recording; B reaps and finishes."""
    chain = InProcessAdapter(2)
    tables.enqueue_many(transfers[:6])
    short = WorkerSettings(lease_ttl=0.3, batch=6, idle_sleep=0.0, recheck=0.0, reap_every=0.0)
    a = Worker(tables, chain, wallet_a, short)
    assert tables.acquire_lease(a.worker_id, 2, "crashing-instance", 0.3)
    claimed = tables.claim(a.worker_id, 2, "crashing-instance", limit=6, lease_ttl=0.3)
    for request in claimed[:3]:  # submitted on chain, never recorded: then SIGKILL
        chain.submit(request.vaa, wallet_a)
    time.sleep(0.4)  # the dead instance's lease expires
    b = Worker(tables, chain, wallet_b, short)
    drain(b)
    assert chain.duplicate_attempts == 0
    assert sorted(s.digest for s in chain.submissions) == sorted(r.digest for r in transfers[:6])
    log = tables.completed_log(2)
    assert {d for d, e in log.items() if e["outcome"] == "already_redeemed"} == {
        r.digest for r in claimed[:3]
    }
    assert b.counters.reaped == 6
    assert empty_but(tables)


def test_a_restarted_worker_first_finishes_its_own_in_work(tables, wallet_a, transfers):
    chain = InProcessAdapter(2)
    tables.enqueue_many(transfers[:8])
    ttl = 0.3
    tables.acquire_lease(f"2:{wallet_a.address}", 2, "previous-instance", ttl)
    left = tables.claim(f"2:{wallet_a.address}", 2, "previous-instance", limit=3, lease_ttl=ttl)
    chain.submit(left[0].vaa, wallet_a)  # one was submitted just before the crash
    restarted = Worker(
        tables, chain, wallet_a, WorkerSettings(lease_ttl=ttl, batch=2, idle_sleep=0.0)
    )
    restarted.start(timeout=5)  # waits for the previous instance's lease to expire
    restarted.step()
    assert restarted.counters.recovered == 3
    assert all(tables.locate(r.digest) is not Table.IN_WORK for r in left)
    drain(restarted)
    assert chain.duplicate_attempts == 0
    assert len(chain.submissions) == 8
    assert empty_but(tables)


def test_a_second_instance_of_one_worker_waits_for_the_lease(tables, wallet_a):
    chain = InProcessAdapter(2)
    first = Worker(tables, chain, wallet_a, WorkerSettings(lease_ttl=5))
    first.start()
    twin = Worker(tables, chain, wallet_a, WorkerSettings(lease_ttl=5))
    with pytest.raises(LeaseLostError, match="another instance holds the lease"):
        twin.start(timeout=0.3)
    first.close()
    twin.start(timeout=1)
    twin.close()


def test_a_stalled_submission_keeps_its_lease_and_is_not_reaped(
    tables, wallet_a, wallet_b, transfers
):
    import threading

    chain = InProcessAdapter(2)
    chain.stall(0.8)
    tables.enqueue_many(transfers[:2])
    settings = WorkerSettings(lease_ttl=0.3, batch=2, idle_sleep=0.01, reap_every=0.0)
    slow = Worker(tables, chain, wallet_a, settings)
    slow.start()
    stepping = threading.Thread(target=slow.step)
    stepping.start()
    other = Worker(tables, InProcessAdapter(2), wallet_b, settings)
    other.start()
    deadline = time.time() + 1.5
    while time.time() < deadline:
        other.step()
        time.sleep(0.02)
    stepping.join()
    chain.stall(0)
    drain(slow, other)
    slow.close()
    other.close()
    assert other.counters.reaped == 0
    assert len(chain.submissions) == 2
    assert chain.duplicate_attempts == 0


def test_stop_finishes_the_step_and_releases_the_lease(tables, wallet_a, transfers):
    chain = InProcessAdapter(2)
    tables.enqueue_many(transfers[:3])
    worker = Worker(
        tables,
        chain,
        wallet_a,
        WorkerSettings(idle_sleep=0.01, recheck=0.0, stop_when_idle=0.2),
    )
    counters = worker.run()
    assert counters.confirmed == 3
    assert tables.client.exists(tables.key("lease", worker.worker_id)) == 0


def test_wallet_keys_never_reach_redis_or_logs(
    client, tables, wallet_a, wallet_b, transfers, caplog
):
    caplog.set_level(logging.DEBUG)
    chain = InProcessAdapter(2)
    chain.fail_always(transfers[0].digest, "reverted")
    tables.enqueue_many(transfers[:10])
    a = Worker(tables, chain, wallet_a, FAST)
    b = Worker(tables, chain, wallet_b, FAST)
    drain(a, b)
    logging.getLogger("test").info("workers %r and %r done", a, b)
    blob = dump_redis(client)
    assert wallet_a.address.encode() in blob  # the public address is there (worker ids)...
    assert len(blob) > 1000
    for key_hex in (KEY_A, KEY_B):
        secret = bytes.fromhex(key_hex)
        for form in (key_hex.encode(), key_hex.upper().encode(), secret):
            assert form not in blob  # ...never the key, in any form
        assert key_hex not in caplog.text.lower()
    assert wallet_a.address in caplog.text


def run_in_thread(worker: Worker):
    import threading

    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["counters"] = worker.run()
        except Exception as exc:  # surfaced by the assertions below
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_a_worker_that_loses_its_lease_stops_submitting_and_takes_a_new_one(
    tables, wallet_a, transfers, caplog
):
    caplog.set_level(logging.INFO)
    chain = InProcessAdapter(2)
    worker = Worker(tables, chain, wallet_a, WorkerSettings(lease_ttl=0.6, idle_sleep=0.01))
    thread, outcome = run_in_thread(worker)
    lease = tables.key("lease", worker.worker_id)
    wait_for(lambda: tables.client.exists(lease))
    first_token = tables.client.get(lease)
    tables.client.delete(lease)  # as if the worker had been paused past its TTL
    wait_for(lambda: (tables.client.get(lease) or first_token) != first_token)
    tables.enqueue_many(transfers[:5])
    wait_for(lambda: worker.counters.confirmed == 5)
    worker.stop()
    thread.join(timeout=10)
    assert "error" not in outcome
    assert "lease lost" in caplog.text
    assert len(chain.submissions) == 5
    assert chain.duplicate_attempts == 0


def test_a_worker_rides_out_an_unreachable_redis(wallet_a, caplog):
    caplog.set_level(logging.WARNING)
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    worker = Worker(RelayTables(dead), InProcessAdapter(2), wallet_a, WorkerSettings())
    thread, outcome = run_in_thread(worker)
    wait_for(lambda: "Redis unreachable at start" in caplog.text)
    worker.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert "error" not in outcome


def test_the_worker_backoff_setting_is_the_retry_schedule_whatever_its_multiplier(
    redis_url, wallet_a
):
    settings = RelayerSettings.model_validate(
        {
            "redis": {"url": redis_url},
            "worker": {
                "max_retries": 4,
                "backoff": {"initial": 0.5, "maximum": 30.0, "multiplier": 3.0, "jitter": 0.0},
            },
        }
    )
    worker = build_worker(settings, 2, wallet_a, lambda _client, chain: InProcessAdapter(chain))
    policy = worker.settings.policy
    assert policy.max_retries == 4
    assert [policy.schedule.after_failures(n, random.Random(0)) for n in (1, 2, 3, 4, 5)] == [
        0.5,
        1.5,
        4.5,
        13.5,
        30.0,
    ]


class _RefusingChain(InProcessAdapter):
    """A chain whose submissions say 'already redeemed' or 'never' for chosen digests."""

    def __init__(self, chain_id: int, *, already: set[bytes], never: set[bytes]) -> None:
        super().__init__(chain_id)
        self.already = already
        self.never = never

    def submit(self, vaa: bytes, wallet: Wallet) -> str:
        if vaa in self.already:
            raise AlreadyRedeemedError("execution reverted: transfer already completed")
        if vaa in self.never:
            raise RefusedForGoodError("execution reverted: unknown emitter")
        return super().submit(vaa, wallet)


def test_a_chain_refusal_for_good_fails_at_once_and_already_redeemed_completes(
    tables, wallet_a, transfers
):
    batch = transfers[:6]
    chain = _RefusingChain(2, already={batch[0].vaa}, never={batch[1].vaa})
    tables.enqueue_many(batch)
    worker = Worker(tables, chain, wallet_a, FAST)
    drain(worker)
    worker.close()
    failed = tables.failed()
    assert [r.digest for r in failed] == [batch[1].digest]
    assert failed[0].retries == 1
    assert failed[0].last_error == "RefusedForGoodError: execution reverted: unknown emitter"
    log = tables.completed_log(2)
    assert log[batch[0].digest]["outcome"] == "already_redeemed"
    assert worker.counters.already_redeemed == 1
    assert worker.counters.failed_final == 1
    assert {r.digest for r in batch[2:]} == {s.digest for s in chain.submissions}
