"""Loading a service's settings for a command: flags are the top layer, errors exit 2.

Every command that runs a service takes ``--config FILE`` and a few flags; it passes the flags
that were given (dotted field paths) to :func:`chainloom.settings.load_settings`, which puts
them over the environment, the file and the defaults. Nothing here writes environment
variables or repeats a default: the models hold the defaults. pydantic is imported only when
a command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from chainloom.settings import ServiceSettings

S = TypeVar("S", bound="ServiceSettings")
F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """One line on stderr and exit status 2 (bad input or configuration)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def load_or_exit(model: type[S], config_file: str | None, flags: Mapping[str, Any]) -> S:
    """``model`` from its sources with ``flags`` on top; a bad value exits 2 naming it."""
    from chainloom.settings import SettingsError, load_settings

    try:
        return load_settings(model, config_file=config_file, flags=flags)
    except SettingsError as error:
        fail(str(error))


def config_option(env: str) -> Callable[[F], F]:
    """``--config FILE``: the YAML settings file (default ``$<env>``)."""
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help=f"YAML/JSON settings file (default: ${env}); see docs/configuration.md.",
    )
