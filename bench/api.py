"""Ledger and events API throughput over HTTP against the same store calls made directly.

Ledger API (``--part ledger``):

1. The workload generator makes N ledgers after ledger 38129's real state and the ETL loads them
   into a SQLite file or (``--backend cassandra``) a fresh keyspace of the local stack's
   Cassandra, dropped at the end (not timed).
2. ``chainloom ledger api`` serves it from its own process (as it runs in production), and
   :mod:`bench.bare_http` serves the bare backend reads of each workload from another, on the
   same web stack with the same thread pools: the ceiling over HTTP.
3. For each workload, 16 concurrent clients (aiohttp, one connection each) send requests to the
   API, then the same clients the bare reads to the bare server, for a fixed time each,
   alternated ``--rounds`` times (the best round of each side): API / bare server is the ratio
   checked against the goal. Then 16 threads of this process make the bare reads themselves for
   as long, printed beside for reference (on SQLite a bare read is 15-30 µs, an HTTP request
   about a millisecond, so that ratio is mostly HTTP's cost).

   * ``ledger_data`` and ``account_tx``, JSON and binary (:mod:`bench.api_ledger`);
   * the newest-ledger reads answered from the cache (``account_info``, ``account_lines``,
     ``book_offers``, :mod:`bench.api_newest`; alone with ``--part newest``).

The binary forms compare the server's own work (parsing, hex) with the bare server's; the JSON
forms add decoding every object and transaction to JSON in Python, which the bare reads do not
do at all.

Events API (``--part events``, Bigtable: the local stack's emulator from
``chainloom-dev stack env``): :mod:`bench.api_events`, ``chainloom events api`` against
:mod:`bench.bare_events` in the same way, by id and filtered list pages.

Printed per workload: requests/s and p50/p99 latency of both sides and their ratio (goal >= 0.5
at 16 clients against the bare server; the in-process line is for reference).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIRST = 38129


def _stack_cassandra() -> str:
    hosts = json.loads(os.environ.get("CHAINLOOM_DATABASE__CASSANDRA__HOSTS", '["127.0.0.1"]'))
    port = os.environ.get("CHAINLOOM_DATABASE__CASSANDRA__PORT", "9042")
    return f"{hosts[0]}:{port}"


def _drop_keyspace(address: str, keyspace: str) -> None:
    from cassandra.cluster import Cluster

    host, _, port = address.rpartition(":")
    cluster = Cluster([host], port=int(port), protocol_version=5)
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    finally:
        cluster.shutdown()


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _load(config: Any, path: Path, ledgers: int, txs: int, vectors: Path) -> None:
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom.ledger.sources.file import FileLedgerSource
    from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger

    initial = vectors_ledger(vectors, FIRST)
    generator = WorkloadGenerator(initial, seed=3, txs_per_ledger=txs)
    dump = path.with_suffix(".jsonl")
    with DumpWriter(dump) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)
    backend = make_backend(config)
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run()
    finally:
        backend.close()
        source.close()


def _start_server(backend_flags: list[str], workers: int) -> tuple[subprocess.Popen[str], int]:
    command = ["-m", "chainloom", "ledger", "api", *backend_flags]
    # Every bench client is 127.0.0.1: its per-client budget must hold all of them (the bench
    # measures throughput, not fairness between clients).
    command += ["--port", "0", "--workers", str(workers), "--client-budget", "100000"]
    return started(command, "the API")


def start_bare_server(backend_flags: list[str], workers: int) -> tuple[subprocess.Popen[str], int]:
    """The HTTP ceiling, :mod:`bench.bare_http`, in its own process as the API is."""
    command = ["-m", "bench.bare_http", *backend_flags, "--port", "0"]
    return started([*command, "--workers", str(workers)], "the bare server")


def start_bare_events(table: str, workers: int) -> tuple[subprocess.Popen[str], int]:
    """The events API's HTTP ceiling, :mod:`bench.bare_events`, in its own process."""
    command = ["-m", "bench.bare_events", "--table", table, "--port", "0"]
    return started([*command, "--workers", str(workers)], "the bare events server")


def started(
    arguments: list[str], what: str, *, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """``python ARGUMENTS`` started from the repository, once its first stderr line names its
    port (``http://host:PORT/``)."""
    process = subprocess.Popen(
        [sys.executable, *arguments],
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ) if env is None else env,
        cwd=REPO,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r":(\d+)/", line)
    if not found:
        process.kill()
        raise SystemExit(f"{what} did not start: {line.strip()}")
    return process, int(found.group(1))


