"""chainloom.signals: stop signals are recorded, never fatal, and the old handlers come back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from chainloom.signals import stop_signals


def test_a_signal_inside_the_block_is_recorded_and_ends_the_wait() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_signals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(poll=0.01) == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_until_ends_the_wait_without_a_signal() -> None:
    calls = iter([False, False, True])
    with stop_signals() as stop:
        assert stop.wait(until=lambda: next(calls), poll=0.01) is None


def test_a_command_stops_with_exit_zero_on_sigterm_even_when_sigint_is_ignored() -> None:
    program = textwrap.dedent(
        """
        import signal, sys
        from chainloom.signals import stop_signals
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does for a background job
        with stop_signals() as stop:
            print("ready", flush=True)
            got = stop.wait(poll=0.01)
        print(signal.Signals(got).name, flush=True)
        """
    )
    for signum in (signal.SIGTERM, signal.SIGINT):
        child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signum)
        out, _ = child.communicate(timeout=30)
        assert (child.returncode, out.strip()) == (0, signal.Signals(signum).name)
