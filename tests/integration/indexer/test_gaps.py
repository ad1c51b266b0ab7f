"""Gap detection and recovery of the indexer against real servers: ``chainloom-dev spy serve``
dropping chosen sequences on purpose, the harness's public-API server on loopback, the
Bigtable emulator, and the indexer in-process or as ``chainloom indexer run``."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from chainloom.backoff import Backoff
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.queries import EventReader
from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.service import serve
from chainloom.publicrpc import PublicRpcClient
from chainloom.relayer.config import RecoverySettings
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.model import Table
from chainloom.relayer.recovery import MissedVaaRecovery
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from chainloom.settings import BigtableSettings, PublicRpcSettings
from chainloom.spy.client import SpyClient
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, parse_vaa
from chainloom_dev.net import free_port
from chainloom_dev.sim.publicrpc_server import PublicRpcServer, PublicRpcServicer, message_id_of
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from tests.ingest_support import (
    GUARDIANS,
    MIN_FEE,
    SOURCE_CHAIN,
    TARGET_CHAIN,
    dev_policy,
    signed_transfer,
)
from tests.integration.indexer.conftest import (
    CHAINLOOM,
    CHAINLOOM_DEV,
    KIT,
    IndexerProcess,
    SpyProcess,
    Store,
    contents,
    serve_spy,
    write_directly,
    write_vaa_file,
)

MessageId = tuple[int, str, int]
TRANSFERS = Mix(weights={"token_transfer": 1.0}, duplicate=0.0, conflict=0.0)
FAST_GAPS = {"grace": 1.0, "check_interval": 0.3, "state_interval": 0.5, "retry_after": 300}


def transfers(count: int, seed: int) -> dict[MessageId, bytes]:
    return {message_id_of(raw): raw for raw in generate_vaas(count, seed, KIT, TRANSFERS)}


def pick_holes(ids: list[MessageId], count: int) -> list[MessageId]:
    """``count`` ids strictly inside their emitter's sequences (a hole the tracker can see)."""
    lowest: dict[tuple[int, str], int] = {}
    highest: dict[tuple[int, str], int] = {}
    for chain, emitter, sequence in ids:
        lowest[(chain, emitter)] = min(lowest.get((chain, emitter), sequence), sequence)
        highest[(chain, emitter)] = max(highest.get((chain, emitter), sequence), sequence)
    inside = [i for i in sorted(ids) if lowest[i[:2]] + 1 < i[2] < highest[i[:2]]]
    step = len(inside) / count
    holes = [inside[int(n * step)] for n in range(count)]
    assert len(set(holes)) == count
    return holes


