"""``chainloom-dev ledger``: synthetic XRP Ledger history for tests, benches and demos.

``generate`` writes a dump (a real state from the shared vectors, then generated
mainnet-shaped ledgers) that ``chainloom ledger load`` reads; ``replay`` serves a dump over
rippled's gRPC API (``org.xrpl.rpc.v1``), the stand-in for rippled that the ETL follows;
``rippled`` answers rippled's JSON-RPC methods that ``chainloom ledger api`` forwards.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from chainloom.cli.common import check_input_file, resolve_vectors_file


@click.group()
def ledger() -> None:
    """Generate XRP Ledger dumps and serve them as rippled's gRPC API does."""


def _emit(as_json: bool, data: Any, lines: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=None))
    else:
        for line in lines:
            click.echo(line)


@ledger.command()
@click.option("--from-state", "from_state", type=int, default=38129, show_default=True)
@click.option("--ledgers", type=click.IntRange(0), default=10, show_default=True)
@click.option("--txs-per-ledger", type=click.IntRange(1), default=100, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--mpt", is_flag=True, help="Also create MPT issuances and MPTokens, and destroy MPTokens."
)
@click.option(
    "--vectors",
    type=click.Path(path_type=Path),
    envvar="CHAINLOOM_VECTORS",
    help="xrpl_vectors.json or its directory (default: ../shared/vectors beside the source "
    "checkout).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Dump file to write.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def generate(
    *,
    from_state: int,
    ledgers: int,
    txs_per_ledger: int,
    seed: int,
    mpt: bool,
    vectors: Path | None,
    out: Path,
    as_json: bool,
) -> None:
    """Write a dump: a real state from the vectors, then N generated ledgers."""
    from chainloom.ledger.sources.dump import DumpWriter
    from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
    from chainloom_dev.sim.ledger_generator_mpt import MptWorkloadGenerator

    vectors_file = resolve_vectors_file(vectors, "xrpl_vectors.json")
    initial = vectors_ledger(vectors_file, from_state)
    kind = MptWorkloadGenerator if mpt else WorkloadGenerator
    generator = kind(initial, seed=seed, txs_per_ledger=txs_per_ledger)
    started = time.monotonic()
    transactions = changes = 0
    with DumpWriter(out) as writer:
        writer.write(initial, from_state)
        last = from_state
        for sequence, record in generator.ledgers(ledgers):
            writer.write(record, sequence)
            transactions += len(record.transactions)
            changes += len(record.objects)
            last = sequence
    data = {
        "out": str(out),
        "first": from_state,
        "last": last,
        "ledgers": ledgers,
        "transactions": transactions,
        "object_changes": changes,
        "seconds": round(time.monotonic() - started, 3),
    }
    _emit(
        as_json,
        data,
        [
            f"wrote {out}: state of {from_state} + {ledgers} ledgers "
            f"({transactions} transactions, {changes} object changes)"
        ],
    )


@ledger.command()
@click.argument("dump", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--listen", default="127.0.0.1:50051", show_default=True, help="host:port")
@click.option(
    "--interval",
    type=float,
    default=0.0,
    show_default=True,
    help="Seconds between releasing ledgers (0 = all at once), like a live network.",
)
def replay(dump: Path, listen: str, interval: float) -> None:
    """Serve a dump over rippled's gRPC API (org.xrpl.rpc.v1) until interrupted."""
    from chainloom.signals import stop_signals
    from chainloom_dev.sim.ledger_replay import ReplayServer

    check_input_file(dump, option="DUMP")
    server = ReplayServer(dump, interval=interval)
    with stop_signals() as stop:
        port = server.start(listen)
        try:
            click.echo(f"replaying {dump} on {listen.rpartition(':')[0]}:{port}", err=True)
            stop.wait()
        finally:
            server.stop()


@ledger.command()
@click.option("--listen", default="127.0.0.1:5005", show_default=True, help="host:port")
@click.option(
    "--current-ledger",
    type=click.IntRange(2),
    default=1000,
    show_default=True,
    help="The ledger_current_index it reports (the validated ledger is the one before).",
)
@click.option(
    "--mode",
    type=click.Choice(["answer", "fail", "hang"]),
    default="answer",
    show_default=True,
    help="Answer as rippled, fail every call (503), or never answer.",
)
def rippled(listen: str, current_ledger: int, mode: str) -> None:
    """Serve a stand-in for rippled's JSON-RPC API (what the ledger API forwards)."""
    from chainloom.signals import stop_signals
    from chainloom_dev.sim.rippled_jsonrpc import Mode, RippledStandIn, RippledStandInThread

    host, _, port_text = listen.rpartition(":")
    if not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise click.BadParameter(f"{listen!r} is not host:port", param_hint="--listen")
    standin = RippledStandIn(current_ledger=current_ledger, mode=Mode(mode))
    server = RippledStandInThread(standin, host=host, port=int(port_text))
    with stop_signals() as stop:
        try:
            url = server.start()
        except OSError as error:
            raise click.ClickException(f"cannot listen on {listen}: {error.strerror}") from None
        try:
            click.echo(f"rippled stand-in on {url}", err=True)
            stop.wait()
        finally:
            server.stop()
        click.echo(f"{standin.count()} calls answered", err=True)