def _api_result(payload: bytes) -> dict[str, Any]:
    """A ledger API answer's ``result``; the bench stops on a failed call."""
    import orjson

    result: dict[str, Any] = orjson.loads(payload)["result"]
    if result.get("status") != "success":
        raise SystemExit(f"request failed: {result}")
    return result


def bare_answer(payload: bytes) -> dict[str, Any]:
    """A :mod:`bench.bare_http` answer."""
    import orjson

    answer: dict[str, Any] = orjson.loads(payload)
    return answer


async def http_run(
    url: str,
    clients: int,
    seconds: float,
    next_body: Callable[[int, dict[str, Any]], bytes],
    read: Callable[[bytes], dict[str, Any]] = _api_result,
) -> list[float]:
    """``clients`` aiohttp clients POSTing ``next_body``'s bodies to ``url`` for ``seconds``;
    each answer, as ``read`` decodes it, is ``state["last"]`` for the client's next body."""
    import aiohttp

    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:

        async def client(number: int) -> None:
            state: dict[str, Any] = {}
            while time.perf_counter() < deadline:
                body = next_body(number, state)
                started = time.perf_counter()
                async with session.post(url, data=body) as reply:
                    payload = await reply.read()
                latencies.append(time.perf_counter() - started)
                if reply.status != 200:
                    raise SystemExit(f"{url} answered {reply.status}: {payload[:200]!r}")
                state["last"] = read(payload)

        tasks: list[Awaitable[None]] = [client(n) for n in range(clients)]
        await asyncio.gather(*tasks)
    return latencies


def direct_run(
    clients: int, seconds: float, call: Callable[[int, dict[str, Any]], None]
) -> list[float]:
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def worker(number: int) -> None:
        state: dict[str, Any] = {}
        mine: list[float] = []
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            call(number, state)
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(worker, range(clients)))
    return latencies


def report(
    name: str,
    seconds: float,
    http: list[float],
    direct: list[float],
    *,
    goal: float | None = 0.5,
    label: str = "HTTP",
    against: str = "direct",
) -> None:
    """One line: rates and latencies of both sides and their ratio, against ``goal`` (None:
    shown for reference, not checked)."""
    http_rate, direct_rate = len(http) / seconds, len(direct) / seconds
    ratio = http_rate / direct_rate if direct_rate else 0.0
    if goal is None:
        verdict = "for reference, not the checked ratio"
    else:
        verdict = f"{'meets' if ratio >= goal else 'below'} the {goal} goal"
    print(
        f"{name:22} {label} {http_rate:8.1f}/s  p50 {_percentile(http, 0.5) * 1000:7.2f} ms  "
        f"p99 {_percentile(http, 0.99) * 1000:7.2f} ms | {against} {direct_rate:8.1f}/s  "
        f"p50 {_percentile(direct, 0.5) * 1000:7.2f} ms  p99 "
        f"{_percentile(direct, 0.99) * 1000:7.2f} ms | ratio {ratio:.2f} ({verdict})"
    )


def against_bare_http(
    name: str,
    args: argparse.Namespace,
    api: Callable[[], list[float]],
    bare: Callable[[], list[float]],
    *,
    goal: float,
) -> list[float]:
    """The checked ratio: the API over HTTP against the bare server over HTTP, alternated for
    ``args.rounds`` rounds, the best round of each side; the API's best round is returned."""
    best_api: list[float] = []
    best_bare: list[float] = []
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        best_api = max(best_api, api(), key=len)
        best_bare = max(best_bare, bare(), key=len)
        loads.append(os.getloadavg()[0])
    print(f"{name}: load average {min(loads):.1f}-{max(loads):.1f} (1 min)")
    report(name, args.seconds, best_api, best_bare, goal=goal, label="HTTP api",
           against="HTTP bare")  # fmt: skip
    return best_api


