"""The root ``chainloom`` group.

Each subcommand group lives in its own module (``chainloom.cli.<name>``) and is imported only
when it is invoked, so ``chainloom --help`` and ``chainloom vaa decode`` do not pay for loading
the Bigtable, Cassandra or Spark clients.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

# name -> (module, attribute, one-line help shown by `chainloom --help`)
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "stack": ("chainloom.cli.stack", "stack", "Install, start, inspect and stop the local stack."),
    "vaa": ("chainloom.cli.vaa", "vaa", "Decode, verify and generate Wormhole VAAs."),
    "events": ("chainloom.cli.events", "events", "The Wormhole event store on Bigtable."),
    "ledger": ("chainloom.cli.ledger", "ledger", "The XRP Ledger history backend."),
    "spy": ("chainloom.cli.spy", "spy", "A guardian-spy-compatible gRPC server."),
    "relayer": ("chainloom.cli.relayer", "relayer", "The token-bridge relayer."),
    "config": ("chainloom.cli.config", "config", "Settings: JSON Schema and effective values."),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attribute, _ = entry
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="chainloom")
def main(**_: Any) -> None:
    """chainloom: index and relay Wormhole and XRP Ledger data, on Kubernetes or a laptop."""
