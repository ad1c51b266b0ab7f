"""``chainloom ledger``: load XRP Ledger history into a backend and read it back.

``load`` runs the ETL from a dump file (or rippled's gRPC API) into SQLite or Cassandra, and
the read commands (``range``, ``header``, ``objects``, ``account-tx``,
``nft``) query what was stored. Every command takes ``--json``; bad input exits 2 with one line
naming it.
"""

from __future__ import annotations

import functools
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from chainloom.cli.common import check_input_file
from chainloom.cli.options import config_option, load_or_exit

if TYPE_CHECKING:
    from chainloom.ledger.backend import BackendInterface
    from chainloom.ledger.config import LedgerSettings
    from chainloom.ledger.etl import Progress

F = TypeVar("F", bound=Callable[..., Any])


def _backend_options(function: F) -> F:
    options = [
        config_option("CHAINLOOM_LEDGER_CONFIG"),
        click.option(
            "--backend",
            "backend_type",
            type=click.Choice(["sqlite", "cassandra"]),
            help="Which database (database.type; default sqlite).",
        ),
        click.option("--sqlite-path", help="SQLite database file (database.sqlite.path)."),
        click.option(
            "--cassandra-hosts",
            help="Comma-separated contact points, host[:port] (database.cassandra.hosts, .port).",
        ),
        click.option("--keyspace", help="Cassandra keyspace (database.cassandra.keyspace)."),
        click.option(
            "--replication-factor",
            type=int,
            help="Replication factor if the keyspace is created "
            "(database.cassandra.replication_factor).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _feed_options(function: F) -> F:
    """``--feed-redis`` / ``--feed-channel``: the committed-ledger feed between ``load`` and
    ``api`` when they run in different processes (``feed.*``; docs/ledger-api.md,
    Subscriptions)."""
    options = [
        click.option(
            "--feed-redis",
            metavar="URL",
            help="Redis URL of the committed-ledger feed: load announces, api listens "
            "(feed.redis.url; its TLS, user and password file come from feed.redis).",
        ),
        click.option(
            "--feed-channel",
            help="Redis pub/sub channel of the feed (feed.channel; default "
            "KEY_PREFIX:ledger:committed).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _feed_flags(feed_redis: str | None, feed_channel: str | None) -> dict[str, Any]:
    """The feed flags as dotted settings (None: not given)."""
    return {"feed.redis.url": feed_redis, "feed.channel": feed_channel}


def _guard(function: F) -> F:
    """Turn chainloom's deliberate errors into one line on stderr and the exit code the CLI's
    error boundary gives them (2 for bad input, 4 when the database cannot be reached)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from chainloom.cli.boundary import report
        from chainloom.errors import ChainloomError

        try:
            return function(*args, **kwargs)
        except ChainloomError as refused:
            sys.exit(report(refused))

    return wrapper  # type: ignore[return-value]


def _open_backend(
    options: dict[str, Any], *, read_only: bool, existing: bool = False
) -> BackendInterface:
    """Flags -> LedgerSettings (over --config and the environment) -> the backend."""
    from chainloom.ledger.service import open_backend

    return open_backend(_ledger_settings(options), read_only=read_only, existing=existing)


def _ledger_settings(options: dict[str, Any], more: dict[str, Any] | None = None) -> LedgerSettings:
    """The backend flags (and ``more`` dotted flags) over --config and the environment."""
    from chainloom.ledger.config import LedgerSettings
    from chainloom.ledger.errors import LedgerConfigError

    flags: dict[str, Any] = {
        **(more or {}),
        "database.type": options["backend_type"],
        "database.sqlite.path": options["sqlite_path"],
        "database.cassandra.keyspace": options["keyspace"],
        "database.cassandra.replication_factor": options["replication_factor"],
    }
    if options["cassandra_hosts"]:
        hosts: list[str] = []
        for entry in options["cassandra_hosts"].split(","):
            host, _, port_text = entry.strip().partition(":")
            if port_text:
                if not port_text.isdigit():
                    raise LedgerConfigError(f"--cassandra-hosts: bad port in {entry!r}")
                flags["database.cassandra.port"] = int(port_text)
            hosts.append(host)
        flags["database.cassandra.hosts"] = hosts
    return load_or_exit(LedgerSettings, options["config_path"], flags)


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex().upper()


def _parse_hex(text: str, what: str, size: int) -> bytes:
    from chainloom.ledger.errors import LedgerInputError

    try:
        value = bytes.fromhex(text)
    except ValueError:
        raise LedgerInputError(f"{what} {text!r} is not hex") from None
    if len(value) != size:
        raise LedgerInputError(f"{what} {text!r} is {len(value)} bytes, expected {size}")
    return value


def _emit(as_json: bool, data: Any, lines: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=None))
    else:
        for line in lines:
            click.echo(line)


@click.group()
def ledger() -> None:
    """The XRP Ledger history backend: load ledgers and read them back."""


# ------------------------------------------------------------------------------- load


@ledger.command()
@click.argument("dump", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--grpc", "grpc_address", help="Load from a rippled gRPC endpoint host:port.")
@click.option("--start", type=int, help="First ledger of an empty store (gRPC; default latest).")
@click.option("--stop", type=int, help="Stop after this ledger.")
@click.option("--follow", is_flag=True, help="Wait for new ledgers instead of stopping.")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
@click.option(
    "--verify-state",
    is_flag=True,
    help="Also check every ledger's account_hash (whole state in memory; small networks).",
)
@_feed_options
@_backend_options
@_guard
def load(
    dump: Path | None,
    *,
    grpc_address: str | None,
    start: int | None,
    stop: int | None,
    follow: bool,
    quiet: bool,
    verify_state: bool,
    feed_redis: str | None,
    feed_channel: str | None,
    **options: Any,
) -> None:
    """Load a ledger dump (or a gRPC source) into the backend, resuming where it stopped."""
    from chainloom.ledger.etl import LedgerEtl
    from chainloom.ledger.feed_redis import feed_from
    from chainloom.ledger.service import open_backend, open_source
    from chainloom.telemetry import setup as setup_telemetry

    loaded = _ledger_settings(options, _feed_flags(feed_redis, feed_channel))
    feed = feed_from(loaded.feed)
    if dump is not None and grpc_address is None:
        check_input_file(dump, option="DUMP")
    source = open_source(dump=dump, grpc=grpc_address, start=start)
    last_report = [0.0]

    def report(progress: Progress) -> None:
        now = time.monotonic()
        if quiet or now - last_report[0] < 1.0:
            return
        last_report[0] = now
        lag = "?" if progress.lag is None else str(progress.lag)
        click.echo(
            f"ledger {progress.sequence}: {progress.ledgers} ledgers, "
            f"{progress.ledgers_per_second:.1f} ledgers/s, lag {lag}, "
            f"{progress.transactions} txs, {progress.objects} objects",
            err=True,
        )

    backend = open_backend(loaded, read_only=False)
    observed = setup_telemetry("chainloom-ledger-etl")  # OTEL_* decides; off by default
    try:
        etl = LedgerEtl(backend, source, on_progress=report, verify_state=verify_state, feed=feed)
        summary = etl.run(stop=stop, follow=follow)
    finally:
        backend.close()
        source.close()
        observed.shutdown()
        if feed is not None:
            feed.close()
    data = {
        "first_committed": summary.first_committed,
        "last_committed": summary.last_committed,
        "resumed_from": summary.resumed_from,
        "ledgers": summary.ledgers,
        "transactions": summary.transactions,
        "objects": summary.objects,
        "seconds": round(summary.seconds, 3),
        "ledgers_per_second": round(summary.ledgers_per_second, 2),
        "stopped_because": summary.stopped_because,
    }
    _emit(
        options["as_json"],
        data,
        [
            f"loaded {summary.ledgers} ledgers ({summary.first_committed}..."
            f"{summary.last_committed}), {summary.transactions} transactions, "
            f"{summary.objects} objects in {summary.seconds:.2f}s "
            f"({summary.ledgers_per_second:.1f} ledgers/s); {summary.stopped_because}"
        ],
    )
    if summary.stopped_because.startswith("write conflict"):
        sys.exit(3)


# ------------------------------------------------------------------------------- reads


@ledger.command(name="backfill-mpt-holders")
@_backend_options
@_guard
def backfill_mpt_holders_(**options: Any) -> None:
    """Fill the MPToken holders table of a store loaded before the ETL wrote it."""
    from chainloom.ledger.mpt_backfill import backfill_mpt_holders

    backend = _open_backend(options, read_only=False, existing=True)
    try:
        written = backfill_mpt_holders(backend)
    finally:
        backend.close()
    _emit(options["as_json"], {"holders": written}, [f"{written} MPToken holder rows written"])


@ledger.command(name="range")
@_backend_options
@_guard
def range_(**options: Any) -> None:
    """The stored ledger range (what readers may see)."""
    backend = _open_backend(options, read_only=True)
    try:
        found = backend.hard_fetch_ledger_range()
    finally:
        backend.close()
    if found is None:
        _emit(options["as_json"], {"min": None, "max": None}, ["no ledgers stored"])
        return
    _emit(
        options["as_json"],
        {"min": found.min_sequence, "max": found.max_sequence},
        [f"{found.min_sequence}-{found.max_sequence}"],
    )


@ledger.command()
@click.argument("sequence", type=int)
@_backend_options
@_guard
def header(sequence: int, **options: Any) -> None:
    """One stored ledger header."""
    from chainloom.ledger.errors import LedgerInputError

    backend = _open_backend(options, read_only=True)
    try:
        backend.hard_fetch_ledger_range()
        found = backend.fetch_ledger_by_sequence(sequence) if backend.is_visible(sequence) else None
    finally:
        backend.close()
    if found is None:
        raise LedgerInputError(f"ledger {sequence} is not in the stored range")
    data = {
        "ledger_index": found.sequence,
        "hash": _hex(found.hash),
        "parent_hash": _hex(found.parent_hash),
        "transaction_hash": _hex(found.transaction_hash),
        "account_hash": _hex(found.account_hash),
        "total_coins": str(found.total_drops),
        "parent_close_time": found.parent_close_time,
        "close_time": found.close_time,
        "close_time_resolution": found.close_time_resolution,
        "close_flags": found.close_flags,
    }
    _emit(options["as_json"], data, [f"{k}: {v}" for k, v in data.items()])


@ledger.command()
@click.option("--at", "sequence", type=int, required=True, help="Ledger sequence.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=256, show_default=True)
@click.option("--cursor", help="Continue after this key (a previous page's cursor).")
@_backend_options
@_guard
def objects(sequence: int, limit: int, cursor: str | None, **options: Any) -> None:
    """A page of the state at a ledger, in key order (a ledger page walk)."""
    from chainloom.ledger.errors import LedgerInputError
    from chainloom.ledger.xrpl import fields as sf
    from chainloom.ledger.xrpl.parse import ledger_entry_type

    start = _parse_hex(cursor, "cursor", 32) if cursor else None
    backend = _open_backend(options, read_only=True)
    try:
        backend.hard_fetch_ledger_range()
        if not backend.is_visible(sequence):
            raise LedgerInputError(f"ledger {sequence} is not in the stored range")
        page = backend.fetch_ledger_page(start, sequence, limit)
    finally:
        backend.close()
    rows = [
        {
            "key": _hex(o.key),
            "type": sf.ledger_entry_name(ledger_entry_type(o.blob)),
            "blob": _hex(o.blob),
        }
        for o in page.objects
    ]
    _emit(
        options["as_json"],
        {"ledger_index": sequence, "objects": rows, "cursor": _hex(page.cursor)},
        [f"{r['key']} {r['type']}" for r in rows]
        + ([f"cursor: {_hex(page.cursor)}"] if page.cursor else []),
    )


@ledger.command(name="account-tx")
@click.argument("account")
@click.option("--forward", is_flag=True, help="Oldest first.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=200, show_default=True)
@click.option("--marker", help="LEDGER:INDEX from a previous page.")
@_backend_options
@_guard
def account_tx(account: str, forward: bool, limit: int, marker: str | None, **options: Any) -> None:
    """An account's transactions (newest first unless --forward), paged by marker."""
    from chainloom.ledger.errors import LedgerInputError
    from chainloom.ledger.types import TransactionsCursor
    from chainloom.ledger.xrpl.address import decode_account
    from chainloom.ledger.xrpl.hashing import transaction_id
    from chainloom.ledger.xrpl.parse import parse_metadata, parse_transaction

    account_id = decode_account(account) if account.startswith("r") else None
    if account_id is None:
        account_id = _parse_hex(account, "account", 20)
    cursor = None
    if marker:
        ledger_text, _, index_text = marker.partition(":")
        if not (f"{ledger_text}{index_text}".isascii() and ledger_text.isdigit()
                and index_text.isdigit()):  # fmt: skip
            raise LedgerInputError(f"marker {marker!r} is not LEDGER:INDEX")
        cursor = TransactionsCursor(int(ledger_text), int(index_text))
    backend = _open_backend(options, read_only=True)
    try:
        page = backend.fetch_account_transactions(account_id, limit, forward, cursor)
    finally:
        backend.close()
    rows = []
    for item in page.transactions:
        tx = parse_transaction(item.transaction)
        meta = parse_metadata(item.metadata)
        rows.append(
            {
                "hash": _hex(transaction_id(item.transaction)),
                "ledger_index": item.ledger_sequence,
                "transaction_index": meta.transaction_index,
                "date": item.date,
                "type": tx.type_name,
                "result": meta.result_name,
            }
        )
    next_marker = (
        None
        if page.cursor is None
        else f"{page.cursor.ledger_sequence}:{page.cursor.transaction_index}"
    )
    _emit(
        options["as_json"],
        {"account": account, "transactions": rows, "marker": next_marker},
        [
            f"{r['ledger_index']}:{r['transaction_index']} {r['hash']} {r['type']} {r['result']}"
            for r in rows
        ]
        + ([f"marker: {next_marker}"] if next_marker else []),
    )


@ledger.command()
@click.argument("token_id")
@click.option("--at", "sequence", type=int, help="Ledger sequence (default: the newest).")
@_backend_options
@_guard
def nft(token_id: str, sequence: int | None, **options: Any) -> None:
    """An NFT's owner, URI and burn status at a ledger."""
    from chainloom.ledger.errors import LedgerInputError
    from chainloom.ledger.xrpl.address import encode_account

    token = _parse_hex(token_id, "token ID", 32)
    backend = _open_backend(options, read_only=True)
    try:
        stored = backend.hard_fetch_ledger_range()
        if stored is None:
            raise LedgerInputError("no ledgers stored")
        at = stored.max_sequence if sequence is None else sequence
        if not backend.is_visible(at):
            raise LedgerInputError(f"ledger {at} is not in the stored range")
        found = backend.fetch_nft(token, at)
    finally:
        backend.close()
    if found is None:
        raise LedgerInputError(f"NFT {token_id} is not known at ledger {at}")
    data = {
        "nft_id": _hex(found.token_id),
        "ledger_index": found.ledger_sequence,
        "owner": encode_account(found.owner),
        "is_burned": found.is_burned,
        "uri": _hex(found.uri),
    }
    _emit(options["as_json"], data, [f"{k}: {v}" for k, v in data.items()])


# ------------------------------------------------------------------------------- api


@ledger.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=51234, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=16,
    show_default=True,
    help="Backend calls run at once (a thread pool).",
)
@click.option(
    "--max-pending",
    type=click.IntRange(1),
    default=256,
    show_default=True,
    help="Requests in flight before answering tooBusy (503).",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(0, min_open=True),
    default=20.0,
    show_default=True,
    help="Seconds for a request head (and the keep-alive timeout); then the connection closes.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=4096,
    show_default=True,
    help="Open connections before a new one is refused (never above the descriptor limit).",
)
@click.option(
    "--client-budget",
    type=click.IntRange(1),
    default=64,
    show_default=True,
    help="Weight one client address may have in flight before slowDown (ledger_data 8).",
)
@click.option(
    "--ws-idle-timeout",
    type=click.FloatRange(0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds a WebSocket may stay without a request before it is closed.",
)
@click.option(
    "--rippled",
    "rippled",
    multiple=True,
    metavar="URL",
    help="A rippled to forward calls needing a live server to: http(s):// for its JSON-RPC "
    "API, ws(s):// for its WebSocket API (repeatable, asked in order; forwarding.rippled).",
)
@click.option(
    "--forward-timeout",
    type=click.FloatRange(0, min_open=True),
    help="Seconds one rippled may take per forwarded call (forwarding.request_timeout; 10).",
)
@click.option(
    "--ws-queue-limit",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    help="Messages waiting on one WebSocket before its client is dropped as too slow (1008).",
)
@_feed_options
@_backend_options
@_guard
def api(
    host: str,
    port: int,
    workers: int,
    max_pending: int,
    *,
    header_timeout: float,
    max_connections: int,
    ws_idle_timeout: float,
    client_budget: int,
    rippled: tuple[str, ...],
    forward_timeout: float | None,
    ws_queue_limit: int,
    feed_redis: str | None,
    feed_channel: str | None,
    **options: Any,
) -> None:
    """Serve rippled's JSON-RPC API (as Clio does) from the backend until interrupted;
    forward what needs a live server to --rippled."""
    import asyncio
    from importlib.metadata import PackageNotFoundError, version

    from chainloom.ledger.api.server import ApiOptions, serve
    from chainloom.ledger.feed_redis import feed_from
    from chainloom.ledger.service import open_backend

    try:
        __version__ = version("chainloom")
    except PackageNotFoundError:
        __version__ = "0"

    loaded = _ledger_settings(
        options,
        {
            "forwarding.rippled": list(rippled) or None,
            "forwarding.request_timeout": forward_timeout,
            **_feed_flags(feed_redis, feed_channel),
        },
    )
    feed = feed_from(loaded.feed)
    backend = open_backend(loaded, read_only=True)
    settings = ApiOptions(
        workers=workers,
        max_pending=max_pending,
        version=__version__,
        header_timeout=header_timeout,
        body_timeout=header_timeout,
        max_connections=max_connections,
        ws_idle_timeout=ws_idle_timeout,
        client_budget=client_budget,
        forwarding=loaded.forwarding,
        ws_queue_limit=ws_queue_limit,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)

        def ready(bound: int) -> None:
            click.echo(f"ledger api on http://{host}:{bound}/", err=True)

        await serve(backend, host, port, settings, stop=stop, on_ready=ready, feed=feed)

    try:
        asyncio.run(main())
    except OSError as error:
        from chainloom.ledger.errors import LedgerConfigError

        raise LedgerConfigError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    finally:
        backend.close()


def _add_follow() -> None:
    """``follow`` lives in :mod:`chainloom.cli.ledger_follow` and builds on the helpers above."""
    from chainloom.cli.ledger_follow import follow

    ledger.add_command(follow)


_add_follow()
