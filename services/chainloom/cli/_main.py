"""The root ``chainloom`` group.

Each subcommand group lives in its own module (``chainloom.cli.<name>``) and is imported only
when it is invoked, so ``chainloom --help`` and ``chainloom vaa decode`` do not pay for loading
the Bigtable, Cassandra or Spark clients.

Whatever a subcommand raises and does not handle ends here: :mod:`chainloom.cli.boundary`
turns it into one line and an exit code of docs/exit-codes.md, so no command shows a
traceback. click's own exits (usage errors, ``--help``, ``sys.exit``) pass through untouched.
"""

from __future__ import annotations

from typing import Any

import click

from chainloom.cli.lazy import LazyGroup, Subcommands

SUBCOMMANDS: Subcommands = {
    "vaa": ("chainloom.cli.vaa", "vaa", "Decode and verify Wormhole VAAs, print guardian sets."),
    "events": ("chainloom.cli.events", "events", "The Wormhole event store on Bigtable."),
    "ledger": ("chainloom.cli.ledger", "ledger", "The XRP Ledger history backend."),
    "relayer": ("chainloom.cli.relayer", "relayer", "The token-bridge relayer."),
    "indexer": ("chainloom.cli.indexer", "indexer", "The streaming indexer (spy -> event store)."),
    "config": ("chainloom.cli.config", "config", "Settings: JSON Schema and effective values."),
    "spark": ("chainloom.cli.spark", "spark", "Run the Spark jobs, or render them for Kubernetes."),
    "operator": ("chainloom.cli.operator", "operator", "The Kubernetes operator and its CRDs."),
    "evm": ("chainloom.cli.evm", "evm", "Put the project's contracts on an EVM chain."),
}


@click.group(
    cls=LazyGroup, subcommands=SUBCOMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="chainloom")
def main(**_: Any) -> None:
    """chainloom: index and relay Wormhole and XRP Ledger data, on Kubernetes or a laptop."""
