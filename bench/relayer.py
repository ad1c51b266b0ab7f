"""Relay-queue throughput: requests/s through the whole lifecycle, against the raw ceiling.

The lifecycle of one request through the real code (:class:`RelayTables` + one
:class:`Worker` with the :class:`InProcessAdapter`, finality at the first check):

    enqueue (listener, pipelined) -> claim (batch) -> is_redeemed -> submit
    -> move to Pending Confirmation (recording the submission id) -> finality check (batch)
    -> complete (purge + bounded Completed log)

The ceiling, measured in the same run against the same Redis: the SAME Lua script calls with
the same keys, batch sizes and argument sizes, issued raw through redis-py (the enqueues in one
pipeline), with every argument prepared before the clock starts: no worker, no adapter and no
(de)serialisation. The ratio says how much of what Redis and
redis-py can do the worker keeps. Goals (issue 6): ratio >= 50 %, lifecycle >= 5,000
requests/s. REST ingest is measured by ``bench/relayer_rest.py`` (when present).

Uses ``$CHAINLOOM_REDIS__URL`` (``scripts/bench`` sets it from the local stack) under a
throw-away key prefix that is deleted afterwards. Run:
``.venv/bin/python bench/relayer.py [--requests 10000] [--batch 256] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from chainloom.relayer.model import RelayRequest, RetryPolicy
from chainloom.relayer.tables import MAX_PER_CALL, RelayTables
from chainloom.relayer.wallet import Wallet
from chainloom.relayer.worker import Worker, WorkerSettings
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.sim_chains import InProcessAdapter

TARGET_CHAIN = 2
# A development key (public test data); the bench never signs with it.
BENCH_KEY = bytes.fromhex("59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")


def make_requests(count: int) -> list[RelayRequest]:
    """``count`` distinct signed token transfers (13 of 19 dev-guardian signatures each)."""
    guardians = DevGuardians()
    now = time.time()
    out = []
    for sequence in range(count):
        payload = (
            b"\x01"
            + (10**8).to_bytes(32, "big")
            + bytes(31)
            + b"\x01"
            + (2).to_bytes(2, "big")
            + bytes(31)
            + b"\x02"
            + TARGET_CHAIN.to_bytes(2, "big")
            + bytes(32)
        )
        vaa = guardians.sign(
            emitter_chain=6,
            emitter_address=guardians.token_bridge_emitter,
            sequence=sequence,
            payload=payload,
        )
        out.append(
            RelayRequest(
                digest=vaa.digest_hex,
                vaa=vaa.to_bytes(),
                target_chain=TARGET_CHAIN,
                emitter_chain=6,
                sequence=sequence,
                enqueued_at=now,
            )
        )
    return out


def lifecycle(
    client: redis.Redis, prefix: str, requests: list[RelayRequest], batch: int
) -> tuple[float, int]:
    """Seconds to take every request from enqueue to purged, and the submissions made."""
    tables = RelayTables(client, prefix)
    chain = InProcessAdapter(TARGET_CHAIN)
    settings = WorkerSettings(
        policy=RetryPolicy(),
        batch=batch,
        idle_sleep=0.0,
        recheck=0.0,
        first_check=0.0,
        reap_every=5.0,
        lease_ttl=30.0,
    )
    worker = Worker(tables, chain, Wallet(BENCH_KEY), settings)
    worker.start()
    start = time.perf_counter()
    tables.enqueue_many(requests)
    while worker.counters.confirmed < len(requests):
        if worker.step() == 0:
            raise RuntimeError(f"worker went idle early: {worker.counters}")
    elapsed = time.perf_counter() - start
    worker.close()
    return elapsed, len(chain.submissions)


def ceiling(client: redis.Redis, prefix: str, requests: list[RelayRequest], batch: int) -> float:
    """Seconds for the same script calls, arguments prepared up front, issued raw (no worker)."""
    tables = RelayTables(client, prefix)  # only for its key names and registered scripts
    scripts = tables._scripts
    key = tables.key
    worker_id = "2:0xbench"
    code = f"W:{worker_id}"
    token = "bench"
    tables.acquire_lease(worker_id, TARGET_CHAIN, token, 30.0)
    now = repr(time.time())
    head = len('{"v":1,"digest":"')
    digest_at = slice(head, head + 66)
    submitted = {
        r.digest: r.state_json().replace(
            '"submission_id":null', '"submission_id":"0x' + "1" * 32 + '"'
        )
        for r in requests
    }
    log_entry = '{"outcome":"confirmed","completed_at":0,"worker":"2:0x' + "0" * 40 + '","request":'
    base = [key("req"), key("loc"), key("chains"), key("vaa")]
    per_request = [key("completed", 2), key("incoming", 2)]
    enqueue_calls = []
    for first in range(0, len(requests), MAX_PER_CALL):
        chunk = requests[first : first + MAX_PER_CALL]
        args: list[Any] = []
        for r in chunk:
            args += [r.digest, r.state_json(), "1.0", 2, r.vaa]
        enqueue_calls.append((base + per_request * len(chunk), args))
    claim_keys = [
        key("lease", worker_id),
        key("incoming", 2),
        key("inwork", worker_id),
        key("loc"),
        key("req"),
        key("vaa"),
    ]
    apply_base = [key("loc"), key("req"), key("vaa")]
    to_pending = [key("inwork", worker_id), key("pending", 2), key("pending", 2)]
    to_completed = [key("pending", 2), key("completed", 2), key("completed", 2, "log")]
    start = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for keys, args in enqueue_calls:
        scripts["enqueue"](keys=keys, args=args, client=pipe)
    pipe.execute()
    done = 0
    while done < len(requests):
        claimed = scripts["claim"](keys=claim_keys, args=[token, now, batch, code, 30000])
        digests = [body[digest_at].decode() for body in claimed[0::2]]
        args = [now, 100_000]
        for digest in digests:
            args += ["M", digest, code, "P", now, submitted[digest]]
        scripts["apply"](keys=apply_base + to_pending * len(digests), args=args)
        due = scripts["due_pending"](
            keys=[key("pending", 2), key("req"), key("vaa")], args=[now, batch, now]
        )
        digests = [body[digest_at].decode() for body in due[0::2]]
        args = [now, 100_000]
        for digest in digests:
            args += ["C", digest, "P", "", "0", log_entry]
        done += len(scripts["apply"](keys=apply_base + to_completed * len(digests), args=args))
    return time.perf_counter() - start


def cleanup(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(f"{{{prefix}}}:*", count=1000))
    for first in range(0, len(keys), 1000):
        client.delete(*keys[first : first + 1000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--redis-url", default=os.environ.get("CHAINLOOM_REDIS__URL", "redis://127.0.0.1:6379/0")
    )
    args = parser.parse_args()
    client = redis.Redis.from_url(args.redis_url)
    client.ping()
    started = time.perf_counter()
    requests = make_requests(args.requests)
    print(
        f"relay lifecycle bench: {args.requests} signed transfers ({len(requests[0].vaa)} B VAAs, "
        f"built in {time.perf_counter() - started:.1f}s), batch {args.batch}, "
        f"best of {args.rounds}, redis-py {redis.__version__}"
    )
    best_life = best_ceiling = float("inf")
    cpu_life = cpu_ceiling = float("inf")
    for _ in range(args.rounds):
        prefix = f"chainloom:bench:relay:{uuid.uuid4().hex[:8]}"
        cpu = time.process_time()
        try:
            seconds, submissions = lifecycle(client, prefix, requests, args.batch)
            cpu_life = min(cpu_life, time.process_time() - cpu)
            if submissions != len(requests):
                raise RuntimeError(f"{submissions} submissions for {len(requests)} requests")
        finally:
            cleanup(client, prefix)
        best_life = min(best_life, seconds)
        prefix = f"chainloom:bench:relay:{uuid.uuid4().hex[:8]}"
        cpu = time.process_time()
        try:
            best_ceiling = min(best_ceiling, ceiling(client, prefix, requests, args.batch))
            cpu_ceiling = min(cpu_ceiling, time.process_time() - cpu)
        finally:
            cleanup(client, prefix)
    life_rate = args.requests / best_life
    ceiling_rate = args.requests / best_ceiling
    ratio = life_rate / ceiling_rate
    print(f"lifecycle (tables + worker + in-process chain): {life_rate:,.0f} requests/s")
    print(f"ceiling (same Lua scripts, raw redis-py pipelines): {ceiling_rate:,.0f} requests/s")
    print(
        f"ratio: {ratio:.0%} of the ceiling (goal >= 50%); "
        f"{'meets' if life_rate >= 5000 else 'BELOW'} the 5,000 requests/s goal"
    )
    print(
        f"client CPU per request: lifecycle {cpu_life / args.requests * 1e6:.0f} us, "
        f"ceiling {cpu_ceiling / args.requests * 1e6:.0f} us "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    rest = Path(__file__).with_name("relayer_rest.py")
    if rest.exists():
        spec = importlib.util.spec_from_file_location("bench_relayer_rest", rest)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load {rest}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        module.bench_rest()
    else:
        print("REST ingest: bench/relayer_rest.py not present")


if __name__ == "__main__":
    main()
