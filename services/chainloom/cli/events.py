"""``chainloom events``: create, fill and query the Wormhole event store on Bigtable.

Connection: :class:`~chainloom.eventstore.config.EventStoreSettings` from ``--config`` (or
``$CHAINLOOM_EVENTSTORE_CONFIG``), the environment (``CHAINLOOM_BIGTABLE__PROJECT``, ...) and
the flags ``--project/--instance/--table/--index-table``; ``BIGTABLE_EMULATOR_HOST`` points
the client at the emulator. The store is opened by :mod:`chainloom.eventstore.service`.
Inputs of ``put`` take the same forms as ``vaa decode``.

``gaps`` and ``backfill`` list and fill missing sequences with the steps the Spark
gap-backfill job and the indexer share (:mod:`chainloom.eventstore.backfill`).

Exit codes (``docs/eventstore.md``): 0 done; 1 a finding (schema drift, nothing stored for the
key); 2 bad input or configuration (refused VAAs, bad options, missing table); 4 Bigtable
unavailable within ``bigtable.operation_timeout`` (one line naming the endpoint and the cause).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import click

from chainloom.cli.common import ExitCode
from chainloom.cli.options import config_option, fail, load_or_exit

if TYPE_CHECKING:
    from chainloom.eventstore.backfill import FillReport
    from chainloom.eventstore.bigtable import BigtableTables
    from chainloom.eventstore.config import EventStoreSettings
    from chainloom.eventstore.errors import StoreUnavailableError
    from chainloom.eventstore.prices import PriceSource
    from chainloom.eventstore.queries import StoredMessage
    from chainloom.eventstore.writer import PutSummary


def _settings(
    ctx: click.Context, guardian_set: str | None = None, more: dict[str, object] | None = None
) -> EventStoreSettings:
    from chainloom.eventstore.config import EventStoreSettings

    options = ctx.find_root().params | (ctx.obj or {})
    flags = (more or {}) | {
        "bigtable.project": options.get("project"),
        "bigtable.instance": options.get("instance"),
        "bigtable.table": options.get("table"),
        "bigtable.index_table": options.get("index_table"),
        "guardian_sets.source": guardian_set,
    }
    return load_or_exit(EventStoreSettings, options.get("config_path"), flags)


def _connect(ctx: click.Context) -> BigtableTables:
    """The tables, once a connection to the store opened within ``bigtable.connect_timeout``;
    raises :class:`~chainloom.eventstore.errors.StoreUnavailableError` in seconds, not after
    the whole operation deadline."""
    from chainloom.eventstore.bigtable import check_reachable
    from chainloom.eventstore.errors import StoreConfigError
    from chainloom.eventstore.service import locate, open_store

    settings = _settings(ctx)
    try:
        check_reachable(locate(settings))
        return open_store(settings)
    except StoreConfigError as error:
        fail(str(error))


def _open(ctx: click.Context) -> BigtableTables:
    """:func:`_connect`, an unreachable store ending the command with one line and exit 4."""
    from chainloom.eventstore.errors import StoreUnavailableError

    try:
        return _connect(ctx)
    except StoreUnavailableError as error:
        _unavailable(error)


def _unavailable(error: StoreUnavailableError) -> NoReturn:
    click.echo(f"error: {error}", err=True)
    sys.exit(ExitCode.UNAVAILABLE)


@contextlib.contextmanager
def _exporting(service_name: str) -> Iterator[None]:
    """OTLP export of the command's spans and metrics while it runs, when ``OTEL_*`` asks
    (``chainloom.telemetry.setup``: off by default, then nothing is installed)."""
    from chainloom.telemetry import setup

    observed = setup(service_name)
    try:
        yield
    finally:
        observed.shutdown()


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """Store errors as one line: an outage exits 4, any other (a missing table) exits 2."""
    from chainloom.eventstore.errors import EventStoreError, StoreUnavailableError
    from chainloom.wormhole.errors import MessageKeyError

    try:
        yield
    except StoreUnavailableError as error:
        _unavailable(error)
    except (EventStoreError, MessageKeyError) as error:
        fail(str(error))


def _chain(text: str) -> int:
    from chainloom.wormhole import chain_id
    from chainloom.wormhole.errors import WormholeError

    try:
        return chain_id(text)
    except WormholeError as error:
        fail(f"--chain {text}: {error}")


@click.group()
@config_option("CHAINLOOM_EVENTSTORE_CONFIG")
@click.option("--project", help="Google Cloud project (bigtable.project).")
@click.option("--instance", help="Bigtable instance (bigtable.instance).")
@click.option("--table", help="Events table (bigtable.table).")
@click.option("--index-table", help="Index table (bigtable.index_table; <table>-index).")
@click.pass_context
def events(
    ctx: click.Context,
    *,
    config_path: str | None,
    project: str | None,
    instance: str | None,
    table: str | None,
    index_table: str | None,
) -> None:
    """The Wormhole event store on Bigtable (emulator via BIGTABLE_EMULATOR_HOST)."""
    # The client warns on every connection to the emulator: expected here, not news to print.
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    ctx.obj = {
        "config_path": config_path,
        "project": project,
        "instance": instance,
        "table": table,
        "index_table": index_table,
    }


@events.command()
@click.option("--check", is_flag=True, help="Only report drift; create nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def init(ctx: click.Context, check: bool, as_json: bool) -> None:
    """Create the events and index tables (idempotent) and report schema drift.

    Exits 1 when an existing table differs from the schema (nothing is changed).
    """
    from chainloom.eventstore.bigtable import check_schema, ensure_schema
    from chainloom.eventstore.service import locate

    with _store_errors():
        settings = locate(_settings(ctx))
        report = check_schema(settings) if check else ensure_schema(settings)
    if as_json:
        click.echo(json.dumps(report.as_dict()))
    else:
        for table in report.created_tables:
            click.echo(f"created table {table}")
        for drift in report.drift:
            click.echo(
                f"drift: {drift.table} family {drift.family}: {drift.problem} "
                f"(expected {drift.expected}, found {drift.actual})"
            )
        if report.in_sync:
            click.echo(f"tables {settings.table} and {settings.index_table} match the schema")
    if not report.in_sync:
        sys.exit(1)


@events.command()
@click.option(
    "--guardian-set",
    "guardian_set",
    metavar="mainnet|devnet|dev[:N]|PATH",
    help="Guardian sets to verify against (guardian_sets.source; dev[:N]: the test kit's).",
)
@click.option("--tx-id", help="Source transaction id of the (single) input, for the tx index.")
@click.option("--prices", "price_file", help="CSV/JSON price file for NotionalUSD.")
@click.option("--price-api", help="Base URL of a CoinGecko-style API for NotionalUSD.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@click.argument("inputs", nargs=-1)
@click.pass_context
def put(
    ctx: click.Context,
    *,
    guardian_set: str | None,
    tx_id: str | None,
    price_file: str | None,
    price_api: str | None,
    as_json: bool,
    inputs: tuple[str, ...],
) -> None:
    """Verify and store VAAs (hex or base64; '-' or nothing reads lines from stdin).

    Prints how many rows were new, updated, unchanged and conflicting; exits 2 if any input
    was refused (each named on stderr), after storing the others. If Bigtable becomes
    unavailable it prints what was stored so far and exits 4: running the same put again
    resumes it (putting is idempotent; rows already stored count as unchanged).
    """
    from chainloom.cli.common import each_input, load_guardian_sets, preview
    from chainloom.eventstore.errors import (
        EventStoreError,
        StoreUnavailableError,
        UnverifiedVAAError,
    )
    from chainloom.eventstore.writer import EventWriter, PutSummary
    from chainloom.wormhole import SignatureCache, all_known_emitters, parse_vaa_text
    from chainloom.wormhole.errors import WormholeError

    # The test kit's dev[:N] guardians are not a setting (they exist only in this process).
    dev_kit = guardian_set is not None and (
        guardian_set == "dev" or guardian_set.startswith("dev:")
    )
    settings = _settings(ctx, None if dev_kit else guardian_set)
    source = guardian_set if dev_kit and guardian_set else settings.guardian_sets.source
    try:
        sets = load_guardian_sets(source)
    except (WormholeError, ValueError) as error:
        fail(f"--guardian-set {source}: {error}")
    prices = _price_source(price_file, price_api)
    entries = list(each_input(inputs, sys.stdin))
    if tx_id and len(entries) != 1:
        fail("--tx-id needs exactly one input")
    refused = 0
    try:
        opened = _connect(ctx)
    except StoreUnavailableError as error:
        click.echo(f"error: {error}", err=True)
        _report(PutSummary(), as_json, not_stored=len(entries))
        sys.exit(ExitCode.UNAVAILABLE)
    from chainloom.eventstore.feed_redis import feed_from

    with opened as tables:
        writer = EventWriter(
            tables,
            sets,
            emitters=all_known_emitters(),
            prices=prices,
            signature_cache=SignatureCache(),
            feed=feed_from(_settings(ctx).api),
        )
        try:
            for label, text in entries:
                try:
                    writer.submit(parse_vaa_text(text), initiating_tx_id=tx_id)
                except (WormholeError, UnverifiedVAAError) as error:
                    refused += 1
                    writer.summary.refused += 1
                    writer.summary.refusals.append((label, str(error)))
                    click.echo(f"error: {label} ({preview(text)}): {error}", err=True)
            writer.close()
        except StoreUnavailableError as error:
            click.echo(f"error: {error}", err=True)
            _report(writer.summary, as_json, not_stored=len(entries) - _handled(writer.summary))
            sys.exit(ExitCode.UNAVAILABLE)
        except EventStoreError as error:
            fail(str(error))
    _report(writer.summary, as_json)
    if refused:
        sys.exit(ExitCode.BAD_INPUT)


def _handled(summary: PutSummary) -> int:
    """Inputs that were stored, found unchanged or in conflict, or refused."""
    return summary.new + summary.updated + summary.unchanged + summary.conflicting + summary.refused


def _price_source(price_file: str | None, price_api: str | None) -> PriceSource | None:
    from chainloom.eventstore.errors import EventStoreError
    from chainloom.eventstore.prices import FilePriceSource, HttpPriceSource
    from chainloom.wormhole.errors import MessageKeyError

    try:
        if price_file:
            return FilePriceSource.from_path(price_file)
        if price_api:
            return HttpPriceSource(price_api)
    except (EventStoreError, MessageKeyError) as error:
        fail(str(error))
    return None


def _report(summary: PutSummary, as_json: bool, not_stored: int | None = None) -> None:
    """The put summary; ``not_stored`` (after an outage) adds what is left and how to resume."""
    resume = (
        f"stopped by the outage: {not_stored} inputs not stored; run the same put again to "
        "resume (put is idempotent: inputs already stored count as unchanged)"
    )
    if as_json:
        report = summary.as_dict()
        if not_stored is not None:
            report |= {"complete": False, "not_stored": not_stored, "resume": resume}
        click.echo(json.dumps(report))
        return
    click.echo(
        f"new {summary.new}, updated {summary.updated}, unchanged {summary.unchanged}, "
        f"conflicting {summary.conflicting}, refused {summary.refused}"
    )
    if not_stored is not None:
        click.echo(resume)
    for message_id, digest in summary.conflicts:
        click.echo(f"conflict: {message_id} has a different VAA {digest} (kept)")
    for problem in summary.enrichment_errors:
        click.echo(f"warning: price lookup failed: {problem}", err=True)


def _print_messages(messages: list[StoredMessage], as_json: bool) -> None:
    if as_json:
        for message in messages:
            click.echo(json.dumps(message.to_json(), ensure_ascii=False))
        return
    for message in messages:
        view = message.to_json()
        click.echo(view["message_id"])
        for family, columns in view["families"].items():
            for qualifier, value in columns.items():
                text = value if isinstance(value, str) else json.dumps(value)
                if len(text) > 100:
                    text = text[:97] + "..."
                click.echo(f"  {family}:{qualifier}  {text}")


@events.command()
@click.option("--families", help="Comma-separated column families (default: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.argument("message_id")
@click.pass_context
def get(ctx: click.Context, families: str | None, as_json: bool, message_id: str) -> None:
    """Show one message: CHAIN/EMITTER/SEQ (or a row key). Exits 1 if it is not stored."""
    from chainloom.eventstore.errors import EventStoreError
    from chainloom.eventstore.keys import MessageKey
    from chainloom.eventstore.queries import EventReader
    from chainloom.eventstore.schema import EVENT_FAMILY_NAMES
    from chainloom.wormhole.errors import MessageKeyError

    try:
        key = MessageKey.parse(message_id)
    except (EventStoreError, MessageKeyError) as error:
        fail(str(error))
    chosen = [f.strip() for f in families.split(",") if f.strip()] if families else None
    unknown = sorted(set(chosen or []) - set(EVENT_FAMILY_NAMES))
    if unknown:
        fail(f"--families: unknown families {', '.join(unknown)}")
    with _store_errors(), _open(ctx) as tables:
        message = EventReader(tables).get(key, chosen)
    if message is None:
        click.echo(f"{key.message_id}: not stored", err=True)
        sys.exit(1)
    _print_messages([message], as_json)


@events.command()
@click.option("--chain", required=True, help="Emitter chain (name or id).")
@click.option("--emitter", help="Emitter address (hex); gives numeric sequence order.")
@click.option("--from-seq", type=click.IntRange(0, 2**64 - 1), default=0)
@click.option("--to-seq", type=click.IntRange(0, 2**64 - 1), default=2**64 - 1)
@click.option("--limit", type=click.IntRange(min=1), default=None)
@click.option("--families", help="Comma-separated column families (default: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_context
def scan(
    ctx: click.Context,
    *,
    chain: str,
    emitter: str | None,
    from_seq: int,
    to_seq: int,
    limit: int | None,
    families: str | None,
    as_json: bool,
) -> None:
    """List a chain's (or one emitter's) messages by sequence."""
    from chainloom.eventstore.queries import EventReader

    if from_seq > to_seq:
        fail(f"--from-seq {from_seq} is after --to-seq {to_seq}")
    chosen = [f.strip() for f in families.split(",") if f.strip()] if families else None
    chain_id = _chain(chain)
    with _store_errors(), _open(ctx) as tables:
        messages = EventReader(tables).scan(
            chain_id,
            emitter=emitter,
            from_seq=from_seq,
            to_seq=to_seq,
            limit=limit,
            families=chosen,
        )
    _print_messages(messages, as_json)


@events.command()
@click.option("--chain", required=True, help="Emitter chain (name or id).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_context
def recent(ctx: click.Context, chain: str, limit: int, as_json: bool) -> None:
    """A chain's newest messages (by VAA time), newest first."""
    from chainloom.eventstore.queries import EventReader

    chain_id = _chain(chain)
    with _store_errors(), _open(ctx) as tables:
        messages = EventReader(tables).recent(chain_id, limit=limit)
    _print_messages(messages, as_json)


