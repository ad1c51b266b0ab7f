"""Ledger API throughput over HTTP against the same backend calls made directly.

1. The workload generator makes N ledgers after ledger 38129's real state and the ETL loads them
   into a SQLite file (not timed).
2. ``chainloom ledger api`` serves that file from its own process (as it runs in production).
3. For each workload, 16 concurrent clients (aiohttp, one connection each) send requests for a
   fixed time; then 16 threads of this process make the backend calls the method makes
   (``fetch_ledger_page`` for ``ledger_data``; ``fetch_account_transactions`` for ``account_tx``)
   on their own backend, for the same time.

   * ``ledger_data``: every client walks the newest ledger's whole state page by page (limit
     256, JSON and binary separately), starting over at the end;
   * ``account_tx``: each request asks for the 20 newest transactions of one of the accounts
     with history (round robin).

Printed per workload: requests/s and p50/p99 latency over HTTP and direct, and HTTP / direct
(goal >= 0.5 at 16 clients).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIRST = 38129


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _load(path: Path, ledgers: int, txs: int, vectors: Path) -> None:
    from chainloom.ledger.config import DatabaseSettings, SqliteSettings
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom.ledger.sources.file import FileLedgerSource
    from chainloom.testing.ledger_generator import WorkloadGenerator, vectors_ledger

    initial = vectors_ledger(vectors, FIRST)
    generator = WorkloadGenerator(initial, seed=3, txs_per_ledger=txs)
    dump = path.with_suffix(".jsonl")
    with DumpWriter(dump) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)
    backend = make_backend(DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(path))))
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run()
    finally:
        backend.close()
        source.close()


def _start_server(path: Path, workers: int) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "chainloom", "ledger", "api", "--sqlite-path", str(path)]
    command += ["--port", "0", "--workers", str(workers)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r":(\d+)/", line)
    if not found:
        process.kill()
        raise SystemExit(f"the API did not start: {line.strip()}")
    return process, int(found.group(1))


async def _http_run(
    url: str, clients: int, seconds: float, next_body: Callable[[int, dict[str, Any]], bytes]
) -> list[float]:
    import aiohttp
    import orjson

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
                result = orjson.loads(payload)["result"]
                if result.get("status") != "success":
                    raise SystemExit(f"request failed: {result}")
                state["last"] = result

        tasks: list[Awaitable[None]] = [client(n) for n in range(clients)]
        await asyncio.gather(*tasks)
    return latencies


def _direct_run(
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


def _report(name: str, seconds: float, http: list[float], direct: list[float]) -> None:
    http_rate, direct_rate = len(http) / seconds, len(direct) / seconds
    ratio = http_rate / direct_rate if direct_rate else 0.0
    print(
        f"{name:22} HTTP {http_rate:8.1f}/s  p50 {_percentile(http, 0.5) * 1000:7.1f} ms  "
        f"p99 {_percentile(http, 0.99) * 1000:7.1f} ms | direct {direct_rate:8.1f}/s  "
        f"p50 {_percentile(direct, 0.5) * 1000:7.1f} ms  p99 "
        f"{_percentile(direct, 0.99) * 1000:7.1f} ms | ratio {ratio:.2f} "
        f"({'meets' if ratio >= 0.5 else 'below'} the 0.5 goal)"
    )


def main() -> None:
    """Run the bench and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=20)
    parser.add_argument("--txs-per-ledger", type=int, default=60)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--vectors",
        type=Path,
        default=Path(os.environ.get("CHAINLOOM_VECTORS", REPO.parent / "shared" / "vectors")),
    )
    args = parser.parse_args()
    vectors = args.vectors / "xrpl_vectors.json" if args.vectors.is_dir() else args.vectors

    import orjson

    from chainloom.ledger.config import DatabaseSettings, SqliteSettings
    from chainloom.ledger.service import make_backend
    from chainloom.ledger.xrpl.address import encode_account
    from chainloom.ledger.xrpl.parse import parse_metadata

    with tempfile.TemporaryDirectory(prefix="bench-api-") as directory:
        path = Path(directory) / "ledger.db"
        _load(path, args.ledgers, args.txs_per_ledger, vectors)
        config = DatabaseSettings(
            type="sqlite", sqlite=SqliteSettings(path=str(path)), read_only=True
        )
        backend = make_backend(config)
        stored = backend.fetch_ledger_range()
        assert stored is not None
        last = stored.max_sequence
        accounts: set[bytes] = set()
        for sequence in range(stored.min_sequence + 1, last + 1):
            for tx in backend.fetch_all_transactions_in_ledger(sequence):
                accounts |= parse_metadata(tx.metadata).affected_accounts
        account_list = sorted(accounts)
        addresses = [encode_account(account) for account in account_list]
        print(
            f"{args.ledgers} ledgers x {args.txs_per_ledger} txs on SQLite, {len(account_list)} "
            f"accounts, {args.clients} clients, {args.seconds:.0f}s per run"
        )
        process, port = _start_server(path, args.clients)
        url = f"http://127.0.0.1:{port}/"
        try:
            for binary_form in (False, True):
                name = f"ledger_data{' binary' if binary_form else ''}"

                def page_body(
                    number: int, state: dict[str, Any], binary_form: bool = binary_form
                ) -> bytes:
                    del number
                    params: dict[str, Any] = {
                        "ledger_index": last,
                        "limit": 256,
                        "binary": binary_form,
                    }
                    previous = state.get("last")
                    if previous is not None and "marker" in previous:
                        params["marker"] = previous["marker"]
                    return orjson.dumps({"method": "ledger_data", "params": [params]})

                def page_direct(number: int, state: dict[str, Any]) -> None:
                    del number
                    page = backend.fetch_ledger_page(state.get("cursor"), last, 256)
                    state["cursor"] = page.cursor

                http = asyncio.run(_http_run(url, args.clients, args.seconds, page_body))
                direct = _direct_run(args.clients, args.seconds, page_direct)
                _report(name, args.seconds, http, direct)

            def tx_body(number: int, state: dict[str, Any]) -> bytes:
                index = state["i"] = state.get("i", number) + args.clients
                params = {"account": addresses[index % len(addresses)], "limit": 20}
                return orjson.dumps({"method": "account_tx", "params": [params]})

            def tx_direct(number: int, state: dict[str, Any]) -> None:
                index = state["i"] = state.get("i", number) + args.clients
                backend.fetch_account_transactions(
                    account_list[index % len(account_list)], 20, False
                )

            http = asyncio.run(_http_run(url, args.clients, args.seconds, tx_body))
            direct = _direct_run(args.clients, args.seconds, tx_direct)
            _report("account_tx", args.seconds, http, direct)
        finally:
            process.terminate()
            process.wait(timeout=30)
            backend.close()


if __name__ == "__main__":
    main()
