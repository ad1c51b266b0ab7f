"""``chainloom indexer run``: the streaming indexer (guardian spy -> event store).

It parses flags, loads :class:`~chainloom.indexer.config.IndexerSettings` with the flags as
the top layer, and calls :func:`chainloom.indexer.service.run_indexer`. SIGTERM and SIGINT are
its normal stop: it drains its buffer and exits 0. Exit codes (docs/exit-codes.md): 2 bad
settings or missing tables, 4 the store unreachable at start or still down when the drain
ran out of time.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

import click

from chainloom.cli.options import config_option, fail, load_or_exit

if TYPE_CHECKING:
    from chainloom.indexer.service import Started


@click.group()
def indexer() -> None:
    """The streaming indexer: a guardian spy's VAAs into the event store."""


@indexer.command()
@config_option("CHAINLOOM_INDEXER_CONFIG")
@click.option("--spy", "spy_address", help="Spy host:port (spy.address).")
@click.option(
    "--emitter",
    "emitters",
    multiple=True,
    help="Only this emitter, as CHAIN:ADDRESS (repeatable; replaces spy.emitters).",
)
@click.option("--project", help="Bigtable project (bigtable.project).")
@click.option("--instance", help="Bigtable instance (bigtable.instance).")
@click.option("--table", help="Events table (bigtable.table).")
@click.option("--guardian-set", help="mainnet, devnet or a file (guardian_sets.source).")
@click.option("--probe-host", help="Interface of the probes (probes.host).")
@click.option("--probe-port", type=int, help="Port of the probes, 0 picks one (probes.port).")
def run(**options: Any) -> None:
    """Subscribe to a spy and keep the event store current until SIGTERM."""
    from chainloom.indexer.config import IndexerSettings
    from chainloom.indexer.service import run_indexer
    from chainloom.telemetry import setup as setup_telemetry

    emitters = None
    if options["emitters"]:
        emitters = [_emitter(text) for text in options["emitters"]]
    flags = {
        "spy.address": options["spy_address"],
        "spy.emitters": emitters,
        "bigtable.project": options["project"],
        "bigtable.instance": options["instance"],
        "bigtable.table": options["table"],
        "guardian_sets.source": options["guardian_set"],
        "probes.host": options["probe_host"],
        "probes.port": options["probe_port"],
    }
    settings = load_or_exit(IndexerSettings, options["config_path"], flags)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)

    def started(info: Started) -> None:
        where = f"; probes on port {info.probe_port}" if info.probe_port is not None else ""
        click.echo(f"indexer: subscribing to spy {info.spy_address}{where}", err=True)

    observed = setup_telemetry("chainloom-indexer")  # OTEL_* decides; off by default
    try:
        pipeline = run_indexer(
            settings, on_started=started, metric_readers=observed.otlp_metric_readers()
        )
    finally:
        observed.shutdown()
    counters = pipeline.counters
    click.echo(
        f"indexer: stopped; received {counters.received}, duplicates {counters.duplicates}, "
        f"refused {counters.refused}, written {counters.written}",
        err=True,
    )


def _emitter(text: str) -> dict[str, Any]:
    chain, sep, address = text.partition(":")
    if not sep or not chain.strip() or not address.strip():
        fail(f"--emitter {text!r}: expected CHAIN:ADDRESS (chain id or name, hex address)")
    chain = chain.strip()
    return {
        "chain": int(chain) if chain.isascii() and chain.isdigit() else chain,
        "address": address,
    }