@events.command("by-tx")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.argument("tx_id")
@click.pass_context
def by_tx(ctx: click.Context, as_json: bool, tx_id: str) -> None:
    """Messages emitted by a source transaction (exits 1 if none is indexed)."""
    from chainloom.eventstore.queries import EventReader

    with _store_errors(), _open(ctx) as tables:
        messages = EventReader(tables).by_tx(tx_id)
    if not messages:
        click.echo(f"no messages indexed for transaction {tx_id}", err=True)
        sys.exit(1)
    _print_messages(messages, as_json)


@events.command()
@click.option("--from", "first", required=True, type=click.DateTime(["%Y-%m-%d"]))
@click.option("--to", "last", required=True, type=click.DateTime(["%Y-%m-%d"]))
@click.option("--chain", help="Only this chain (name or id).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
def counts(
    ctx: click.Context, first: dt.datetime, last: dt.datetime, chain: str | None, as_json: bool
) -> None:
    """Messages per chain and UTC day over a range of days (--from to --to, both included)."""
    from chainloom.eventstore.queries import EventReader

    if first > last:
        fail(f"--from {first:%Y-%m-%d} is after --to {last:%Y-%m-%d}")
    chain_id = _chain(chain) if chain else None
    with _store_errors(), _open(ctx) as tables:
        result = EventReader(tables).count_per_day(first.date(), last.date(), chain=chain_id)
    rows = sorted(result.items())
    if as_json:
        click.echo(json.dumps([{"chain": c, "day": d, "count": n} for (c, d), n in rows]))
    else:
        for (chain_id, day), count in rows:
            click.echo(f"{day}  chain {chain_id:>5}  {count}")


@events.command()
@click.option("--chain", help="Only this emitter chain (name or id).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
def reindex(ctx: click.Context, chain: str | None, as_json: bool) -> None:
    """Write the filter index rows of stored messages (rows stored before the filter index
    existed); rewriting ones already there changes nothing."""
    from chainloom.eventstore.reindex import reindex as write_filter_index

    chain_id = _chain(chain) if chain else None
    with _store_errors(), _open(ctx) as tables:
        summary = write_filter_index(tables, chain=chain_id)
    if as_json:
        click.echo(json.dumps({"rows": summary.rows, "indexed": summary.indexed,
                               "index_rows": summary.index_rows}))  # fmt: skip
    else:
        click.echo(f"{summary.rows} rows read, {summary.indexed} indexed, "
                   f"{summary.index_rows} index rows written")  # fmt: skip


def _emitter_option(emitter: str | None) -> str | None:
    from chainloom.eventstore.keys import normalize_emitter
    from chainloom.wormhole.errors import MessageKeyError

    if emitter is None:
        return None
    try:
        return normalize_emitter(emitter)
    except MessageKeyError as error:
        fail(f"--emitter {emitter}: {error.reason}")


@events.command()
@click.option("--chain", help="Only this emitter chain (name or id).")
@click.option("--emitter", help="Only this emitter (hex; with --chain).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
def gaps(ctx: click.Context, chain: str | None, emitter: str | None, as_json: bool) -> None:
    """List the open gaps (missing sequences) per emitter, with attempts and last error.

    From the state the indexer keeps (index rows under gaps:) when there is one; else
    computed from the stored sequences (holes between each emitter's lowest and highest).
    The output says which ("source": "state" or "store"). Exits 0 either way.
    """
    from chainloom.eventstore.backfill import find_gaps

    chain_id = _chain(chain) if chain else None
    if emitter and chain_id is None:
        fail("--emitter needs --chain")
    with _store_errors(), _open(ctx) as tables:
        source, _, found = find_gaps(tables, chain=chain_id, emitter=_emitter_option(emitter))
    listed = [gap.to_json() for gap in found]
    if as_json:
        missing = sum(g["count"] for g in listed)
        click.echo(json.dumps({"source": source, "missing": missing, "gaps": listed}))
        return
    click.echo(f"{len(listed)} open gaps (from the {source})", err=True)
    for gap in listed:
        span = str(gap["first"]) if gap["count"] == 1 else f"{gap['first']}-{gap['last']}"
        line = f"{gap['chain']}/{gap['emitter']}/{span}  ({gap['count']} missing)"
        if gap["attempts"]:
            line += f"  attempts {gap['attempts']}, last: {gap['last_error']}"
        click.echo(line)


@events.command()
@click.option("--chain", help="Only this emitter chain (name or id).")
@click.option("--emitter", help="Only this emitter (hex; with --chain).")
@click.option(
    "--public-api",
    metavar="ENDPOINT,...",
    help="Guardian public-API endpoints (host:port or https://host), asked in turn "
    "(public_rpc.endpoints).",
)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per call.")
@click.option("--rounds", type=click.IntRange(min=1), help="Rounds of asking (public_rpc.rounds).")
@click.option(
    "--max-missing",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Sequences looked for per emitter when the gaps are computed from the store.",
)
@click.option(
    "--guardian-set",
    metavar="mainnet|devnet|dev[:N]|FILE",
    help="Guardian sets to verify against (guardian_sets.source; dev: the test kit's).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
def backfill(
    ctx: click.Context,
    *,
    chain: str | None,
    emitter: str | None,
    public_api: str | None,
    timeout: float | None,
    rounds: int | None,
    max_missing: int,
    guardian_set: str | None,
    as_json: bool,
) -> None:
    """Fetch the open gaps from the guardian public API and store what is found.

    The gaps are those of `events gaps`; each missing sequence is fetched as the Spark
    gap-backfill job fetches it (chainloom.eventstore.backfill) and written by the event
    writer. With the indexer's state, filled gaps are closed in it and the others keep their
    attempts and last error. What stays missing is listed; it does not fail the command.
    Exits 4 when the store (or, with gaps to fill, every endpoint) is unreachable.
    """
    from chainloom.cli.common import load_guardian_sets
    from chainloom.eventstore.backfill import GapStateRows, fill_gaps, find_gaps
    from chainloom.eventstore.writer import EventWriter
    from chainloom.publicrpc import EndpointConfigError, PublicRpcClient
    from chainloom.publicrpc.errors import PublicRpcUnavailableError
    from chainloom.wormhole import SignatureCache, all_known_emitters
    from chainloom.wormhole.errors import WormholeError

    chain_id = _chain(chain) if chain else None
    if emitter and chain_id is None:
        fail("--emitter needs --chain")
    dev_kit = guardian_set is not None and (
        guardian_set == "dev" or guardian_set.startswith("dev:")
    )
    settings = _settings(ctx, None if dev_kit else guardian_set)
    rpc = settings.public_rpc.model_copy(
        update={
            key: value
            for key, value in {
                "endpoints": tuple(e.strip() for e in (public_api or "").split(",") if e.strip())
                or None,
                "timeout": timeout,
                "rounds": rounds,
            }.items()
            if value is not None
        }
    )
    source_name = guardian_set if dev_kit and guardian_set else settings.guardian_sets.source
    try:
        sets = load_guardian_sets(source_name)
    except (WormholeError, ValueError) as error:
        fail(f"--guardian-set {source_name}: {error}")
    with _exporting("chainloom-events-backfill"), _store_errors(), _open(ctx) as tables:
        source, book, found = find_gaps(
            tables, chain=chain_id, emitter=_emitter_option(emitter), max_missing=max_missing
        )
        missing = sum(gap.range.count for gap in found)
        if not found:
            _backfill_report(source, 0, None, as_json)
            return
        if not rpc.endpoints:
            fail("no public API endpoint: give --public-api or set public_rpc.endpoints")
        try:
            client = PublicRpcClient(rpc)
            client.check_reachable()
        except EndpointConfigError as error:
            fail(str(error))
        except PublicRpcUnavailableError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(ExitCode.UNAVAILABLE)
        writer = EventWriter(
            tables, sets, emitters=all_known_emitters(), signature_cache=SignatureCache()
        )
        with client:
            report = fill_gaps(writer, client, found, book)
        if book is not None:
            GapStateRows(tables).save(
                book.emitter_json(c, e) for c, e in sorted(book.dirty) if (c, e) in book.tracks
            )
    _backfill_report(source, missing, (report, writer.summary), as_json)


def _backfill_report(
    source: str, missing: int, outcome: tuple[FillReport, PutSummary] | None, as_json: bool
) -> None:
    summary: dict[str, object] = {"source": source, "missing": missing}
    if outcome is not None:
        report, written = outcome
        summary |= {
            "asked": report.asked,
            "found": report.found,
            "new": written.new,
            "updated": written.updated,
            "unchanged": written.unchanged,
            "refused": report.refused,
            "not_found": report.not_found,
            "errors": report.errors,
            "still_missing": [
                {"message_id": r.message_id, "status": r.status.value, "reason": r.reason}
                for r in report.still_missing
            ],
        }
    if as_json:
        click.echo(json.dumps(summary))
        return
    if outcome is None:
        click.echo(f"no open gaps (from the {source})")
        return
    click.echo(
        f"{missing} missing (from the {source}): found {summary['found']}, new {summary['new']}, "
        f"refused {summary['refused']}, not found {summary['not_found']}, "
        f"errors {summary['errors']}"
    )
    for item in outcome[0].still_missing:
        click.echo(f"still missing {item.message_id}: {item.status.value}: {item.reason}")


@events.command()
@click.option("--host", help="Address to listen on (api.host; default 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="TCP port (api.port; default 4401, 0: any free)."
)
@click.pass_context
def api(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve the REST API over the store until interrupted (docs/events-api.md).

    Checks both tables first: exits 2 when they are missing, 4 when Bigtable does not answer.
    Later outages are answered per request (HTTP 503).
    """
    import asyncio
    import signal
    from importlib.metadata import PackageNotFoundError, version

    from chainloom.eventstore.bigtable import check_reachable
    from chainloom.eventstore.errors import StoreConfigError, StoreUnavailableError
    from chainloom.eventstore.service import locate, open_store

    settings = _settings(ctx, more={"api.host": host, "api.port": port})
    listen = settings.api
    try:  # an unreachable store is told in seconds, before the server is even loaded
        check_reachable(locate(settings))
    except StoreConfigError as error:
        fail(str(error))
    except StoreUnavailableError as error:
        _unavailable(error)

    from chainloom.eventstore.api.app import cursor_key, serve
    from chainloom.eventstore.api.reads import StoreReads
    from chainloom.eventstore.api.stream_reads import FeedReads
    from chainloom.eventstore.feed_redis import RedisVaaFeed, feed_from
    from chainloom.eventstore.redemptions_redis import redemptions_from

    try:
        release = version("chainloom")
    except PackageNotFoundError:
        release = "0"

    async def main(reads: StoreReads, feed_reads: FeedReads, feed: RedisVaaFeed | None) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)

        def ready(bound: int) -> None:
            click.echo(f"events api on http://{listen.host}:{bound}/", err=True)

        await serve(
            reads,
            listen,
            stop=stop,
            on_ready=ready,
            version=release,
            stream_reads=feed_reads,
            feed=feed,
            redemptions=redemptions,
        )

    try:
        cursor_key(listen.cursor_key_file)  # a bad key file stops it before anything starts
        feed = feed_from(listen)  # so does a bad password or TLS file of api.feed_redis
        redemptions = redemptions_from(listen)
        tables = open_store(settings)
    except StoreConfigError as error:
        fail(str(error))
    with _exporting("chainloom-events-api"), _store_errors(), tables:
        try:
            asyncio.run(main(StoreReads(tables), FeedReads(tables), feed))
        except OSError as error:
            fail(f"cannot listen on {listen.host}:{listen.port}: {error.strerror or error}")