def main() -> None:
    """Run the bench and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=20)
    parser.add_argument("--txs-per-ledger", type=int, default=60)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--rounds", type=int, default=2, help="Alternated rounds of the API and the bare server."
    )
    parser.add_argument("--backend", choices=["sqlite", "cassandra"], default="sqlite")
    parser.add_argument(
        "--part",
        choices=["ledger", "newest", "events", "both", "stream"],
        default="both",
        help="Which API to bench (stream: the events API's push stream, bench/api_stream.py; "
        "newest: only the ledger API's reads of the newest ledger, bench/api_newest.py).",
    )
    parser.add_argument("--subscribers", type=int, default=100, help="Stream clients.")
    parser.add_argument("--batch", type=int, default=50, help="Writer batch for --part stream.")
    parser.add_argument("--samples", type=int, default=200, help="Direct reads for the floor.")
    parser.add_argument("--rate", type=float, default=50, help="Paced VAAs/s (--part stream).")
    parser.add_argument("--vaas", type=int, default=2000, help="VAAs stored for the events API.")
    parser.add_argument(
        "--cassandra",
        default=_stack_cassandra(),
        help="host:port of Cassandra (default: the local stack's, from `chainloom-dev stack env`)",
    )
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(os.environ.get("CHAINLOOM_VECTORS", REPO.parent / "shared" / "vectors")),
    )
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.part == "stream":
        sys.path.insert(0, str(REPO))  # run as a script: bench/ is not a package on the path
        from bench.api_stream import stream_bench

        stream_bench(args)
        return
    if args.part in ("events", "both"):
        sys.path.insert(0, str(REPO))  # run as a script: bench/ is not a package on the path
        from bench.api_events import events_bench

        events_bench(args)
    if args.part == "events":
        return
    vectors = args.vectors / "xrpl_vectors.json" if args.vectors.is_dir() else args.vectors

    from chainloom.ledger.config import DatabaseSettings, SqliteSettings
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.xrpl import keylets
    from chainloom.ledger.xrpl.parse import parse_metadata
    from chainloom.settings import CassandraSettings

    with tempfile.TemporaryDirectory(prefix="bench-api-") as directory:
        path = Path(directory) / "ledger.db"
        keyspace = f"bench_api_{uuid.uuid4().hex[:10]}"
        if args.backend == "sqlite":
            config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(path)))
            flags = ["--sqlite-path", str(path)]
        else:
            host, _, port = args.cassandra.rpartition(":")
            cassandra = CassandraSettings(
                hosts=(host,), port=int(port), keyspace=keyspace, replication_factor=1
            )
            config = DatabaseSettings(type="cassandra", cassandra=cassandra)
            flags = ["--backend", "cassandra", "--cassandra-hosts", args.cassandra]
            flags += ["--keyspace", keyspace]
        _load(config, path, args.ledgers, args.txs_per_ledger, vectors)
        config = config.model_copy(update={"read_only": True})
        backend = make_backend(config)
        stored = backend.fetch_ledger_range()
        assert stored is not None
        last = stored.max_sequence
        accounts: set[bytes] = set()
        for sequence in range(stored.min_sequence + 1, last + 1):
            for tx in backend.fetch_all_transactions_in_ledger(sequence):
                accounts |= parse_metadata(tx.metadata).affected_accounts
        account_list = [
            account
            for account in sorted(accounts)
            if backend.fetch_ledger_object(keylets.account_root(account), last) is not None
        ]
        print(
            f"{args.ledgers} ledgers x {args.txs_per_ledger} txs on {args.backend}, "
            f"{len(account_list)} accounts, {args.clients} clients, {args.seconds:.0f}s per run, "
            f"{args.rounds} alternated rounds against the bare server"
        )
        servers: list[subprocess.Popen[str]] = []
        try:
            process, port = _start_server(flags, args.clients)
            servers.append(process)
            bare_process, bare_port = start_bare_server(flags, args.clients)
            servers.append(bare_process)
            url = f"http://127.0.0.1:{port}/"
            bare_url = f"http://127.0.0.1:{bare_port}/"
            sys.path.insert(0, str(REPO))  # run as a script: bench/ is not a package on the path
            from bench.api_ledger import ledger_reads
            from bench.api_newest import newest_ledger_reads

            if args.part != "newest":
                ledger_reads(args, url, bare_url, backend, last, account_list)
            newest_ledger_reads(args, url, bare_url, backend, last, account_list)
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=30)
            backend.close()
            if args.backend == "cassandra":
                _drop_keyspace(args.cassandra, keyspace)


if __name__ == "__main__":
    main()
