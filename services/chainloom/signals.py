"""Stopping a long-running command on SIGINT or SIGTERM without work inside a signal handler.

Python runs a signal handler in the main thread between two bytecodes of whatever it was doing.
If that code held a lock (``threading.Event.wait`` holds the event's lock for a moment on every
wake-up) and the handler needs the same lock (``Event.set``, or gRPC's ``server.stop``, which
waits for a thread that sets such an event), the process hangs and only SIGKILL ends it. So the
handlers here only record the signal; stopping happens afterwards, in ordinary code::

    with stop_signals() as stop:
        server.start()
        print("listening")   # a signal from here on is recorded, never fatal
        stop.wait()
    server.stop()
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""SIGTERM is how Kubernetes stops a pod; SIGINT is Ctrl-C."""


class StopRequest:
    """The stop signals received while :func:`stop_signals` is in force."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def record(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: remembers the signal, nothing else."""
        del frame
        self.signals.append(signum)

    def wait(self, until: Callable[[], bool] | None = None, poll: float = 0.2) -> int | None:
        """Block until a stop signal arrives or ``until()`` is true.

        Returns the first signal's number, or ``None`` when ``until`` ended the wait.
        """
        while not self.signals and not (until is not None and until()):
            time.sleep(poll)
        return self.signals[0] if self.signals else None


@contextmanager
def stop_signals() -> Iterator[StopRequest]:
    """Record SIGINT and SIGTERM instead of dying of them; restore the previous handlers after.

    Handlers of its own also mean that a SIGINT a parent shell set to "ignored" (as it does for
    a script's background jobs) still stops the command.
    """
    request = StopRequest()
    previous = {signum: signal.signal(signum, request.record) for signum in STOP_SIGNALS}
    try:
        yield request
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
