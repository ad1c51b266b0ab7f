"""``chainloom-dev spy``: serve the guardian spy's gRPC API from files, stdin or history, or
watch one; serve a guardian's public API (GetSignedVAA) from files or the event store.

``serve`` is how tests and the demo feed a listener, and how operators replay VAAs into a
relayer: it speaks ``spy.v1.SpyRPCService/SubscribeSignedVAA`` exactly, so anything that
consumes a real spy consumes it. ``subscribe`` prints what a spy (real or not) streams.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import click

from chainloom.cli.common import check_input_file
from chainloom.cli.options import fail

if TYPE_CHECKING:
    from chainloom.eventstore.bigtable import BigtableTables
    from chainloom_dev.sim.spy_server import SpyHub


@click.group()
def spy() -> None:
    """A guardian-spy-compatible gRPC server, and a client to watch one."""


@spy.command()
@click.option(
    "--listen",
    "address",
    default="127.0.0.1:7073",
    show_default=True,
    help="host:port to serve on (port 0 picks a free port).",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A file of VAAs, one hex or base64 per line (repeatable).",
)
@click.option("--stdin", "use_stdin", is_flag=True, help="Read VAAs from stdin, one per line.")
@click.option(
    "--buffer",
    "buffer_size",
    default=1024,
    show_default=True,
    help="Per-subscriber buffer; a VAA finding it full is dropped and counted.",
)
@click.option(
    "--send-timeout",
    default=5.0,
    show_default=True,
    help="Seconds one send may block before the stream ends with 'too slow'.",
)
@click.option(
    "--lossless",
    is_flag=True,
    help="Wait for buffer space instead of dropping (replays; the real spy drops).",
)
@click.option(
    "--wait-for-subscribers",
    default=0,
    show_default=True,
    help="Start streaming once this many subscribers are connected.",
)
@click.option(
    "--copies",
    default=1,
    show_default=True,
    help="Publish each VAA this many times (identical bytes; the real spy forwards ~19).",
)
@click.option(
    "--rate",
    default=0.0,
    show_default=True,
    help="VAAs per second (0: as fast as subscribers take them).",
)
@click.option(
    "--exit-when-done",
    is_flag=True,
    help="Stop once the sources are exhausted and buffers drained.",
)
@click.option(
    "--events-chain",
    "events_chains",
    multiple=True,
    type=int,
    help="Replay the signed VAAs of this chain from the event store (repeatable).",
)
@click.option("--events-emitter", help="Only this emitter (hex), with one --events-chain.")
@click.option("--from-seq", default=0, show_default=True, help="Event store: first sequence.")
@click.option("--to-seq", type=int, help="Event store: last sequence (default: all).")
@click.option("--bigtable-project", help="Event store project (bigtable.project).")
@click.option("--bigtable-instance", help="Event store instance (bigtable.instance).")
@click.option("--bigtable-table", help="Event store table (bigtable.table).")
@click.option(
    "--drop",
    multiple=True,
    metavar="CHAIN/EMITTER/SEQ[-SEQ]",
    help="Never send these messages (every copy), as a spy that missed them (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the final counters as JSON.")
def serve(**options: Any) -> None:
    """Serve SubscribeSignedVAA, streaming VAAs from files, stdin or the event store.

    SIGINT and SIGTERM are its normal stop (exit 0, counters printed); a bad source exits 2,
    an unreachable event store 4.
    """
    settings = ServeOptions(**options)
    if settings.copies < 1 or settings.rate < 0 or settings.wait_for_subscribers < 0:
        fail("--copies must be >= 1, --rate and --wait-for-subscribers >= 0")
    if settings.events_emitter and len(settings.events_chains) != 1:
        fail("--events-emitter needs exactly one --events-chain")
    if not (settings.files or settings.use_stdin or settings.events_chains):
        fail("nothing to serve: give --file, --stdin or --events-chain")
    for name in settings.files:
        check_input_file(name, option="--file")
    try:
        counters = asyncio.run(_serve(settings))
    except KeyboardInterrupt:
        return
    if settings.as_json:
        click.echo(json.dumps(counters))
    else:
        click.echo(" ".join(f"{k}={v}" for k, v in counters.items()), err=True)


@dataclass(frozen=True)
class ServeOptions:
    """The options of ``chainloom-dev spy serve`` (see its ``--help``)."""

    address: str
    """host:port to serve on."""
    files: tuple[str, ...]
    """Files of VAAs, one per line."""
    use_stdin: bool
    """Also read VAAs from stdin."""
    buffer_size: int
    """Per-subscriber buffer."""
    send_timeout: float
    """Seconds one send may block before the stream ends."""
    lossless: bool
    """Wait for buffer space instead of dropping."""
    wait_for_subscribers: int
    """Subscribers to wait for before streaming."""
    copies: int
    """Copies of each VAA to publish."""
    rate: float
    """VAAs per second (0: unpaced)."""
    exit_when_done: bool
    """Stop when the sources are exhausted."""
    events_chains: tuple[int, ...]
    """Chains whose signed VAAs are replayed from the event store."""
    events_emitter: str | None
    """Only this emitter (hex) from the event store."""
    from_seq: int
    """Event store: first sequence."""
    to_seq: int | None
    """Event store: last sequence (None: all)."""
    bigtable_project: str | None
    """Event store project."""
    bigtable_instance: str | None
    """Event store instance."""
    bigtable_table: str | None
    """Event store table."""
    drop: tuple[str, ...]
    """Message selections never sent."""
    as_json: bool
    """Print the final counters as JSON."""


async def _serve(options: ServeOptions) -> dict[str, Any]:
    import dataclasses
    import signal

    from chainloom_dev.sim.spy_server import SpyHub, SpyServer, parse_selection

    dropped = set().union(*(parse_selection(text) for text in options.drop))
    hub = SpyHub(buffer_size=options.buffer_size, lossless=options.lossless, drop=dropped)
    server = SpyServer(hub, options.address, send_timeout=options.send_timeout)
    await server.start()
    click.echo(f"spy: listening on {server.target}", err=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        feeding = asyncio.create_task(_feed(hub, options))
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({feeding, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if feeding in done:
            feeding.result()
            click.echo(f"spy: sources exhausted ({hub.counters.published} published)", err=True)
            if options.exit_when_done:
                await hub.drain()
            else:
                await stopping
        else:
            feeding.cancel()
        stopping.cancel()
    finally:
        await server.stop()
    return dataclasses.asdict(hub.counters)


async def _feed(hub: SpyHub, options: ServeOptions) -> None:
    if options.wait_for_subscribers:
        await hub.wait_for_subscribers(options.wait_for_subscribers)
    interval = 1.0 / options.rate if options.rate > 0 else 0.0
    async for vaa in _sources(options):
        for _ in range(options.copies):
            await hub.publish(vaa)
        # Yield to the server tasks; with a rate, pace the stream.
        await asyncio.sleep(interval)


async def _sources(options: ServeOptions) -> AsyncIterator[bytes]:
    from chainloom.spy.errors import SpyError
    from chainloom_dev.sim.spy_server import decode_vaa_line, read_vaa_lines

    if options.events_chains:
        loop = asyncio.get_running_loop()
        for chain in options.events_chains:
            for vaa in await loop.run_in_executor(None, _stored_vaas, options, chain):
                yield vaa
    for name in options.files:
        try:
            handle: TextIO = open(name)  # noqa: SIM115 - closed below, read lazily
        except OSError as error:
            raise SpyError(f"cannot read {name}: {error.strerror}") from None
        with handle:
            for vaa in read_vaa_lines(handle, source=name):
                yield vaa
    if options.use_stdin:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue(1024)

        def pump() -> None:
            for line in sys.stdin:
                asyncio.run_coroutine_threadsafe(queue.put(line), loop).result()
            asyncio.run_coroutine_threadsafe(queue.put(None), loop).result()

        reader = loop.run_in_executor(None, pump)
        number = 0
        while (line := await queue.get()) is not None:
            number += 1
            decoded = decode_vaa_line(line, source="stdin", number=number)
            if decoded is not None:
                yield decoded
        await reader


@spy.command("serve-public-api")
@click.option(
    "--listen",
    "address",
    default="127.0.0.1:7071",
    show_default=True,
    help="host:port to serve on (port 0 picks a free port).",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A file of signed VAAs, one hex or base64 per line (repeatable).",
)
@click.option(
    "--table",
    help="Serve the signed VAAs of this events table instead (bigtable.table; the emulator "
    "when BIGTABLE_EMULATOR_HOST is set).",
)
@click.option("--bigtable-project", help="Event store project (bigtable.project).")
@click.option("--bigtable-instance", help="Event store instance (bigtable.instance).")
@click.option(
    "--withhold",
    multiple=True,
    metavar="CHAIN/EMITTER/SEQ[-SEQ]",
    help="Answer NOT_FOUND for these even though the files hold them (repeatable).",
)
@click.option(
    "--fail",
    multiple=True,
    metavar="CHAIN/EMITTER/SEQ[-SEQ]",
    help="Answer INTERNAL for these (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the final counters as JSON.")
def serve_public_api(
    *,
    address: str,
    files: tuple[str, ...],
    table: str | None,
    bigtable_project: str | None,
    bigtable_instance: str | None,
    withhold: tuple[str, ...],
    fail: tuple[str, ...],
    as_json: bool,
) -> None:
    """Serve the guardian public API's GetSignedVAA from files of signed VAAs or from the
    event store (--table).

    A stand-in for a guardian's ``publicrpc.v1.PublicRPCService`` (plaintext gRPC) for
    gap backfill in tests and demos: a VAA not in the files (or the table) is NOT_FOUND.
    SIGINT and SIGTERM stop it (exit 0, counters printed); a bad file or selection exits 2,
    an unreachable event store 4.
    """
    import dataclasses

    from chainloom.eventstore.queries import EventReader
    from chainloom.signals import stop_signals
    from chainloom_dev.sim.publicrpc_server import (
        PublicRpcServer,
        PublicRpcServicer,
        StoreArchive,
        VaaArchive,
        load_archive,
    )
    from chainloom_dev.sim.spy_server import parse_selection

    if bool(files) == bool(table):
        raise click.UsageError("give --file (one or more) or --table, not both")
    for name in files:
        check_input_file(name, option="--file")
    withheld = set().union(*(parse_selection(text) for text in withhold))
    failing = set().union(*(parse_selection(text) for text in fail))
    tables = None
    if table:
        tables = _open_events(table, bigtable_project, bigtable_instance)
        archive: VaaArchive = StoreArchive(EventReader(tables))
        what = f"the events table {table}"
    else:
        archive = files_archive = load_archive(files)
        what = f"{len(files_archive)} VAAs"
    server = PublicRpcServer(PublicRpcServicer(archive, withhold=withheld, fail=failing), address)
    with stop_signals() as stop:
        try:
            server.start()
        except BaseException:
            if tables is not None:
                tables.close()
            raise
        click.echo(f"public-api: {what}, listening on {server.target}", err=True)
        stop.wait()
    server.stop()
    if tables is not None:
        tables.close()
    counters = dataclasses.asdict(server.servicer.counters)
    if as_json:
        click.echo(json.dumps(counters))
    else:
        click.echo(" ".join(f"{k}={v}" for k, v in counters.items()), err=True)


@spy.command()
@click.option("--address", default="127.0.0.1:7073", show_default=True, help="Spy host:port.")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    help="<chain id>:<hex emitter address> (repeatable, OR-ed; none: everything).",
)
@click.option("--count", default=0, help="Stop after this many VAAs (0: never).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per VAA.")
@click.option(
    "--connect-timeout",
    type=click.FloatRange(0),
    default=10.0,
    show_default=True,
    help="Exit 4 if no stream is established within this many seconds (0: keep retrying).",
)
def subscribe(
    address: str, filters: tuple[str, ...], count: int, as_json: bool, connect_timeout: float
) -> None:
    """Print the VAAs a spy streams, one hex per line.

    Reconnects with backoff when a stream ends; only the first connection has a deadline.
    """
    from chainloom.spy.errors import SpyError
    from chainloom.spy.protocol import EmitterKey

    try:
        keys = [EmitterKey.from_text(text) for text in filters]
    except SpyError as error:
        fail(f"--filter: {error}")
    asyncio.run(_subscribe(address, keys, count, as_json, connect_timeout))


async def _subscribe(
    address: str, keys: list[Any], count: int, as_json: bool, connect_timeout: float
) -> None:
    from chainloom.spy.client import SpyClient

    client = SpyClient(address, keys)
    watchdog = asyncio.create_task(_first_connection(client, connect_timeout or None))
    seen = 0
    try:
        async for vaa in client.messages():
            if as_json:
                click.echo(json.dumps({"vaa": vaa.hex(), "length": len(vaa)}))
            else:
                click.echo(vaa.hex())
            seen += 1
            if count and seen >= count:
                client.stop()
    finally:
        watchdog.cancel()
    if watchdog.done() and not watchdog.cancelled() and not watchdog.result():
        raise TimeoutError(
            f"spy {address}: no stream within {connect_timeout:g}s "
            f"(last error: {client.counters.last_error or 'none'})"
        )


async def _first_connection(client: Any, timeout: float | None) -> bool:
    """Whether ``client`` connects within ``timeout``; stops it when it does not."""
    try:
        await client.wait_connected(timeout)
    except TimeoutError:
        client.stop()
        return False
    return True


def _open_events(table: str, project: str | None, instance: str | None) -> BigtableTables:
    """The event store's tables for serve-public-api, checked with one read (an unreachable
    store exits 4, a missing table 2)."""
    from chainloom.eventstore.config import EventStoreSettings
    from chainloom.eventstore.keys import MessageKey
    from chainloom.eventstore.service import open_store
    from chainloom.settings import load_settings

    flags = {"bigtable.table": table, "bigtable.project": project, "bigtable.instance": instance}
    settings = load_settings(EventStoreSettings, flags=flags)
    tables = open_store(settings)
    try:
        tables.read_event_rows([MessageKey(0, "0" * 64, 0).row_key])
    except BaseException:
        tables.close()
        raise
    return tables


def _stored_vaas(options: ServeOptions, chain: int) -> list[bytes]:
    """The signed VAAs of one chain in the event store, in row-key order."""
    from google.api_core.exceptions import GoogleAPIError

    from chainloom.eventstore import schema
    from chainloom.eventstore.config import EventStoreSettings
    from chainloom.eventstore.errors import EventStoreError
    from chainloom.eventstore.queries import EventReader
    from chainloom.eventstore.service import open_store
    from chainloom.settings import SettingsError, load_settings
    from chainloom.spy.errors import SpyError
    from chainloom.wormhole.sequences import MAX_SEQUENCE

    flags = {
        "bigtable.project": options.bigtable_project,
        "bigtable.instance": options.bigtable_instance,
        "bigtable.table": options.bigtable_table,
    }
    table = options.bigtable_table or "?"
    try:
        settings = load_settings(EventStoreSettings, flags=flags)
        table = settings.bigtable.table
        with open_store(settings) as tables:
            stored = EventReader(tables).scan(
                chain,
                emitter=options.events_emitter,
                from_seq=options.from_seq,
                to_seq=MAX_SEQUENCE if options.to_seq is None else options.to_seq,
                families=[schema.QUORUM_STATE],
            )
    except (EventStoreError, SettingsError) as error:
        raise SpyError(f"event store: {error}") from None
    except GoogleAPIError as error:
        raise SpyError(f"event store {table}: {error}") from None
    return [message.signed_vaa for message in stored if message.signed_vaa is not None]
