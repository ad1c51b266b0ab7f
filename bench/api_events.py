"""The events API's reads over HTTP against the bare server's (``bench/api.py --part events``).

A fresh pair of tables on the local stack's emulator gets ``--vaas`` dev-guardian VAAs (8 emitters
on 3 chains, a tx id each) through the event writer (not timed), dropped at the end.
``chainloom events api`` serves them from its own process and :mod:`bench.bare_events` serves
the bare reads of each workload from another, on the same web stack with the same thread pool:

* by id: ``GET /api/v1/vaas/{chain}/{emitter}/{seq}`` round robin over every stored message,
  against the one-row read the route makes (``StoreReads.message``);
* filtered list pages: ``GET /api/v1/vaas?sourceChain=C&order=asc&from=T&pageSize=20`` from
  starting points spread through the messages, against the reads such a page makes (the filter
  index scan of 21 rows of ``fa:src:C:``, then one ReadRows of the page's 20 rows).

16 aiohttp clients send to the API, then to the bare server, alternated ``--rounds`` times (the
best round of each side): API / bare server is the ratio checked (goal >= 0.5). 16 threads of
this process making the same reads directly are printed beside, for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from bench.api import against_bare_http, direct_run, report, start_bare_events, started

GOAL = 0.5
FIRST_MOMENT = 1_700_000_000
"""The first stored VAA's timestamp (unix seconds); the n-th is n seconds later."""


async def http_get_run(base: str, clients: int, seconds: float, paths: list[str]) -> list[float]:
    """``clients`` aiohttp clients GETting ``paths`` round robin for ``seconds``; each answer
    must be a 200."""
    import aiohttp

    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:

        async def client(number: int) -> None:
            index = number
            while time.perf_counter() < deadline:
                path = paths[index % len(paths)]
                index += clients
                started = time.perf_counter()
                async with session.get(base + path) as reply:
                    await reply.read()
                    status = reply.status
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    raise SystemExit(f"GET {path} answered {status}")

        await asyncio.gather(*(client(n) for n in range(clients)))
    return latencies


def events_bench(args: argparse.Namespace) -> None:
    """Store the VAAs, start both servers, bench both workloads, drop the tables."""
    from chainloom.eventstore.bigtable import BigtableTables, drop_tables, ensure_schema
    from chainloom.eventstore.keys import MessageKey
    from chainloom.eventstore.writer import EventWriter
    from chainloom.settings import BigtableSettings
    from chainloom.wormhole import mainnet_emitters
    from chainloom_dev.sim.dev_guardians import DevGuardians

    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    if not os.environ.get("BIGTABLE_EMULATOR_HOST"):
        raise SystemExit('set BIGTABLE_EMULATOR_HOST (eval "$(chainloom-dev stack env)")')
    table = f"bench-api-{uuid.uuid4().hex[:10]}"
    settings = BigtableSettings(project="chainloom", instance="local", table=table)
    ensure_schema(settings)
    kit = DevGuardians()
    emitters = [bytes(31) + bytes([n + 1]) for n in range(8)]
    keys: list[MessageKey] = []
    try:
        with BigtableTables(settings) as tables:
            with EventWriter(tables, kit.sets(0), emitters=mainnet_emitters()) as writer:
                for number in range(args.vaas):
                    vaa = kit.sign(
                        emitter_chain=2 + number % 3,
                        emitter_address=emitters[number % len(emitters)],
                        sequence=number // len(emitters),
                        payload=b"bench %d" % number + bytes(100),
                        timestamp=FIRST_MOMENT + number,
                    )
                    writer.submit(vaa.to_bytes(), initiating_tx_id=f"0x{number:064x}")
                    keys.append(MessageKey.parse(vaa.message_id))
            print(
                f"{len(keys)} VAAs in Bigtable (emulator), {args.clients} clients, "
                f"{args.seconds:.0f}s per run, {args.rounds} alternated rounds against the "
                "bare server"
            )
            _bench_servers(args, tables, table, keys)
    finally:
        drop_tables(settings)


def _bench_servers(args: argparse.Namespace, tables: Any, table: str, keys: list[Any]) -> None:
    from chainloom.eventstore.queries import EventReader

    env = dict(os.environ) | {
        "CHAINLOOM_BIGTABLE__PROJECT": "chainloom",
        "CHAINLOOM_BIGTABLE__INSTANCE": "local",
        "CHAINLOOM_BIGTABLE__TABLE": table,
        "CHAINLOOM_API__WORKERS": str(args.clients),
    }
    command = ["-m", "chainloom", "events", "api", "--port", "0"]
    processes = []
    try:
        api, api_port = started(command, "the events API", env=env)
        processes.append(api)
        bare, bare_port = start_bare_events(table, args.clients)
        processes.append(bare)
        base, bare_base = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{bare_port}"

        def gets(url: str, paths: list[str]) -> list[float]:
            return asyncio.run(http_get_run(url, args.clients, args.seconds, paths))

        def both(name: str, paths: list[str], bare_paths: list[str]) -> list[float]:
            """The API's best round of ``paths`` against the bare server's of ``bare_paths``."""
            api_run, bare_run = (lambda: gets(base, paths)), (lambda: gets(bare_base, bare_paths))
            return against_bare_http(name, args, api_run, bare_run, goal=GOAL)

        best = both(
            "events vaa by id",
            [f"/api/v1/vaas/{k.chain}/{k.emitter}/{k.sequence}" for k in keys],
            [f"/vaa/{k.chain}/{k.emitter}/{k.sequence}" for k in keys],
        )
        reader = EventReader(tables)

        def read(number: int, state: dict[str, Any]) -> None:
            index = state["i"] = state.get("i", number) + args.clients
            if reader.get(keys[index % len(keys)]) is None:
                raise SystemExit("a stored row was not found")

        direct = direct_run(args.clients, args.seconds, read)
        report("events vaa by id", args.seconds, best, direct, goal=None, against="in-process")
        _filtered_pages(args, tables, len(keys), both)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
            assert process.stderr is not None
            process.stderr.close()


def _filtered_pages(
    args: argparse.Namespace,
    tables: Any,
    count: int,
    both: Callable[[str, list[str], list[str]], list[float]],
) -> None:
    from bench.bare_events import filtered_page_rows

    starts = [(2 + n % 3, FIRST_MOMENT + n) for n in range(0, max(count - 200, 1), 37)]
    paths = [
        f"/api/v1/vaas?sourceChain={chain}&order=asc&pageSize=20&from="
        + dt.datetime.fromtimestamp(moment, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for chain, moment in starts
    ]
    best = both("events filtered page", paths, [f"/page/{c}/{m}" for c, m in starts])

    def page(number: int, state: dict[str, Any]) -> None:
        index = state["i"] = state.get("i", number) + args.clients
        chain, moment = starts[index % len(starts)]
        if len(filtered_page_rows(tables, chain, moment)) != 20:
            raise SystemExit("a filtered page was short")

    direct = direct_run(args.clients, args.seconds, page)
    report("events filtered page", args.seconds, best, direct, goal=None, against="in-process")
