"""Event-store write throughput against a bare mutate_rows loop writing the same cells.

Runs against the Bigtable emulator of the local stack (``BIGTABLE_EMULATOR_HOST``).

1. ``chainloom vaa generate`` makes N signed VAAs (default mix: transfers, attestations, NFTs,
   other, with duplicates and conflicts).
2. Each process verifies its shard (outside the timer: verification is the indexer's CPU
   stage, ~1.5k VAA/s per core, and is reported separately), then times the store path:
   read-before-write, planning, conditional SignedVAA writes and batched mutate_rows.
3. The same processes then write exactly the cells the store wrote (events and index rows)
   into fresh tables with a bare ``bulk_mutate_rows`` loop of 500 rows per call: the ceiling.

Printed: VAAs/s through the store, rows/s of the ceiling, and store/ceiling, for 1 and 2
processes (both cores).
"""

from __future__ import annotations

import argparse
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

REPO = Path(__file__).resolve().parent.parent
CHUNK = 500


def _generate(count: int, seed: int) -> list[bytes]:
    chainloom = str(Path(sys.executable).with_name("chainloom"))
    output = subprocess.run(
        [chainloom, "vaa", "generate", "--count", str(count), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [bytes.fromhex(line) for line in output.split()]


def _settings(table: str) -> Any:
    from chainloom.eventstore.bigtable import StoreSettings

    return StoreSettings.resolve(project="bench", instance="bench", table=table)


def _store_worker(args: tuple[str, list[bytes], bool]) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from chainloom.eventstore.bigtable import BigtableTables
    from chainloom.eventstore.writer import EventWriter, WriterConfig
    from chainloom.wormhole import CHAINS, DevGuardians, SignatureCache, mainnet_emitters

    table, raws, conditional = args
    kit = DevGuardians()
    emitters = mainnet_emitters().with_dev_emitters(c for c in CHAINS if c)
    with BigtableTables(_settings(table)) as tables:
        writer = EventWriter(
            tables,
            kit.sets(0),
            emitters=emitters,
            signature_cache=SignatureCache(),
            config=WriterConfig(conditional_quorum=conditional),
        )
        started = time.perf_counter()
        prepared = []
        for raw in raws:
            try:
                prepared.append(writer.prepare(raw))
            except Exception:
                continue
        verify_seconds = time.perf_counter() - started
        started = time.perf_counter()
        cpu_started = time.process_time()
        plans = []
        for item in prepared:
            plans += writer.submit_prepared(item)
        plans += writer.flush()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        cells = [(p.row_key, p.cells, p.index) for p in plans if p.cells]
        summary = writer.summary.as_dict()
        writer.close()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "verify_seconds": verify_seconds,
        "inputs": len(prepared),
        "summary": {k: summary[k] for k in ("new", "updated", "unchanged", "conflicting")},
        "cells": cells,
    }


def _ceiling_worker(args: tuple[str, list[tuple[str, Any, Any]]]) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from google.cloud.bigtable.data import RowMutationEntry, SetCell

    from chainloom.eventstore import schema
    from chainloom.eventstore.bigtable import BigtableTables

    table, rows = args
    with BigtableTables(_settings(table)) as tables:
        started = time.perf_counter()
        cpu_started = time.process_time()
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
                index.append(
                    RowMutationEntry(
                        entry.row_key,
                        [
                            SetCell(
                                schema.INDEX_FAMILY,
                                entry.qualifier,
                                entry.value,
                                entry.timestamp_micros,
                            )
                        ],
                    )
                )
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
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "rows": len(rows)}


def _shards(raws: list[bytes], processes: int) -> list[list[bytes]]:
    """Split by message id (the body's chain/emitter/sequence bytes), so duplicates and
    conflicts of one message stay in one process."""
    from chainloom.wormhole import parse_vaa

    shards: list[list[bytes]] = [[] for _ in range(processes)]
    for raw in raws:
        vaa = parse_vaa(raw)
        shards[zlib.crc32(vaa.row_key.encode()) % processes].append(raw)
    return shards


def run(count: int, processes: int, seed: int, conditional: bool) -> None:
    from chainloom.eventstore.bigtable import drop_tables, ensure_schema

    raws = _generate(count, seed)
    store_table = f"bench-store-{uuid.uuid4().hex[:8]}"
    ceiling_table = f"bench-ceiling-{uuid.uuid4().hex[:8]}"
    for table in (store_table, ceiling_table):
        ensure_schema(_settings(table))
    shards = _shards(raws, processes)
    context = mp.get_context("spawn")
    with context.Pool(processes) as pool:
        stored = pool.map(_store_worker, [(store_table, shard, conditional) for shard in shards])
        ceiling = pool.map(_ceiling_worker, [(ceiling_table, s["cells"]) for s in stored])
    for table in (store_table, ceiling_table):
        drop_tables(_settings(table))
    inputs = sum(s["inputs"] for s in stored)
    rows_written = sum(c["rows"] for c in ceiling)
    store_seconds = max(s["seconds"] for s in stored)
    ceiling_seconds = max(c["seconds"] for c in ceiling)
    verify_rate = sum(s["inputs"] / s["verify_seconds"] for s in stored)
    totals: dict[str, int] = {}
    for s in stored:
        for key, value in s["summary"].items():
            totals[key] = totals.get(key, 0) + value
    store_rate = inputs / store_seconds
    store_rows_rate = rows_written / store_seconds
    ceiling_rate = rows_written / ceiling_seconds
    mode = "check-and-mutate" if conditional else "partitioned bulk"
    print(
        f"eventstore [{mode} SignedVAA] processes={processes} vaas={inputs} "
        f"rows_written={rows_written} "
        f"({', '.join(f'{k} {v}' for k, v in totals.items())})"
    )
    print(
        f"  store:   {store_rate:8.0f} VAA/s  {store_rows_rate:8.0f} rows/s  "
        f"(verification, separate stage: {verify_rate:6.0f} VAA/s)"
    )
    print(f"  ceiling: {ceiling_rate:8.0f} rows/s  (bare bulk_mutate_rows, same cells)")
    store_cpu = sum(s["cpu_seconds"] for s in stored) / rows_written * 1e6
    ceiling_cpu = sum(c["cpu_seconds"] for c in ceiling) / rows_written * 1e6
    print(f"  ratio store/ceiling (rows/s): {store_rows_rate / ceiling_rate:.2f}")
    print(
        f"  client CPU per row: store {store_cpu:.0f} us, ceiling {ceiling_cpu:.0f} us "
        f"(ratio {ceiling_cpu / store_cpu:.2f}; steadier than wall time on a shared machine)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=6000)
    parser.add_argument("--processes", default="1,2", help="comma-separated process counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--modes", default="bulk,conditional", help="SignedVAA write modes: bulk, conditional"
    )
    options = parser.parse_args()
    if not os.environ.get("BIGTABLE_EMULATOR_HOST"):
        sys.exit('set BIGTABLE_EMULATOR_HOST (eval "$(chainloom stack env)")')
    for mode in options.modes.split(","):
        for processes in (int(p) for p in options.processes.split(",")):
            run(options.count, processes, options.seed, conditional=mode == "conditional")


if __name__ == "__main__":
    main()
