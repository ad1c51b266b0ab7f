"""The ``chainloom-dev`` command: the local stack and the simulators, lazily loaded."""

from chainloom_dev.cli._main import main

__all__ = ["main"]
