"""REST ingest throughput of the relayer listener, with the Redis ceiling measured in the same run.

What it measures (``bench_rest()``, also called by ``bench/relayer.py``):

* **unique**: ``POST /v1/relay`` of distinct signed transfers (13 of 19 dev guardians), each
  fully validated - parse, 13 signature recoveries, payload and policy rules, ``locate``,
  the atomic Lua ``enqueue`` - by ``chainloom relayer listen`` running as its own process;
* **copies**: a spy-like stream, every transfer posted ``copies`` times with other signature
  subsets (the signature cache makes repeats cheap; all but the first answer 200 "known");
* **ceiling**: the same ``RelayTables.enqueue`` calls for the same requests, made directly on
  one pooled redis-py client in a loop - what the listener would do with no HTTP, no
  validation and no thread hand-off (the listener runs without a chain adapter here, so the
  enqueue is its only Redis call per request).

Prints requests/s for each and the ratios to the ceiling, and the listener process's CPU time
per request (user + system, from ``/proc``; Linux only): on a shared, loaded machine requests/s
swing with the load, the CPU cost of a request much less. Keys live under a private prefix
that is deleted afterwards. Run: ``.venv/bin/python bench/relayer_rest.py [--transfers N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from chainloom.relayer.model import RelayRequest
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.sim.dev_guardians import DevGuardians

SOURCE_CHAIN = 2
TARGET_CHAIN = 4
TOKEN = bytes(12) + bytes.fromhex("a0b86991c6218b36c1d19d4a2e9eb0ce3606eb48")


def _payload(sequence: int) -> bytes:
    return (
        b"\x01"
        + (10**8 + sequence).to_bytes(32, "big")
        + TOKEN
        + SOURCE_CHAIN.to_bytes(2, "big")
        + bytes(12)
        + b"\x42" * 20
        + TARGET_CHAIN.to_bytes(2, "big")
        + (1000).to_bytes(32, "big")
    )


def _redis_url(explicit: str | None) -> str:
    if explicit:
        return explicit
    configured = os.environ.get("CHAINLOOM_REDIS__URL")
    if configured:
        return configured
    from chainloom_dev.stack import manager

    running = manager.load_state().get("redis")
    if running is None:
        raise SystemExit("no Redis: run `chainloom-dev stack up` or set CHAINLOOM_REDIS__URL")
    return f"redis://{running.address}/0"


def _sign_workload(
    guardians: DevGuardians, transfers: int, copies: int, seed: int
) -> tuple[list[bytes], list[bytes]]:
    """(unique VAAs, a shuffled spy-like stream with ``copies`` subsets of each)."""
    rng = random.Random(seed)
    base = seed * 10_000_000
    unique, stream = [], []
    for i in range(transfers):
        vaa = guardians.sign(
            emitter_chain=SOURCE_CHAIN,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=base + i,
            payload=_payload(i),
        )
        unique.append(vaa.to_bytes())
        copy_base = guardians.sign(
            emitter_chain=SOURCE_CHAIN,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=base + transfers + i,
            payload=_payload(i),
        )
        for _ in range(copies):
            signers = sorted(rng.sample(range(guardians.count), guardians.quorum))
            stream.append(guardians.resign(copy_base, signers=signers).to_bytes())
    rng.shuffle(stream)
    return unique, stream


def _config(directory: Path, redis_url: str, prefix: str, guardians: DevGuardians) -> Path:
    sets = directory / "guardian-sets.json"
    sets.write_text(json.dumps(guardians.sets().to_json()))
    config = directory / "relayer.json"
    config.write_text(
        json.dumps(
            {
                "redis": {"url": redis_url, "key_prefix": prefix},
                "rest": {"host": "127.0.0.1", "port": 0},
                "guardian_sets": {"source": str(sets)},
                "known_emitters": [
                    {"chain": SOURCE_CHAIN, "address": DEV_TOKEN_BRIDGE_EMITTER.hex()}
                ],
                "target_chains": [TARGET_CHAIN],
                "tokens": [{"chain": SOURCE_CHAIN, "address": TOKEN.hex(), "min_fee": 0}],
            }
        )
    )
    return config


async def _post_all(
    port: int, bodies: list[bytes], concurrency: int
) -> tuple[float, dict[int, int]]:
    import aiohttp

    statuses: dict[int, int] = {}
    position = 0
    url = f"http://127.0.0.1:{port}/v1/relay"
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal position
            while position < len(bodies):
                body = bodies[position]
                position += 1
                async with session.post(
                    url, data=body, headers={"Content-Type": "application/json"}
                ) as response:
                    await response.read()
                    statuses[response.status] = statuses.get(response.status, 0) + 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return len(bodies) / elapsed, statuses


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (None where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_ms_per_request(before: float | None, after: float | None, requests: int) -> float | None:
    if before is None or after is None:
        return None
    return (after - before) * 1000 / requests


def _ceiling(redis_url: str, prefix: str, vaas: list[bytes]) -> float:
    import redis

    from chainloom.relayer.tables import RelayTables
    from chainloom.wormhole import parse_vaa

    requests = []
    now = time.time()
    for raw in vaas:
        vaa = parse_vaa(raw)
        requests.append(
            RelayRequest(
                digest=vaa.digest_hex,
                vaa=raw,
                target_chain=TARGET_CHAIN,
                emitter_chain=vaa.emitter_chain,
                sequence=vaa.sequence,
                enqueued_at=now,
            )
        )
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client, prefix)
    start = time.perf_counter()
    for request in requests:
        tables.enqueue(request)
    elapsed = time.perf_counter() - start
    client.close()
    return len(requests) / elapsed


def _delete_prefix(redis_url: str, prefixes: list[str]) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    for prefix in prefixes:
        for pattern in (f"{{{prefix}}}*", f"{prefix}*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start : start + 500])
    client.close()


def bench_rest(
    redis_url: str | None = None,
    *,
    transfers: int = 1500,
    copies: int = 10,
    concurrency: int = 32,
    seed: int = 1,
) -> dict[str, Any]:
    """Measure and print REST ingest requests/s and the direct-enqueue ceiling; return them."""
    url = _redis_url(redis_url)
    guardians = DevGuardians()
    print(f"REST ingest bench: signing {transfers} transfers (+{copies} copies each) ...")
    unique, stream = _sign_workload(guardians, transfers, copies, seed)
    run_id = uuid.uuid4().hex[:8]
    rest_prefix = f"chainloom:bench-rest-{run_id}:v1"
    ceiling_prefix = f"chainloom:bench-ceiling-{run_id}:v1"
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as directory:
        config = _config(Path(directory), url, rest_prefix, guardians)
        listener = subprocess.Popen(
            [sys.executable, "-m", "chainloom.cli", "relayer", "listen", "--no-spy",
             "--config", str(config)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert listener.stderr is not None
            seen = ""  # a warning about Redis's persistence may come first
            while not (line := listener.stderr.readline()).startswith("listener: REST on"):
                seen += line
                if not line:
                    raise SystemExit(f"listener did not start: {seen}")
            port = int(line.rsplit(":", 1)[1])
            bodies = [json.dumps({"vaa": v.hex()}).encode() for v in unique]
            start_cpu = _cpu_seconds(listener.pid)
            figures["unique_rps"], figures["unique_statuses"] = asyncio.run(
                _post_all(port, bodies, concurrency)
            )
            middle_cpu = _cpu_seconds(listener.pid)
            figures["unique_cpu_ms"] = _cpu_ms_per_request(start_cpu, middle_cpu, len(bodies))
            bodies = [json.dumps({"vaa": v.hex()}).encode() for v in stream]
            figures["copies_rps"], figures["copies_statuses"] = asyncio.run(
                _post_all(port, bodies, concurrency)
            )
            end_cpu = _cpu_seconds(listener.pid)
            figures["copies_cpu_ms"] = _cpu_ms_per_request(middle_cpu, end_cpu, len(bodies))
        finally:
            listener.terminate()
            listener.wait(timeout=30)
            if listener.stderr is not None:
                listener.stderr.close()
    try:
        figures["ceiling_rps"] = _ceiling(url, ceiling_prefix, unique)
    finally:
        _delete_prefix(url, [rest_prefix, ceiling_prefix])

    ceiling = figures["ceiling_rps"]
    print(
        f"REST ingest, unique transfers (full validation + enqueue): "
        f"{figures['unique_rps']:,.0f} requests/s  statuses {figures['unique_statuses']}"
    )
    print(
        f"REST ingest, spy-like stream ({copies} copies per transfer): "
        f"{figures['copies_rps']:,.0f} requests/s  statuses {figures['copies_statuses']}"
    )
    if figures["unique_cpu_ms"] is not None and figures["copies_cpu_ms"] is not None:
        print(
            f"listener CPU per request: unique {figures['unique_cpu_ms']:.2f} ms, "
            f"copies {figures['copies_cpu_ms']:.2f} ms"
        )
    print(f"ceiling, the same enqueue calls made directly: {ceiling:,.0f} requests/s")
    print(
        f"ratio to ceiling: unique {figures['unique_rps'] / ceiling:.1%}, "
        f"copies {figures['copies_rps'] / ceiling:.1%}"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="default: $CHAINLOOM_REDIS__URL or the local stack")
    parser.add_argument("--transfers", type=int, default=1500)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    bench_rest(
        options.redis_url,
        transfers=options.transfers,
        copies=options.copies,
        concurrency=options.concurrency,
    )


if __name__ == "__main__":
    main()
