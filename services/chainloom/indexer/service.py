"""Building and running the indexer from its settings: the one way every entry point starts it.

``chainloom indexer run`` and the operator's streaming ``IngestPipeline`` pods call
:func:`run_indexer` with an :class:`~chainloom.indexer.config.IndexerSettings`. Start-up
checks the store before subscribing, so a wrong address or a missing table ends the process
at once with one line (exit 4 unreachable, 2 no table) instead of a pod that is never ready.
After that, outages are states the pipeline rides out; SIGTERM and SIGINT stop it gracefully.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainloom.eventstore.backfill import GapStateRows
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.feed_redis import RedisVaaFeed
from chainloom.eventstore.service import open_store
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.errors import IndexerConfigError
from chainloom.indexer.gapfill import GapFiller
from chainloom.indexer.metrics import IndexerCounters, IndexerMetrics
from chainloom.indexer.pipeline import Pipeline, PipelineBounds, SequenceObserver
from chainloom.indexer.probes import ProbeServer
from chainloom.indexer.store import EventWriterStore
from chainloom.publicrpc import EndpointConfigError, PublicRpcClient
from chainloom.spy.client import SpyClient
from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import SignatureCache, all_known_emitters
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.sequences import GapBook

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Started:
    """What a running indexer tells its caller once it serves."""

    spy_address: str
    """The spy it subscribes to."""
    probe_port: int | None
    """The port of ``/healthz``, ``/readyz`` and ``/metrics`` (None: probes disabled)."""


def spy_client(settings: IndexerSettings) -> SpyClient:
    """The relayer's spy client, with the indexer's filters, buffer and reconnect schedule."""
    spy = settings.spy
    try:
        return SpyClient(
            spy.address,
            [EmitterKey(e.chain, bytes.fromhex(e.address)) for e in spy.emitters],
            backoff=spy.reconnect.schedule(),
            buffer_size=spy.buffer,
            overflow=spy.overflow,
        )
    except SpyError as error:
        raise IndexerConfigError(f"spy: {error}") from None


def bounds(settings: IndexerSettings) -> PipelineBounds:
    """The pipeline's bounds from the settings."""
    return PipelineBounds(
        buffer=settings.buffer,
        batch_rows=settings.batch.rows,
        batch_latency=settings.batch.latency,
        dedupe_window=settings.dedupe_window,
        drain_timeout=settings.drain_timeout,
        store_check_interval=settings.store_check_interval,
        store_retry=settings.store_retry.schedule(),
    )


def open_writer(settings: IndexerSettings) -> EventWriterStore:
    """The event writer on the configured tables, checked: raises StoreUnavailableError when
    Bigtable does not answer and TableMissingError when the tables are not there."""
    try:
        guardian_sets = settings.guardian_sets.load()
    except WormholeError as error:
        raise IndexerConfigError(f"guardian_sets.source: {error}") from None
    tables = open_store(
        EventStoreSettings(bigtable=settings.bigtable, guardian_sets=settings.guardian_sets)
    )
    config = WriterConfig(flush_rows=settings.batch.rows, deadline=settings.write_deadline)
    try:
        feed = None
        if settings.feed_redis is not None:  # its password and TLS files are checked here
            feed = RedisVaaFeed(settings.feed_redis, setting="feed_redis")
    except BaseException:
        tables.close()
        raise
    writer = EventWriter(
        tables,
        guardian_sets,
        emitters=all_known_emitters(),
        config=config,
        signature_cache=SignatureCache(settings.signature_cache),
        feed=feed,
    )
    store = EventWriterStore(
        writer, check_timeout=min(settings.bigtable.operation_timeout, settings.write_deadline)
    )
    try:
        store.check()
    except BaseException:
        tables.close()
        raise
    return store


