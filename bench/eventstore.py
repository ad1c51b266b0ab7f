"""Event-store write throughput against a bare mutate_rows loop writing the same cells.

Runs against the Bigtable emulator of the local stack (``BIGTABLE_EMULATOR_HOST``).

1. ``chainloom-dev vaa generate`` makes N signed VAAs (default mix: transfers, attestations, NFTs,
   other, with duplicates and conflicts). They are split across P processes by message id.
2. Each process verifies its shard once, outside the timer. Verification is the indexer's CPU
   stage (about 1.5k VAA/s per core) and is reported separately.
3. Then, R times in turn, each process:
   - times the store path into fresh tables: the read before the write, planning, the
     SignedVAA writes and batched mutate_rows;
   - writes exactly the cells the store wrote (events and index rows) into other fresh
     tables with a bare ``bulk_mutate_rows`` loop of 500 rows per call. This is the ceiling.

Printed for each process count: the best of R for VAAs/s through the store, rows/s of the
ceiling, and store/ceiling; also the client CPU per row, which is steadier on a shared machine.

``--telemetry`` runs each case four times, telemetry off, on, off, on (on: ``OTEL_*`` pointing
at the stack's collector, ``--otlp-endpoint``: the writer's ``eventstore.write_batch`` spans and
its ``chainloom.eventstore.rows`` counter exported over OTLP); the two off runs show the noise
the on/off difference is read against (issue 15).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import os
import subprocess
import sys
import time
import uuid
import warnings
import zlib
from pathlib import Path
from typing import Any

CHUNK = 500


def _generate(count: int, seed: int) -> list[bytes]:
    chainloom_dev = str(Path(sys.executable).with_name("chainloom-dev"))
    output = subprocess.run(
        [chainloom_dev, "vaa", "generate", "--count", str(count), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [bytes.fromhex(line) for line in output.split()]


def _settings(table: str) -> Any:
    from chainloom.settings import BigtableSettings

    return BigtableSettings(project="bench", instance="bench", table=table)


def _store_once(table: str, prepared: list[Any], conditional: bool) -> dict[str, Any]:
    from chainloom.eventstore.bigtable import BigtableTables
    from chainloom.eventstore.writer import EventWriter, WriterConfig
    from chainloom_dev.sim.dev_guardians import DevGuardians

    with BigtableTables(_settings(table)) as tables:
        writer = EventWriter(
            tables, DevGuardians().sets(0), config=WriterConfig(conditional_quorum=conditional)
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        plans = []
        for item in prepared:
            plans += writer.submit_prepared(item)
        plans += writer.flush()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        summary = writer.summary.as_dict()
        writer.close()
    return {
        "seconds": seconds,
        "cpu": cpu,
        "summary": {k: summary[k] for k in ("new", "updated", "unchanged", "conflicting")},
        "rows": [(p.row_key, p.cells, p.index) for p in plans if p.cells],
    }


def _ceiling_once(table: str, rows: list[tuple[str, Any, Any]]) -> dict[str, Any]:
    from google.cloud.bigtable.data import RowMutationEntry, SetCell

    from chainloom.eventstore import schema
    from chainloom.eventstore.bigtable import BigtableTables

    with BigtableTables(_settings(table)) as tables:
        started, cpu_started = time.perf_counter(), time.process_time()
        events: list[Any] = []
        index: list[Any] = []
        for row_key, cells, index_cells in rows:
            events.append(
                RowMutationEntry(
                    row_key,
                    [SetCell(c.family, c.qualifier, c.value, c.timestamp_micros) for c in cells],
                )
            )
            for entry in index_cells:
                mutation = SetCell(
                    schema.INDEX_FAMILY, entry.qualifier, entry.value, entry.timestamp_micros
                )
                index.append(RowMutationEntry(entry.row_key, [mutation]))
            if len(events) >= CHUNK:
                tables.events.bulk_mutate_rows(events)
                events = []
            if len(index) >= CHUNK:
                tables.index.bulk_mutate_rows(index)
                index = []
        if events:
            tables.events.bulk_mutate_rows(events)
        if index:
            tables.index.bulk_mutate_rows(index)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {"seconds": seconds, "cpu": cpu, "rows": len(rows)}


def _worker(args: tuple[list[str], list[str], list[bytes], bool, str | None]) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from chainloom import telemetry
    from chainloom.eventstore.writer import EventWriter
    from chainloom.wormhole import CHAINS, SignatureCache, mainnet_emitters
    from chainloom_dev.sim.dev_guardians import DevGuardians

    store_tables, ceiling_tables, raws, conditional, endpoint = args
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[name]
    if endpoint:  # telemetry on in this (fresh, spawned) process
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    observed = telemetry.setup("chainloom-eventstore-bench")
    emitters = mainnet_emitters().with_dev_emitters(c for c in CHAINS if c)
    verifier = EventWriter(
        None,  # type: ignore[arg-type]  # prepare() needs no tables
        DevGuardians().sets(0),
        emitters=emitters,
        signature_cache=SignatureCache(),
    )
    started = time.perf_counter()
    prepared = [verifier.prepare(raw) for raw in raws]
    verify_seconds = time.perf_counter() - started
    # The prepared inputs live for the whole run; keep the cyclic GC from rescanning them
    # during the timed phases (it would tax store and ceiling alike, but noisily).
    gc.collect()
    gc.freeze()
    stores, ceilings = [], []
    for store_table, ceiling_table in zip(store_tables, ceiling_tables, strict=True):
        store = _store_once(store_table, prepared, conditional)
        ceilings.append(_ceiling_once(ceiling_table, store.pop("rows")))
        stores.append(store)
    observed.shutdown()
    return {
        "inputs": len(prepared),
        "verify_seconds": verify_seconds,
        "stores": stores,
        "ceilings": ceilings,
    }


def _shards(raws: list[bytes], processes: int) -> list[list[bytes]]:
    """Split by message id, so duplicates and conflicts of one message stay in one process."""
    from chainloom.wormhole import parse_vaa

    shards: list[list[bytes]] = [[] for _ in range(processes)]
    for raw in raws:
        vaa = parse_vaa(raw)
        shards[zlib.crc32(vaa.row_key.encode()) % processes].append(raw)
    return shards


def run(
    raws: list[bytes],
    processes: int,
    repeats: int,
    conditional: bool,
    endpoint: str | None = None,
    label: str = "",
) -> None:
    """One case; ``endpoint``: telemetry on, exporting there (``label`` names the case)."""
    from chainloom.eventstore.bigtable import drop_tables, ensure_schema

    run_id = uuid.uuid4().hex[:8]
    store_tables = [f"bench-s{i}-{run_id}" for i in range(repeats)]
    ceiling_tables = [f"bench-c{i}-{run_id}" for i in range(repeats)]
    for table in store_tables + ceiling_tables:
        ensure_schema(_settings(table))
    shards = _shards(raws, processes)
    try:
        with mp.get_context("spawn").Pool(processes) as pool:
            results = pool.map(
                _worker, [(store_tables, ceiling_tables, s, conditional, endpoint) for s in shards]
            )
    finally:
        for table in store_tables + ceiling_tables:
            drop_tables(_settings(table))
    inputs = sum(r["inputs"] for r in results)
    rows = sum(r["ceilings"][0]["rows"] for r in results)
    store_seconds = min(max(r["stores"][i]["seconds"] for r in results) for i in range(repeats))
    ceiling_seconds = min(max(r["ceilings"][i]["seconds"] for r in results) for i in range(repeats))
    store_cpu = min(sum(r["stores"][i]["cpu"] for r in results) for i in range(repeats))
    ceiling_cpu = min(sum(r["ceilings"][i]["cpu"] for r in results) for i in range(repeats))
    verify_rate = sum(r["inputs"] / r["verify_seconds"] for r in results)
    totals: dict[str, int] = {}
    for r in results:
        for key, value in r["stores"][0]["summary"].items():
            totals[key] = totals.get(key, 0) + value
    mode = "check-and-mutate" if conditional else "partitioned bulk"
    outcome = ", ".join(f"{k} {v}" for k, v in totals.items())
    print(
        f"eventstore [{mode} SignedVAA]{label} processes={processes} vaas={inputs} "
        f"rows_written={rows} ({outcome}); best of {repeats}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  store:   {inputs / store_seconds:7.0f} VAA/s {rows / store_seconds:7.0f} rows/s"
        f"   (verification, a separate stage: {verify_rate:.0f} VAA/s)"
    )
    print(f"  ceiling: {rows / ceiling_seconds:7.0f} rows/s (bare bulk_mutate_rows, same cells)")
    print(f"  ratio store/ceiling: {ceiling_seconds / store_seconds:.2f}")
    print(
        f"  client CPU per row: store {store_cpu / rows * 1e6:.0f} us, "
        f"ceiling {ceiling_cpu / rows * 1e6:.0f} us (ratio {ceiling_cpu / store_cpu:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=6000)
    parser.add_argument("--processes", default="1,2", help="comma-separated process counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--modes", default="bulk,conditional", help="SignedVAA write modes: bulk, conditional"
    )
    parser.add_argument(
        "--telemetry", action="store_true", help="Also run each case with telemetry off and on."
    )
    parser.add_argument(
        "--otlp-endpoint", help="Collector of the telemetry-on runs (default: the stack's)."
    )
    options = parser.parse_args()
    if not os.environ.get("BIGTABLE_EMULATOR_HOST"):
        sys.exit('set BIGTABLE_EMULATOR_HOST (eval "$(chainloom-dev stack env)")')
    endpoint = options.otlp_endpoint
    if options.telemetry and not endpoint:
        from chainloom_dev.stack import manager

        running = manager.load_state().get("otel")
        endpoint = running.extra.get("endpoint") if running is not None else None
        if not endpoint:
            sys.exit("no collector: chainloom-dev stack up --only otel, or give --otlp-endpoint")
    raws = _generate(options.count, options.seed)
    for mode in options.modes.split(","):
        for processes in (int(p) for p in options.processes.split(",")):
            conditional = mode == "conditional"
            if not options.telemetry:
                run(raws, processes, options.repeats, conditional)
                continue
            # Off, on, off, on: the two off runs show the noise the on/off gap is read against.
            for label, where in [(" telemetry off", None), (" telemetry on", endpoint)] * 2:
                run(raws, processes, options.repeats, conditional, where, label)


if __name__ == "__main__":
    main()
