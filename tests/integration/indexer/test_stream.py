"""The indexer against real servers: a gRPC spy replaying VAAs with guardian copies, the Bigtable
emulator, and the indexer in-process or as ``chainloom indexer run``.

The reference for "correct" is always the same VAAs written by the event writer alone, in the
same order: the indexer must leave the events and index tables exactly as that does.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import time
from pathlib import Path
from typing import Any

from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.service import serve
from chainloom_dev.net import free_port
from tests.integration.indexer.conftest import (
    Store,
    contents,
    serve_spy,
    workload,
    write_directly,
    write_vaa_file,
)

STREAM_VAAS = 5000
"""VAAs of the replay test, each sent by all 19 guardians (95,000 spy messages), as the issue
asks. Measured on the shared 2-core machine at load average 15-20: signing them 10 s (once per
session), the replay 42 s with the reference written meanwhile (29 s + 27 s one after the
other), reading both pairs of tables back 10 s: about 63 s in all."""


def _bigtable(store: Store) -> dict[str, Any]:
    return {
        "project": store.settings.project,
        "instance": store.settings.instance,
        "table": store.settings.table,
        "index_table": store.settings.index_table,
        "operation_timeout": 10,
    }


class CountWrites:
    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.done = asyncio.Event()

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        self.count += 1
        if self.count >= self.expected:
            self.done.set()


def test_a_replay_with_guardian_copies_stores_every_message_once_as_the_writer_does(
    store: Store, guardian_file: Path, tmp_path: Path
) -> None:
    """5,000 VAAs x 19 guardian copies through the spy: every message is in the store exactly
    once, and both tables equal the event writer's (written meanwhile into the twin tables)."""
    raws = workload(STREAM_VAAS, seed=1401)
    spy = serve_spy(write_vaa_file(tmp_path / "vaas.txt", raws), free_port(), copies=19)
    settings = IndexerSettings.model_validate(
        {
            "bigtable": _bigtable(store),
            "guardian_sets": {"source": str(guardian_file)},
            "spy": {"address": spy.address, "reconnect": {"initial": 0.05, "maximum": 0.5}},
            "probes": {"enabled": False},
        }
    )

    async def scenario() -> Any:
        writes = CountWrites(len(set(raws)))
        stop = asyncio.Event()
        running = asyncio.create_task(serve(settings, stop, observers=[writes]))
        reference = asyncio.create_task(asyncio.to_thread(write_directly, store.reference, raws))
        await asyncio.wait_for(writes.done.wait(), 300)
        stop.set()
        await asyncio.wait_for(reference, 300)
        return await running

    try:
        pipeline = asyncio.run(scenario())
    finally:
        spy.stop()
    counters = pipeline.counters
    assert counters.received == len(raws) * 19
    assert counters.duplicates == len(raws) * 19 - len(set(raws))
    assert counters.written == len(set(raws))
    assert counters.refused == 0
    events, index = contents(store.settings)
    expected_events, expected_index = contents(store.reference)
    assert sorted(events) == sorted({_row_key(raw) for raw in raws})  # each message, one row
    assert events == expected_events
    assert index == expected_index


def _row_key(raw: bytes) -> str:
    from chainloom.wormhole import parse_vaa

    return parse_vaa(raw).row_key


