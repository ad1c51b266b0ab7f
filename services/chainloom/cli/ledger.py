"""``chainloom ledger``: placeholder until its issue lands (see the issue tracker)."""

from __future__ import annotations

import click


@click.group()
def ledger() -> None:
    """Not implemented yet."""