async def serve(
    settings: IndexerSettings,
    stop: asyncio.Event,
    *,
    observers: Sequence[SequenceObserver] = (),
    on_started: Callable[[Started], None] | None = None,
    metric_readers: Sequence[MetricReader] = (),
) -> Pipeline:
    """Run the indexer until ``stop`` is set, then drain; returns the pipeline (its counters).

    ``metric_readers`` also read its metrics (an OTLP exporter when telemetry is on)."""
    store = await asyncio.to_thread(open_writer, settings)
    filler: GapFiller | None = None
    try:
        if settings.gaps.enabled:
            filler = gap_filler(settings, store)
            await asyncio.to_thread(filler.load)
    except BaseException:
        store.writer.tables.close()
        raise
    spy = spy_client(settings)
    watchers = [*observers, filler.book] if filler is not None else list(observers)
    pipeline = Pipeline(spy, store, bounds(settings), observers=watchers)
    metrics = IndexerMetrics(
        lambda: pipeline.snapshot(_spy_counters(spy)),
        pipeline.counters.latency,
        readers=metric_readers,
    )
    filling: asyncio.Task[None] | None = None
    filler_stop = asyncio.Event()
    if filler is not None:
        filler.counters = pipeline.counters  # one set of counters on /metrics
        pipeline.gap_gauges = lambda: _gap_gauges(filler.book)
        filling = asyncio.create_task(filler.run(pipeline.submit, filler_stop))
    probes: ProbeServer | None = None
    try:
        if settings.probes.enabled:
            probes = ProbeServer(pipeline, metrics.exposition, settings.probes.host,
                                 settings.probes.port)  # fmt: skip
            try:
                await probes.start()
            except OSError as error:
                where = f"{settings.probes.host}:{settings.probes.port}"
                raise IndexerConfigError(
                    f"probes: cannot listen on {where}: {error.strerror or error}"
                ) from None
        log.info("indexer: subscribing to spy %s", settings.spy.address)
        if on_started is not None:
            on_started(Started(settings.spy.address, probes.port if probes else None))
        await _run_until_stopped(pipeline, stop, filler_stop)
        if filler is not None:
            await filler.save()  # after the drain: every write acknowledged is in the state
    finally:
        filler_stop.set()
        if filling is not None:
            filling.cancel()
            await asyncio.gather(filling, return_exceptions=True)
        if filler is not None:
            filler.close()
        if probes is not None:
            await probes.stop()
        metrics.shutdown()
        store.writer.tables.close()
    return pipeline


async def _run_until_stopped(
    pipeline: Pipeline, stop: asyncio.Event, filler_stop: asyncio.Event
) -> None:
    """Run the pipeline; once ``stop`` is set, stop fetching gaps before the drain ends."""

    async def relay() -> None:
        await stop.wait()
        filler_stop.set()

    relaying = asyncio.create_task(relay())
    try:
        await pipeline.run(stop)
    finally:
        relaying.cancel()
        await asyncio.gather(relaying, return_exceptions=True)


def gap_filler(settings: IndexerSettings, store: EventWriterStore) -> GapFiller:
    """Gap detection on the writer's tables; fetching only when endpoints are configured."""
    fetcher = None
    if settings.public_rpc.endpoints:
        try:
            fetcher = PublicRpcClient(settings.public_rpc)
        except EndpointConfigError as error:
            raise IndexerConfigError(f"public_rpc.endpoints: {error}") from None
    return GapFiller(
        GapBook(settings.gaps.max_gaps),
        settings.gaps,
        GapStateRows(store.writer.tables),
        IndexerCounters(),
        fetcher=fetcher,
    )


def _gap_gauges(book: GapBook) -> dict[str, int]:
    return {
        "open": book.missing(),
        "ranges": sum(t.hole_count for t in book.tracks.values()),
        "given_up": book.given_up,
    }


def run_indexer(
    settings: IndexerSettings,
    *,
    observers: Sequence[SequenceObserver] = (),
    on_started: Callable[[Started], None] | None = None,
    metric_readers: Sequence[MetricReader] = (),
) -> Pipeline:
    """Run the indexer until SIGTERM or SIGINT, drain, and return (exit 0 for the CLI)."""

    async def main() -> Pipeline:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            return await serve(
                settings,
                stop,
                observers=observers,
                on_started=on_started,
                metric_readers=metric_readers,
            )
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(signum)

    return asyncio.run(main())


def _spy_counters(spy: SpyClient) -> dict[str, int]:
    counters = spy.counters
    return {
        "connections": counters.connections,
        "disconnects": counters.disconnects,
        "messages": counters.messages,
        "drops": counters.drops,
    }