def spy_dropping(
    source: Path, port: int, drop: list[MessageId], *, subscribers: int = 1
) -> SpyProcess:
    selections = [arg for c, e, s in drop for arg in ("--drop", f"{c}/{e}/{s}")]
    process = subprocess.Popen(
        [CHAINLOOM_DEV, "spy", "serve", "--listen", f"127.0.0.1:{port}", "--file", str(source),
         "--copies", "3", "--lossless", "--wait-for-subscribers", str(subscribers),
         *selections],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return SpyProcess(port, process)


def stored(settings: BigtableSettings) -> set[MessageId]:
    with BigtableTables(settings) as tables:
        reader = EventReader(tables)
        return {(c, e, s) for c, e in reader.emitters() for s in reader.sequences(c, e)}


def events_gaps(store: Store) -> dict[str, Any]:
    answer = subprocess.run(
        [CHAINLOOM, "events", "--project", "chainloom", "--instance", "test",
         "--table", store.settings.table, "gaps", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    result: dict[str, Any] = json.loads(answer.stdout)
    return result


def bigtable(store: Store) -> dict[str, Any]:
    return {
        "project": store.settings.project,
        "instance": store.settings.instance,
        "table": store.settings.table,
        "index_table": store.settings.index_table,
        "operation_timeout": 10,
    }


def in_process_settings(
    store: Store, guardian_file: Path, spy_address: str, public_rpc: str
) -> IndexerSettings:
    """An in-process indexer's settings: fast gap checks, one public RPC round, no probes."""
    return IndexerSettings.model_validate(
        {
            "bigtable": bigtable(store),
            "guardian_sets": {"source": str(guardian_file)},
            "spy": {"address": spy_address, "reconnect": {"initial": 0.05, "maximum": 0.5}},
            "probes": {"enabled": False},
            "gaps": FAST_GAPS,
            "public_rpc": {"endpoints": [public_rpc], "timeout": 2, "rounds": 1},
        }
    )


class Written:
    def __init__(self, wanted: set[MessageId]) -> None:
        self.wanted = set(wanted)
        self.done = asyncio.Event()

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        self.wanted.discard((chain, emitter.hex(), sequence))
        if not self.wanted:
            self.done.set()


def test_fifty_sequences_the_spy_dropped_are_fetched_after_the_grace_period(
    store: Store, guardian_file: Path, tmp_path: Path
) -> None:
    vaas = transfers(240, seed=1403)
    ids = sorted(vaas)
    holes = pick_holes(ids, 50)
    spy = spy_dropping(write_vaa_file(tmp_path / "vaas.txt", list(vaas.values())), free_port(),
                       holes)  # fmt: skip
    servicer = PublicRpcServicer(vaas)
    with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
        settings = in_process_settings(store, guardian_file, spy.address, public_api.target)

        async def scenario() -> Any:
            written = Written(set(ids))
            stop = asyncio.Event()
            started = time.monotonic()
            running = asyncio.create_task(serve(settings, stop, observers=[written]))
            await asyncio.wait_for(written.done.wait(), 120)
            took = time.monotonic() - started
            stop.set()
            return await running, took

        try:
            pipeline, took = asyncio.run(scenario())
        finally:
            spy.stop()
    assert took >= FAST_GAPS["grace"]  # nothing was fetched before the grace period
    assert stored(store.settings) == set(ids)
    assert pipeline.counters.gaps_filled == 50
    assert servicer.counters.found == 50  # only the dropped ones were asked for, once each
    listed = events_gaps(store)
    assert listed["source"] == "state"
    assert listed["gaps"] == []
    assert listed["missing"] == 0


def test_one_spy_dropping_fifty_both_the_store_and_the_relayers_incoming_recover_them(
    store: Store, guardian_file: Path, tmp_path: Path, redis_url: str
) -> None:
    """The issue's scenario end to end: one ``chainloom-dev spy serve`` drops 50 sequences of the
    dev token bridge and both the indexer and the relayer's listener subscribe to it; one
    public-API server holds everything. After the grace period the store has all 100, and
    Incoming has every relayable one (every 10th pays too low a fee and is not relayable),
    the 45 recovered ones included, each queued once."""
    vaas = [
        signed_transfer(s, fee=MIN_FEE - 1 if s % 10 == 0 else MIN_FEE).to_bytes()
        for s in range(100)
    ]
    by_id = {message_id_of(raw): raw for raw in vaas}
    holes = [(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER.hex(), s) for s in range(25, 75)]
    relayable = {parse_vaa(raw).digest_hex for s, raw in enumerate(vaas) if s % 10}
    source = write_vaa_file(tmp_path / "vaas.txt", vaas)
    spy = spy_dropping(source, free_port(), holes, subscribers=2)
    servicer = PublicRpcServicer(by_id)
    client = redis.Redis.from_url(redis_url)
    intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client))
    try:
        with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
            settings = in_process_settings(store, guardian_file, spy.address, public_api.target)
            recovery = MissedVaaRecovery(
                frozenset({(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)}),
                RecoverySettings(grace=1.0, check_interval=0.3, retry_after=300),
                PublicRpcClient(PublicRpcSettings(endpoints=(public_api.target,), timeout=2)),
            )
            listener = Listener(
                intake,
                spy=SpyClient(
                    spy.address,
                    [EmitterKey(SOURCE_CHAIN, DEV_TOKEN_BRIDGE_EMITTER)],
                    backoff=Backoff(initial=0.05, maximum=0.5, jitter=0.5),
                ),
                recovery=recovery,
            )

            async def scenario() -> tuple[Any, dict[str, Any]]:
                written = Written(set(by_id))
                stop = asyncio.Event()
                await listener.start()
                try:
                    indexing = asyncio.create_task(serve(settings, stop, observers=[written]))
                    async with asyncio.timeout(120):
                        await written.done.wait()
                        while recovery.book.missing() or recovery.counters.fetched < len(holes):
                            await asyncio.sleep(0.05)
                    stop.set()
                    return await indexing, listener.stats()
                finally:
                    await listener.stop()

            pipeline, stats = asyncio.run(scenario())
        tables = RelayTables(client)
        assert tables.depths()[Table.INCOMING] == {TARGET_CHAIN: len(relayable)}
        assert all(tables.locate(digest) is Table.INCOMING for digest in relayable)
    finally:
        spy.stop()
        client.close()
    assert stored(store.settings) == set(by_id)
    assert pipeline.counters.gaps_filled == 50
    assert (stats["recovery"]["fetched"], stats["recovery"]["queued"]) == (50, 45)
    assert servicer.counters.found == 2 * 50  # each dropped sequence asked once by each


def labelled(indexer: IndexerProcess, line_start: str) -> float:
    _, text = indexer.get("/metrics")
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[1])
    return 0.0


def wait_metrics(indexer: IndexerProcess, wanted: dict[str, float], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert indexer.process is not None
        assert indexer.process.poll() is None, indexer.output()
        try:
            if all(labelled(indexer, name) >= value for name, value in wanted.items()):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"metrics not reached {wanted}: {indexer.output()[-2000:]}")


