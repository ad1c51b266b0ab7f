"""The ``chainloom`` command: a click group whose subcommand groups load lazily."""

from chainloom.cli._main import main

__all__ = ["main"]
