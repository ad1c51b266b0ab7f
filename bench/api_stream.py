"""The events API's push stream (``python bench/api.py --part stream``): delivery latency to many
subscribers, and the writer's rate with and without them, in one run.

1. A fresh pair of tables on the local stack's emulator; ``chainloom events api`` in its own
   process, listening on the stack's real Redis (``api.feed_redis``) for the writer's feed.
2. The event writer (this process, batches of ``--batch``) stores ``--vaas`` dev-guardian VAAs
   with no subscriber: the writer's ceiling rate.
3. ``--subscribers`` SSE clients (aiohttp, in a process of their own so that they do not take
   the writer's interpreter) connect to ``/api/v1/vaas/stream``; the writer stores ``--vaas``
   at ``--rate`` VAAs a second (a tenth every 100 ms, as VAAs arrive in production), then
   ``--vaas`` more as fast as it can (its rate with subscribers). Each paced VAA's latency is
   the wall-clock time from its batch's feed publish (rows and feed row written) to its
   arrival at a client, over every (VAA, client) pair.
4. The floor of that latency: the store reads the hub makes for one tick's VAAs (the ``feed:``
   rows after a position, then their rows), made directly ``--samples`` times.

Printed: the writer's rate alone and with the subscribers (goal: ratio >= 0.9, "unchanged
within noise"), and the delivery p50/p99 against the p99 of the hub's bare reads (goal: p99
<= 50 ms).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


class _TimedFeed:
    """Records when each cursor was published, then publishes it on the real feed."""

    def __init__(self, feed: Any) -> None:
        self.feed = feed
        self.published: dict[str, float] = {}

    def publish(self, cursors: Sequence[str]) -> None:
        now = time.time()
        for cursor in cursors:
            self.published[cursor] = now
        self.feed.publish(cursors)

    def subscribe(self, wake: Any) -> Any:
        return self.feed.subscribe(wake)


class _Subscribers:
    """``count`` SSE clients on a thread of their own, recording arrival times (wall clock,
    comparable across processes) by cursor."""

    def __init__(self, base: str, count: int) -> None:
        self.base = base
        self.count = count
        self.arrivals: list[dict[str, float]] = [{} for _ in range(count)]
        self.connected = threading.Semaphore(0)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()
        for number in range(self.count):
            asyncio.run_coroutine_threadsafe(self._client(number), self._loop)
        for _ in range(self.count):
            if not self.connected.acquire(timeout=60):
                raise SystemExit("the subscribers did not all connect")

    async def _client(self, number: int) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with (
            aiohttp.ClientSession(trust_env=False, timeout=timeout) as session,
            session.get(self.base + "/api/v1/vaas/stream") as reply,
        ):
            if reply.status != 200:
                raise SystemExit(f"the stream answered {reply.status}")
            self.connected.release()
            seen = self.arrivals[number]
            async for line in reply.content:
                if line.startswith(b"id: "):
                    seen[line[4:].strip().decode()] = time.time()

    def stop(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(cancel_all(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()


def stream_bench(args: Any) -> None:
    """Stream latency and writer rate, as the module docstring says."""
    import warnings

    from pydantic import SecretStr

    from chainloom.eventstore.api.stream_reads import FeedReads
    from chainloom.eventstore.bigtable import BigtableTables, drop_tables, ensure_schema
    from chainloom.eventstore.feed_redis import RedisVaaFeed
    from chainloom.eventstore.writer import EventWriter, WriterConfig
    from chainloom.settings import BigtableSettings, RedisSettings
    from chainloom.wormhole import mainnet_emitters
    from chainloom_dev.sim.dev_guardians import DevGuardians

    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    redis_url = os.environ.get("CHAINLOOM_REDIS__URL")
    if not os.environ.get("BIGTABLE_EMULATOR_HOST") or not redis_url:
        raise SystemExit('needs the stack\'s emulator and Redis: eval "$(chainloom-dev stack env)"')
    table = f"bench-stream-{uuid.uuid4().hex[:10]}"
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    settings = BigtableSettings(project="chainloom", instance="local", table=table)
    ensure_schema(settings)
    kit = DevGuardians()
    vaas = [
        kit.sign(
            emitter_chain=2 + number % 3,
            emitter_address=bytes(31) + bytes([number % 8 + 1]),
            sequence=number,
            payload=b"stream bench %d" % number + bytes(100),
            timestamp=1_700_000_000 + number,
        ).to_bytes()
        for number in range(3 * args.vaas)
    ]
    env = dict(os.environ) | {
        "CHAINLOOM_BIGTABLE__PROJECT": "chainloom",
        "CHAINLOOM_BIGTABLE__INSTANCE": "local",
        "CHAINLOOM_BIGTABLE__TABLE": table,
        "CHAINLOOM_API__FEED_REDIS__URL": redis_url,
        "CHAINLOOM_API__FEED_REDIS__KEY_PREFIX": prefix,
        "CHAINLOOM_API__STREAM_POLL_INTERVAL": "5",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "chainloom", "events", "api", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r":(\d+)/", line)
    if not found:
        process.kill()
        drop_tables(settings)
        raise SystemExit(f"the events API did not start: {line.strip()}")
    base = f"http://127.0.0.1:{found.group(1)}"
    feed = _TimedFeed(RedisVaaFeed(RedisSettings(url=SecretStr(redis_url), key_prefix=prefix)))
    child: subprocess.Popen[str] | None = None
    try:
        with BigtableTables(settings) as tables:
            writer = EventWriter(
                tables, kit.sets(0), emitters=mainnet_emitters(), feed=feed,
                config=WriterConfig(flush_rows=args.batch),
            )  # fmt: skip
            prepared = [writer.prepare(raw) for raw in vaas]  # verification is not what is timed

            def write(items: list[Any]) -> float:
                started = time.perf_counter()
                for item in items:
                    writer.submit_prepared(item)
                writer.flush()
                return len(items) / (time.perf_counter() - started)

            alone = write(prepared[: args.vaas])
            child = subprocess.Popen(
                [sys.executable, __file__, base, str(args.subscribers), str(2 * args.vaas)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert child.stdout is not None
            assert child.stdin is not None
            if child.stdout.readline().strip() != "connected":
                raise SystemExit("the subscribers did not connect")
            time.sleep(1.0)
            before = set(feed.published)
            per_tick = max(1, round(args.rate / 10))
            paced = prepared[args.vaas : 2 * args.vaas]
            started = time.monotonic()
            for tick, first in enumerate(range(0, len(paced), per_tick)):
                time.sleep(max(0.0, started + tick / 10 - time.monotonic()))
                write(paced[first : first + per_tick])
            time.sleep(2.0)
            paced_cursors = set(feed.published) - before
            with_subscribers = write(prepared[2 * args.vaas :])
            timer = threading.Timer(60, child.stdin.close)  # at most a minute for the rest
            timer.start()
            arrivals: list[dict[str, float]] = json.loads(child.stdout.readline())
            timer.cancel()
            latencies = [
                seen[cursor] - published
                for seen in arrivals
                for cursor, published in feed.published.items()
                if cursor in paced_cursors and cursor in seen
            ]
            expected = len(paced) * args.subscribers
            reads = FeedReads(tables)
            cursors = sorted(feed.published)
            floor: list[float] = []
            for sample in range(args.samples):
                start = (sample * per_tick) % max(1, len(cursors) - per_tick)
                started = time.perf_counter()
                found_cursors = reads.feed_after(cursors[start], per_tick)
                reads.rows([c.split(":", 1)[1] for c in found_cursors])
                floor.append(time.perf_counter() - started)
    finally:
        if child is not None:
            child.kill()
            child.wait(10)
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
        drop_tables(settings)
    ratio = with_subscribers / alone if alone else 0.0
    p99 = _percentile(latencies, 0.99) * 1000
    print(
        f"stream writer          alone {alone:8.1f}/s | with {args.subscribers} subscribers "
        f"{with_subscribers:8.1f}/s | ratio {ratio:.2f} "
        f"({'meets' if ratio >= 0.9 else 'below'} the 0.9 goal)"
    )
    print(
        f"stream delivery        {args.rate:g} VAAs/s: {len(latencies)}/{expected} delivered  p50 "
        f"{_percentile(latencies, 0.5) * 1000:7.2f} ms  p99 {p99:7.2f} ms | hub's store reads "
        f"p99 {_percentile(floor, 0.99) * 1000:7.2f} ms "
        f"({'meets' if p99 <= 50 and len(latencies) == expected else 'misses'} the 50 ms goal)"
    )


def _subscribe_main(base: str, count: int, expected: int) -> None:
    """The subscribers' own process: connect, say so, collect ``expected`` events per client
    (or until stdin closes), print the arrivals as JSON."""
    subscribers = _Subscribers(base, count)
    subscribers.start()
    print("connected", flush=True)
    stop_reading = threading.Thread(target=sys.stdin.read, daemon=True)
    stop_reading.start()
    while stop_reading.is_alive() and min(len(a) for a in subscribers.arrivals) < expected:
        time.sleep(0.05)
    subscribers.stop()
    print(json.dumps(subscribers.arrivals), flush=True)


if __name__ == "__main__":
    _subscribe_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
