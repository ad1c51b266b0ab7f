"""A click group whose subcommands are imported only when they run, under the CLI's error
boundary: the ``chainloom`` command and the dev kit's ``chainloom-dev`` are both one.

Whatever a subcommand raises and does not handle ends here: :mod:`chainloom.cli.boundary`
turns it into one line and an exit code of docs/exit-codes.md, so no command shows a
traceback. click's own exits (usage errors, ``--help``, ``sys.exit``) pass through untouched.
"""

from __future__ import annotations

import importlib
import signal
import threading
from types import FrameType
from typing import Any

import click

Subcommands = dict[str, tuple[str, str, str]]
"""name -> (module, attribute, one-line help shown by ``--help``)."""


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs,
    and runs it under the error boundary."""

    def __init__(self, *args: Any, subcommands: Subcommands, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands = subcommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.subcommands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.subcommands.get(cmd_name)
        if entry is None:
            return None
        module_name, attribute, _ = entry
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.subcommands[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        from chainloom.cli.boundary import report

        restore = _terminate_as_interrupt()
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise  # click's main() ends quietly when stdout's reader has gone
        except (Exception, KeyboardInterrupt) as error:
            ctx.exit(report(error))
        finally:
            restore()


def _terminate_as_interrupt() -> Any:
    """Let SIGTERM stop a command the way SIGINT does (exit 130, cleanup runs).

    Only when SIGTERM still has its default action: commands that install their own handler
    (servers, workers) keep it. Returns a function restoring the previous handler.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        if callable(signal.getsignal(signal.SIGINT)):
            # Whoever handles SIGINT now (Python's KeyboardInterrupt, or asyncio.run, which
            # cancels its main task cleanly) handles this SIGTERM the same way.
            signal.raise_signal(signal.SIGINT)
        else:
            raise KeyboardInterrupt  # SIGINT ignored (a background job): still stop

    signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)
