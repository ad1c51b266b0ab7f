"""Streaming indexer throughput and latency, against the bare event writer in the same run.

Runs against the Bigtable emulator of the local stack (``BIGTABLE_EMULATOR_HOST``); the spy is
``chainloom-dev spy serve`` in a separate process, as a real spy is.

1. ``generate_vaas`` makes N signed VAAs (the default mainnet-like mix: transfers,
   attestations, NFTs, other, with re-signed duplicates and conflicts).
2. **Bare writer**: one :class:`EventWriter`, configured exactly as the indexer configures
   its own (same known emitters, batch size, signature cache), ``put_many`` of the N VAAs into
   fresh tables, verification included. This is the ceiling the indexer is compared with.
3. **Indexer**: the spy serves each VAA ``--copies`` times (19, as mainnet's guardians do),
   lossless; the indexer's pipeline (the spy client, dedupe, verification, the bounded
   buffer, batched writes) runs in this process into other fresh tables, with gap tracking
   composed as :func:`chainloom.indexer.service.serve` composes it (the
   :class:`~chainloom.wormhole.sequences.GapBook` as an observer, its state saved every
   ``gaps.state_interval`` seconds and after the drain; ``--no-gaps`` leaves it out, to see
   what it costs). Timed from the first message received to the last write returned.
4. **Latency**: the spy serves M VAAs at a steady ``--rate`` (with copies); for each message,
   the time from the first copy leaving the spy client to its write returning (the row is
   readable from then on). p50 and p99 are printed.

5. **Telemetry on and off** (``--telemetry``, issue 15: "off costs nothing measurable"): each
   round also runs the indexer three more times, each in a fresh process (the OpenTelemetry
   API's global providers can be installed once per process): ``plain`` (the pipeline alone,
   as in step 3), ``off`` (as ``indexer run`` with no ``OTEL_*``: the ``/metrics``
   instruments, the write-latency histogram recorded per VAA, the no-op tracer) and ``on``
   (``OTEL_EXPORTER_OTLP_ENDPOINT`` set: spans of every batch and of the event writer, and
   the metrics exported over OTLP to the stack's collector, ``--otlp-endpoint``). Also the
   histogram's own cost per VAA, timed apart (``LatencyHistogram.observe`` with and without
   the SDK histogram behind it). CPU per VAA is the steadier figure on a shared machine.

Both runs are on one core's worth of Python (one event loop, one verify and one write thread).
Goal (issue 14): indexer VAA/s >= 0.8 x bare writer VAA/s. Run:
``.venv/bin/python bench/indexer.py [--vaas 2000] [--copies 19] [--rate 100] [--telemetry]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from chainloom import telemetry
from chainloom.eventstore.bigtable import BigtableTables, drop_tables, ensure_schema
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.metrics import IndexerMetrics, LatencyHistogram, MetricsSnapshot
from chainloom.indexer.pipeline import Pipeline
from chainloom.indexer.service import bounds, gap_filler, open_writer, spy_client
from chainloom.settings import BigtableSettings
from chainloom.spy.client import SpyClient
from chainloom.wormhole import SignatureCache, all_known_emitters, parse_vaa
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import DEFAULT_MIX, generate_vaas

MessageKey = tuple[int, bytes, int]


def _location(table: str) -> BigtableSettings:
    return BigtableSettings(project="bench", instance="bench", table=table)


def bare_writer(raws: list[bytes], settings: IndexerSettings) -> tuple[float, float]:
    """(seconds, CPU seconds of this process) ``put_many`` takes for ``raws`` with the
    indexer's writer configuration."""
    with BigtableTables(settings.bigtable) as tables:
        writer = EventWriter(
            tables,
            DevGuardians().sets(0),
            emitters=all_known_emitters(),
            config=WriterConfig(flush_rows=settings.batch.rows, deadline=settings.write_deadline),
            signature_cache=SignatureCache(settings.signature_cache),
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        summary = writer.put_many(raws)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert summary.refused == 0, summary.refusals[:3]
    return seconds, cpu


class TimedSource:
    """The spy client, noting when each message's first copy left it."""

    def __init__(self, spy: SpyClient, keys: dict[bytes, MessageKey]) -> None:
        self.spy = spy
        self.keys = keys
        self.first_seen: dict[MessageKey, float] = {}
        self.started: float | None = None
        self.cpu_started = 0.0

    @property
    def connected(self) -> bool:
        return self.spy.connected

    def stop(self) -> None:
        self.spy.stop()

    async def messages(self) -> AsyncIterator[bytes]:
        async for raw in self.spy.messages():
            now = time.perf_counter()
            if self.started is None:
                self.started, self.cpu_started = now, time.process_time()
            self.first_seen.setdefault(self.keys[raw], now)
            yield raw


class Written:
    """The observer: when each message's first write returned."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.done: dict[MessageKey, float] = {}
        self.writes = 0
        self.all_written = asyncio.Event()

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        del at
        self.done.setdefault((chain, emitter, sequence), time.perf_counter())
        self.writes += 1
        if self.writes >= self.expected:
            self.all_written.set()


async def indexer_run(
    raws: list[bytes],
    settings: IndexerSettings,
    copies: int,
    rate: float,
    scratch: Path,
    gaps: bool = True,
    instruments: telemetry.Telemetry | None = None,
) -> tuple[float, float, list[float], dict[str, Any]]:
    """(seconds and CPU seconds from first receipt to last write, per-message latencies,
    counters); with ``instruments`` the pipeline's metrics are wired as ``indexer run`` wires
    them (its ``/metrics`` provider, exported over OTLP when ``instruments`` exports)."""
    source_file = scratch / f"vaas-{uuid.uuid4().hex[:6]}.txt"
    source_file.write_text("\n".join(raw.hex() for raw in raws) + "\n")
    address = settings.spy.address
    chainloom_dev = str(Path(sys.executable).with_name("chainloom-dev"))
    server = subprocess.Popen(
        [chainloom_dev, "spy", "serve", "--listen", address, "--file", str(source_file),
         "--copies", str(copies), "--rate", str(rate), "--lossless",
         "--wait-for-subscribers", "1", "--exit-when-done", "--buffer", "4096"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        keys = {raw: _key(raw) for raw in raws}
        store = open_writer(settings)
        source = TimedSource(spy_client(settings), keys)
        written = Written(len(set(raws)))
        filler = gap_filler(settings, store) if gaps else None
        observers: list[Any] = [written] if filler is None else [written, filler.book]
        pipeline = Pipeline(source, store, bounds(settings), observers=observers)
        metrics = None
        if instruments is not None:
            metrics = IndexerMetrics(
                pipeline.snapshot,
                pipeline.counters.latency,
                readers=instruments.otlp_metric_readers(),
            )
        stop, filler_stop = asyncio.Event(), asyncio.Event()
        filling = None
        if filler is not None:
            await asyncio.to_thread(filler.load)
            filler.counters = pipeline.counters
            filling = asyncio.create_task(filler.run(pipeline.submit, filler_stop))
        running = asyncio.create_task(pipeline.run(stop))
        await asyncio.wait_for(written.all_written.wait(), 600)
        finished, cpu_finished = time.perf_counter(), time.process_time()
        stop.set()
        await running
        if filler is not None and filling is not None:
            filler_stop.set()
            await filling
            await filler.save()
            assert not filler.book.dirty, "the gap state was not saved"
            filler.close()
        if metrics is not None:
            metrics.shutdown()
        store.writer.tables.close()
    finally:
        server.terminate()
        server.wait(10)
    assert source.started is not None
    latencies = [written.done[key] - source.first_seen[key] for key in written.done]
    counters = {
        "received": pipeline.counters.received,
        "duplicates": pipeline.counters.duplicates,
        "written": pipeline.counters.written,
        **store.outcomes(),
    }
    return finished - source.started, cpu_finished - source.cpu_started, latencies, counters


MODES = ("plain", "off", "on")
"""The indexer runs of ``--telemetry``: no instruments, telemetry off, telemetry on."""
BENCH_RUN_ATTRIBUTE = "chainloom.bench.run"
"""Resource attribute naming this bench run's telemetry at the collector."""


def telemetry_round(
    mode: str,
    raws: list[bytes],
    settings: dict[str, Any],
    copies: int,
    scratch: str,
    gaps: bool,
    endpoint: str,
    run_id: str,
) -> tuple[float, float, dict[str, Any]]:
    """One indexer run in a fresh process (:data:`MODES`): (seconds, CPU seconds, counters)."""
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[name]
    if mode == "on":
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        os.environ["OTEL_RESOURCE_ATTRIBUTES"] = f"{BENCH_RUN_ATTRIBUTE}={run_id}"
    observed = telemetry.setup("chainloom-indexer")  # installs nothing unless "on"
    try:
        seconds, cpu, _, counters = asyncio.run(
            indexer_run(
                raws,
                IndexerSettings.model_validate(settings),
                copies,
                0.0,
                Path(scratch),
                gaps=gaps,
                instruments=None if mode == "plain" else observed,
            )
        )
    finally:
        observed.shutdown()
    return seconds, cpu, counters


def histogram_cost(count: int = 200_000) -> tuple[float, float]:
    """Microseconds per ``LatencyHistogram.observe``: (the bucket count alone, with the SDK
    histogram of :class:`IndexerMetrics` behind it, as ``indexer run`` has it)."""
    values = [(i % 997) / 1000 for i in range(count)]

    def per_call(histogram: LatencyHistogram) -> float:
        started = time.process_time()
        for value in values:
            histogram.observe(value)
        return (time.process_time() - started) / count * 1e6

    plain = LatencyHistogram()
    wired = LatencyHistogram()

    def never_collected() -> MetricsSnapshot:
        raise AssertionError("the bench never collects these metrics")

    metrics = IndexerMetrics(never_collected, wired)
    try:
        plain_us = min(per_call(plain) for _ in range(3))
        wired_us = min(per_call(wired) for _ in range(3))
    finally:
        metrics.shutdown()
    return plain_us, wired_us


def _collector_endpoint() -> str | None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT``, else the local stack's collector (if it runs)."""
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    from chainloom_dev.stack import manager

    running = manager.load_state().get("otel")
    return running.extra.get("endpoint") if running is not None else None


def _key(raw: bytes) -> MessageKey:
    vaa = parse_vaa(raw)
    return (vaa.emitter_chain, vaa.emitter_address, vaa.sequence)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vaas", type=int, default=2000, help="VAAs for the throughput run.")
    parser.add_argument("--copies", type=int, default=19, help="Guardian copies per VAA.")
    parser.add_argument("--latency-vaas", type=int, default=500, help="VAAs for the latency run.")
    parser.add_argument("--rate", type=float, default=100.0, help="VAAs/s of the latency run.")
    parser.add_argument("--rounds", type=int, default=2, help="Alternating rounds; best kept.")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--no-gaps", action="store_true", help="Leave gap tracking out of the indexer runs."
    )
    parser.add_argument(
        "--telemetry", action="store_true",
        help="Also run the indexer with no instruments, telemetry off and telemetry on.",
    )  # fmt: skip
    parser.add_argument(
        "--otlp-endpoint", help="Collector of the telemetry-on runs (default: the stack's)."
    )
    args = parser.parse_args()
    if not os.environ.get("BIGTABLE_EMULATOR_HOST"):
        sys.exit('BIGTABLE_EMULATOR_HOST is not set: eval "$(chainloom-dev stack env)" first')
    endpoint = args.otlp_endpoint or (_collector_endpoint() if args.telemetry else None)
    if args.telemetry and not endpoint:
        sys.exit("no collector: chainloom-dev stack up --only otel, or give --otlp-endpoint")
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)

    kit = DevGuardians()
    raws = list(generate_vaas(args.vaas, args.seed, kit, DEFAULT_MIX))
    late = list(generate_vaas(args.latency_vaas, args.seed + 1, kit, DEFAULT_MIX))
    run_id = uuid.uuid4().hex[:8]
    kinds = ["bare", "indexer", *(MODES if args.telemetry else ())]
    names = [f"{kind}{i}" for i in range(args.rounds) for kind in kinds]
    tables = {name: f"bench-idx-{name}-{run_id}" for name in [*names, "latency"]}
    for table in tables.values():
        ensure_schema(_location(table))
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        sets_file = scratch / "dev-guardians.json"
        sets_file.write_text(json.dumps(kit.sets(0).to_json()))

        def settings(table: str) -> IndexerSettings:
            return IndexerSettings.model_validate(
                {
                    "bigtable": _location(table).model_dump(),
                    "guardian_sets": {"source": str(sets_file)},
                    "spy": {"address": f"127.0.0.1:{free_port()}"},
                    "probes": {"enabled": False},
                }
            )

        bare_times: list[tuple[float, float]] = []
        indexer_times: list[tuple[float, float]] = []
        mode_times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        spawn = mp.get_context("spawn")
        try:
            # Alternate the two, so a load spike on a shared machine hits both alike.
            for i in range(args.rounds):
                bare_times.append(bare_writer(raws, settings(tables[f"bare{i}"])))
                seconds, cpu, _, counters = asyncio.run(
                    indexer_run(
                        raws,
                        settings(tables[f"indexer{i}"]),
                        args.copies,
                        0.0,
                        scratch,
                        gaps=not args.no_gaps,
                    )
                )
                indexer_times.append((seconds, cpu))
                # A new order each round, so no mode always runs first (or after the same one).
                for mode in (MODES[i % 3 :] + MODES[: i % 3]) if args.telemetry else ():
                    with spawn.Pool(1) as pool:
                        seconds, cpu, mode_counters = pool.apply(
                            telemetry_round,
                            (mode, raws, settings(tables[f"{mode}{i}"]).model_dump(mode="json"),
                             args.copies, scratch_dir, not args.no_gaps, endpoint, run_id),
                        )  # fmt: skip
                    assert mode_counters["written"] == counters["written"], mode_counters
                    mode_times[mode].append((seconds, cpu))
            _, _, latencies, _ = asyncio.run(
                indexer_run(
                    late,
                    settings(tables["latency"]),
                    args.copies,
                    args.rate,
                    scratch,
                    gaps=not args.no_gaps,
                )
            )
        finally:
            for table in tables.values():
                drop_tables(_location(table))
    (bare_seconds, bare_cpu), (seconds, cpu) = min(bare_times), min(indexer_times)
    bare_rate, indexer_rate = len(raws) / bare_seconds, len(raws) / seconds
    tracking = "without" if args.no_gaps else "with"
    print(
        f"indexer: {len(raws)} VAAs x {args.copies} copies, best of {args.rounds}, "
        f"{tracking} gap tracking; load average {os.getloadavg()[0]:.1f}; {counters}"
    )
    print(
        f"  bare EventWriter.put_many: {bare_rate:7.0f} VAA/s ({bare_seconds:.2f} s; "
        f"CPU {bare_cpu / len(raws) * 1e3:.2f} ms/VAA)"
    )
    print(
        f"  indexer (spy -> store):    {indexer_rate:7.0f} VAA/s ({seconds:.2f} s, "
        f"{len(raws) * args.copies / seconds:.0f} spy messages/s; "
        f"CPU {cpu / len(raws) * 1e3:.2f} ms/VAA)"
    )
    print(f"  ratio indexer/bare: {indexer_rate / bare_rate:.2f} (goal >= 0.8)")
    print(
        f"  latency at {args.rate:g} VAA/s x {args.copies} copies, first copy -> write returned "
        f"({len(latencies)} messages): p50 {_percentile(latencies, 0.5) * 1000:.0f} ms, "
        f"p99 {_percentile(latencies, 0.99) * 1000:.0f} ms, "
        f"mean {statistics.fmean(latencies) * 1000:.0f} ms"
    )
    if args.telemetry:
        _print_telemetry(len(raws), mode_times, endpoint)