def test_not_found_and_failing_gaps_stay_listed_with_reasons_across_a_restart(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    vaas = transfers(200, seed=1404)
    ids = sorted(vaas)
    holes = pick_holes(ids, 50)
    withheld, failing = set(holes[0::5]) | set(holes[1::5]), set(holes[2::5])
    served = set(holes) - withheld - failing
    spy = spy_dropping(write_vaa_file(tmp_path / "vaas.txt", list(vaas.values())), free_port(),
                       holes)  # fmt: skip
    servicer = PublicRpcServicer(vaas, withhold=withheld, fail=failing)
    env = {"BIGTABLE_EMULATOR_HOST": store.emulator}
    with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
        document = {
            "bigtable": bigtable(store),
            "spy": {"address": spy.address, "reconnect": {"initial": 0.05, "maximum": 0.5}},
            "gaps": FAST_GAPS,
            "public_rpc": {
                "endpoints": [public_api.target],
                "timeout": 2,
                "rounds": 2,
                "backoff": {"initial": 0.05, "maximum": 0.1},
            },
        }
        first = indexer_process(document, env=env)
        first.start()
        try:
            wait_metrics(
                first,
                {
                    "chainloom_indexer_gaps_filled_total": len(served),
                    'chainloom_indexer_gaps_failed_total{status="not_found"}': len(withheld),
                    'chainloom_indexer_gaps_failed_total{status="error"}': len(failing),
                },
            )
            # Fetched VAAs are counted when handed on; their gaps close when the write returns.
            deadline = time.monotonic() + 30
            while labelled(first, "chainloom_indexer_gaps_open") > len(withheld | failing):
                assert time.monotonic() < deadline, first.output()[-2000:]
                time.sleep(0.2)
            assert labelled(first, "chainloom_indexer_gaps_open") == len(withheld | failing)
            first.signal(signal.SIGTERM)
            assert first.wait(60) == 0, first.output()

            # Stopped: the gaps are listed from the saved state, each with its reason.
            listed = events_gaps(store)
            assert listed["source"] == "state"
            assert listed["missing"] == len(withheld | failing)
            failures = {
                (g["chain"], g["emitter"], f["sequence"]): f
                for g in listed["gaps"]
                for f in g["failures"]
            }
            assert set(failures) == withheld | failing
            assert all(failures[i]["status"] == "not_found" for i in withheld)
            assert all("not found at" in failures[i]["reason"] for i in withheld)
            assert all(failures[i]["status"] == "error" for i in failing)
            assert all("INTERNAL" in failures[i]["reason"] for i in failing)
            assert all(f["attempts"] == 1 for f in failures.values())
            assert stored(store.settings) == set(ids) - withheld - failing

            # Restarted, with the spy sending nothing new: the gaps known only from the saved
            # state are asked again (retry_after 0 now) and filled once the API holds them.
            servicer.withhold.clear()
            servicer.fail.clear()
            second = indexer_process({**document, "gaps": {**FAST_GAPS, "retry_after": 0}},
                                     env=env)  # fmt: skip
            second.start()
            wait_metrics(second, {"chainloom_indexer_gaps_filled_total": len(withheld | failing)})
            second.signal(signal.SIGTERM)
            assert second.wait(60) == 0, second.output()
        finally:
            spy.stop()
    assert stored(store.settings) == set(ids)
    listed = events_gaps(store)
    assert listed["source"] == "state"
    assert listed["missing"] == 0


def test_an_endpoint_that_never_answers_delays_each_fetch_by_its_timeout_and_not_the_stop(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    """The first endpoint accepts connections and never answers (a listening socket nobody
    serves); the second is the public-API server. Every fetch waits out the first one's
    timeout, then the second answers: what it holds is filled, what it withholds stays listed
    as an error naming both answers. A SIGTERM while the fetches keep going (``retry_after``
    0) ends the process within one fetch's timeouts plus the drain, with exit 0."""
    vaas = transfers(60, seed=1407)
    ids = sorted(vaas)
    holes = pick_holes(ids, 6)
    withheld = set(holes[:2])
    spy = spy_dropping(write_vaa_file(tmp_path / "vaas.txt", list(vaas.values())), free_port(),
                       holes)  # fmt: skip
    servicer = PublicRpcServicer(vaas, withhold=withheld)
    with socket.create_server(("127.0.0.1", 0), backlog=16) as silent:
        silent_target = f"127.0.0.1:{silent.getsockname()[1]}"
        with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
            indexer = indexer_process(
                {
                    "bigtable": bigtable(store),
                    "spy": {"address": spy.address, "reconnect": {"initial": 0.05, "maximum": 0.5}},
                    "gaps": {**FAST_GAPS, "retry_after": 0},
                    "public_rpc": {
                        "endpoints": [silent_target, public_api.target],
                        "timeout": 1,
                        "rounds": 1,
                    },
                    "drain_timeout": 5,
                },
                env={"BIGTABLE_EMULATOR_HOST": store.emulator},
            )
            indexer.start()
            try:
                wait_metrics(
                    indexer,
                    {
                        "chainloom_indexer_gaps_filled_total": len(holes) - len(withheld),
                        'chainloom_indexer_gaps_failed_total{status="error"}': 2 * len(withheld),
                    },
                )
                asked = servicer.counters.calls
                stopping = time.monotonic()
                indexer.signal(signal.SIGTERM)
                assert indexer.wait(30) == 0, indexer.output()
                took = time.monotonic() - stopping
            finally:
                spy.stop()
    # One fetch (the silent endpoint's timeout, then the other's) + the drain bound + the
    # process's own exit on a loaded machine; a fetch that hung would stop it for good.
    assert took < 2 + 5 + 8, (took, indexer.output())
    assert asked > len(holes)  # the withheld ones were being asked again when stopped
    assert servicer.counters.found == len(holes) - len(withheld)
    assert stored(store.settings) == set(ids) - withheld
    listed = events_gaps(store)
    failures = {
        (g["chain"], g["emitter"], f["sequence"]): f for g in listed["gaps"] for f in g["failures"]
    }
    assert set(failures) == withheld
    for failure in failures.values():
        assert failure["status"] == "error"
        assert f"{silent_target}: DEADLINE_EXCEEDED" in failure["reason"]
        assert f"not found at {public_api.target}" in failure["reason"]
        assert failure["attempts"] >= 2


def test_what_the_spy_sent_while_the_indexer_was_killed_is_found_from_the_saved_state(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    """Sequences 0-119 of the dev token bridge. A spy streams 0-59 slowly and the indexer is
    SIGKILLed at a random point of it (its gap state saved every 0.5 s, so it lags what is
    written); 60-79 are sent while it is down, to nobody; the restarted indexer hears 80-119
    from a new spy. The first of those opens a hole from the last saved sequence, which the
    public API fills: the store ends with all 120, as the event writer's clean run."""
    vaas = [signed_transfer(s).to_bytes() for s in range(120)]
    ids = {message_id_of(raw) for raw in vaas}
    servicer = PublicRpcServicer({message_id_of(raw): raw for raw in vaas})
    spy_port = free_port()
    rng = random.Random(1408)
    with PublicRpcServer(servicer, "127.0.0.1:0") as public_api:
        document = {
            "bigtable": bigtable(store),
            "spy": {
                "address": f"127.0.0.1:{spy_port}",
                "reconnect": {"initial": 0.05, "maximum": 0.2},
            },
            "batch": {"rows": 5, "latency": 0.05},
            "gaps": FAST_GAPS,
            "public_rpc": {"endpoints": [public_api.target], "timeout": 2, "rounds": 1},
        }
        env = {"BIGTABLE_EMULATOR_HOST": store.emulator}
        first = indexer_process(document, env=env)
        spy = serve_spy(write_vaa_file(tmp_path / "first.txt", vaas[:60]), spy_port, copies=3,
                        rate=30)  # fmt: skip
        first.start()
        try:
            first.wait_for_metric("chainloom_indexer_vaas_written_total", 10)
            time.sleep(1.0)  # at least one save of the state after the first writes
            first.wait_for_metric("chainloom_indexer_vaas_written_total", rng.randrange(30, 55))
            first.signal(signal.SIGKILL)
            first.wait(30)
        finally:
            spy.stop()
        assert servicer.counters.calls == 0  # nothing was missing while it ran
        before = stored(store.settings)
        assert ids - before  # the kill and the downtime lost something

        second = indexer_process(document, env=env)
        spy = serve_spy(write_vaa_file(tmp_path / "rest.txt", vaas[80:]), spy_port, copies=3)
        second.start()
        try:
            wait_metrics(second, {"chainloom_indexer_gaps_filled_total": 20})
            deadline = time.monotonic() + 60
            while stored(store.settings) != ids:
                assert time.monotonic() < deadline, second.output()[-2000:]
                time.sleep(0.3)
            filled = labelled(second, "chainloom_indexer_gaps_filled_total")
            second.signal(signal.SIGTERM)
            assert second.wait(60) == 0, second.output()
        finally:
            spy.stop()
    streamed_again = {message_id_of(raw) for raw in vaas[80:]}
    assert servicer.counters.found == filled >= len(ids - before - streamed_again)
    assert events_gaps(store)["missing"] == 0
    write_directly(store.reference, vaas, rows=5)
    assert contents(store.settings) == contents(store.reference)
