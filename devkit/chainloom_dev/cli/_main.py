"""The root ``chainloom-dev`` group: the same lazy loading and error boundary as ``chainloom``
(:class:`chainloom.cli.lazy.LazyGroup`), with the development commands."""

from __future__ import annotations

from typing import Any

import click

from chainloom.cli.lazy import LazyGroup, Subcommands

SUBCOMMANDS: Subcommands = {
    "stack": (
        "chainloom_dev.cli.stack",
        "stack",
        "Install, start, inspect and stop the local stack.",
    ),
    "spy": ("chainloom_dev.cli.spy", "spy", "A guardian-spy-compatible gRPC server (simulated)."),
    "vaa": ("chainloom_dev.cli.vaa", "vaa", "Generate signed VAAs with the dev guardians."),
    "ledger": ("chainloom_dev.cli.ledger", "ledger", "Generate and replay XRP Ledger dumps."),
    "evm": ("chainloom_dev.cli.evm", "evm", "Build the project's contract artifacts."),
}


@click.group(
    cls=LazyGroup, subcommands=SUBCOMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="chainloom-dev")
def main(**_: Any) -> None:
    """chainloom-dev: the local stack and the simulators chainloom is developed against."""