def _print_telemetry(
    vaas: int, mode_times: dict[str, list[tuple[float, float]]], endpoint: str | None
) -> None:
    best = {mode: min(seconds for seconds, _ in times) for mode, times in mode_times.items()}
    cpu = {mode: min(c for _, c in times) / vaas * 1e6 for mode, times in mode_times.items()}
    print(f"  telemetry (each run a fresh process; best of {len(mode_times['plain'])}; "
          f"on: OTLP to {endpoint}):")  # fmt: skip
    what = {
        "plain": "no instruments",
        "off": "off (/metrics instruments)",
        "on": "on (spans + OTLP)",
    }
    for mode in MODES:
        rounds = ", ".join(f"{c / vaas * 1e6:.0f}" for _, c in mode_times[mode])
        print(f"    {what[mode]:27s} {vaas / best[mode]:7.0f} VAA/s, CPU {cpu[mode]:6.0f} us/VAA "
              f"(rounds: {rounds})")  # fmt: skip
    ratios = (cpu["off"] / cpu["plain"], cpu["on"] / cpu["off"],
              best["plain"] / best["off"], best["off"] / best["on"])  # fmt: skip
    print("    CPU per VAA off/plain {:.3f}, on/off {:.3f} (above 1: costs more); "
          "VAA/s off/plain {:.3f}, on/off {:.3f} (below 1: slower)".format(*ratios))  # fmt: skip
    plain_us, wired_us = histogram_cost()
    print(f"  write-latency histogram: {wired_us:.2f} us per VAA with the SDK histogram, "
          f"{plain_us:.2f} us without (+{wired_us - plain_us:.2f} us)")  # fmt: skip


if __name__ == "__main__":
    main()
