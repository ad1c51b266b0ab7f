"""``chainloom relayer listen``: the listener entry point (spy stream + REST -> Redis tables).

Kept in its own module so the relayer group (``chainloom.cli.relayer``) and the listener can be
worked on separately; the group registers this command with ``relayer.add_command(listen)``.
"""

from __future__ import annotations

import click


@click.command()
def listen() -> None:
    """Validate VAAs from the spy and the REST endpoint and queue them for the workers."""
    raise click.ClickException("the listener is not wired yet (issue 6, in progress)")