def test_sigkill_at_random_points_then_restart_leaves_the_store_of_a_clean_run(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    """Kill -9 the indexer three times while the stream runs; each restart gets the whole
    replay again (what a spy would resend or gap detection would find); the store ends equal
    to the event writer's clean run."""
    raws = workload(400, seed=1402)
    source = write_vaa_file(tmp_path / "vaas.txt", raws)
    spy_port = free_port()
    indexer = indexer_process(
        {
            "bigtable": _bigtable(store),
            "spy": {
                "address": f"127.0.0.1:{spy_port}",
                "reconnect": {"initial": 0.05, "maximum": 0.2},
            },
            "batch": {"rows": 25, "latency": 0.05},
        },
        env={"BIGTABLE_EMULATOR_HOST": store.emulator},
    )
    rng = random.Random(14)
    distinct = len(set(raws))
    for _ in range(3):
        spy = serve_spy(source, spy_port, copies=19, rate=400)
        indexer.start()
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", rng.randrange(1, distinct))
        indexer.signal(signal.SIGKILL)
        indexer.wait(30)
        spy.stop()
    spy = serve_spy(source, spy_port, copies=19)
    indexer.start()
    try:
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", distinct)
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0, indexer.output()
    finally:
        spy.stop()
    write_directly(store.reference, raws, rows=25)
    assert contents(store.settings) == contents(store.reference)


def test_sigterm_drains_the_buffer_and_exits_zero(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    """Nothing is written before SIGTERM (the batch bounds are far away); after it, every
    buffered VAA is, and the process exits 0 within the drain bound."""
    raws = workload(150, seed=1403)
    spy_port = free_port()
    spy = serve_spy(write_vaa_file(tmp_path / "vaas.txt", raws), spy_port, copies=19)
    indexer = indexer_process(
        {
            "bigtable": _bigtable(store),
            "spy": {"address": f"127.0.0.1:{spy_port}"},
            "batch": {"rows": 10_000, "latency": 60},
            "drain_timeout": 30,
        },
        env={"BIGTABLE_EMULATOR_HOST": store.emulator},
    )
    indexer.start()
    try:
        distinct = len(set(raws))
        indexer.wait_for_metric("chainloom_indexer_buffer_depth", distinct)
        assert indexer.metric("chainloom_indexer_vaas_written_total") == 0
        assert contents(store.settings)[0] == {}
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0, indexer.output()
    finally:
        spy.stop()
    output = indexer.output()
    assert f"written {distinct}" in output
    assert "Traceback" not in output
    write_directly(store.reference, raws)
    assert contents(store.settings) == contents(store.reference)


def test_probes_answer_ready_and_metrics(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    raws = workload(20, seed=1404)
    spy_port = free_port()
    spy = serve_spy(write_vaa_file(tmp_path / "vaas.txt", raws), spy_port, copies=3)
    indexer = indexer_process(
        {"bigtable": _bigtable(store), "spy": {"address": f"127.0.0.1:{spy_port}"}},
        env={"BIGTABLE_EMULATOR_HOST": store.emulator},
    )
    indexer.start()
    try:
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", len(set(raws)))
        status, body = indexer.get("/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        status, body = indexer.get("/readyz")
        assert status == 200, body
        assert json.loads(body)["spy"] == "connected"
        assert indexer.metric("chainloom_indexer_vaas_received_total") == len(raws) * 3
        assert indexer.metric("chainloom_indexer_vaas_duplicates_total") == len(raws) * 3 - len(
            set(raws)
        )
        assert indexer.metric("chainloom_indexer_buffer_depth") == 0
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0
    finally:
        spy.stop()


def test_a_spy_restart_is_ridden_out_by_reconnecting(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    """The spy goes away mid-stream and comes back on the same port with the rest: /readyz is
    503 while it is gone, the indexer reconnects by itself and stores everything."""
    raws = workload(120, seed=1406)
    first, rest = raws[:60], raws[60:]
    spy_port = free_port()
    spy = serve_spy(write_vaa_file(tmp_path / "first.txt", first), spy_port, copies=3)
    indexer = indexer_process(
        {
            "bigtable": _bigtable(store),
            "spy": {
                "address": f"127.0.0.1:{spy_port}",
                "reconnect": {"initial": 0.1, "maximum": 0.5},
            },
        },
        env={"BIGTABLE_EMULATOR_HOST": store.emulator},
    )
    indexer.start()
    try:
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", len(set(first)))
        spy.stop()
        status, body = indexer.get("/readyz")
        deadline = 50
        while status != 503 and deadline:
            deadline -= 1
            time.sleep(0.1)
            status, body = indexer.get("/readyz")
        assert status == 503, body
        assert json.loads(body)["spy"] == "disconnected"
        spy = serve_spy(write_vaa_file(tmp_path / "rest.txt", rest), spy_port, copies=3)
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", len(set(raws)))
        assert (indexer.metric("chainloom_indexer_spy_connections_total") or 0) >= 2
        assert indexer.get("/readyz")[0] == 200
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0, indexer.output()
    finally:
        spy.stop()
    write_directly(store.reference, raws)
    assert contents(store.settings) == contents(store.reference)
