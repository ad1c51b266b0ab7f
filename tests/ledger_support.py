"""Helpers for the ledger loader's crash tests: generated dumps, a loader killed with SIGKILL
at random ledgers and restarted, and every stored table read back for comparison.

The loader runs as a real subprocess (``python -m chainloom.cli ledger load``), so a kill is
the real thing: no ``finally`` runs, rows of the ledger being written stay behind unseen.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from chainloom_dev.cli.ledger import ledger as dev_ledger

FIRST = 38129
"""The ledger whose real state (from the vectors) starts every generated dump."""

Tables = dict[str, list[tuple[Any, ...]]]
"""Every row of every table, sorted, by table name."""


def generate_dump(vectors_dir: Path, path: Path, *, seed: int, ledgers: int, txs: int) -> int:
    """Write ledger ``FIRST``'s state and ``ledgers`` generated ledgers (``chainloom-dev ledger
    generate``); return the last."""
    result = CliRunner().invoke(
        dev_ledger,
        ["generate", "--from-state", str(FIRST), "--ledgers", str(ledgers),
         "--txs-per-ledger", str(txs), "--seed", str(seed), "--vectors", str(vectors_dir),
         "--out", str(path), "--json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    last: int = json.loads(result.stdout)["last"]
    return last


def loader_command(dump: Path, *backend_options: str) -> list[str]:
    """The ``ledger load`` command line for ``dump`` in a fresh interpreter."""
    return [
        sys.executable, "-m", "chainloom.cli", "ledger", "load", str(dump), "--quiet",
        *backend_options,
    ]  # fmt: skip


def kill_points(rng: random.Random, low: int, high: int, kills: int) -> list[int]:
    """``kills`` random ledgers in ``[low, high]``, one in each of as many equal stretches
    (so the kills spread over the load rather than bunching up)."""
    width = (high - low + 1) / kills
    return [low + int(i * width) + rng.randrange(max(int(width), 1)) for i in range(kills)]


class GrowingDump:
    """A copy of a dump that grows while a loader reads it: ledgers are revealed (appended as
    complete lines) up to a chosen one, so a loader run with ``--follow`` cannot pass it."""

    def __init__(self, complete: Path, path: Path) -> None:
        self.path = path
        self._lines = complete.read_bytes().splitlines(keepends=True)
        self._shown = 0
        path.write_bytes(b"")

    @property
    def last(self) -> int:
        """The last ledger of the complete dump."""
        return FIRST + len(self._lines) - 1

    def reveal(self, through: int) -> None:
        """Append the ledgers up to ``through`` that are not in the file yet."""
        upto = min(through - FIRST + 1, len(self._lines))
        if upto > self._shown:
            with self.path.open("ab") as handle:
                handle.write(b"".join(self._lines[self._shown : upto]))
            self._shown = upto


def load_with_kills(
    dump: GrowingDump,
    command: Sequence[str],
    committed: Callable[[], int | None],
    kill_after: Sequence[int],
    rng: random.Random,
    *,
    pause: float,
    timeout: float = 120.0,
) -> list[int]:
    """Load ``dump`` with ``command``, killing the loader with SIGKILL once per ``kill_after``
    ledger; then finish the load.

    For each target the dump is revealed up to the target + 1 and the loader (re)started with
    ``--follow``; once ``committed()`` reports the target it is killed after a random pause in
    ``[0, pause)`` seconds: in the middle of writing the next ledger, or after it. So every
    kill lands at the target or the ledger after it, however slow or fast the machine. Returns
    the committed ledger found after each kill; the last run, over the whole dump and without
    ``--follow``, must end with exit status 0.
    """
    killed: list[int] = []
    for wanted in kill_after:
        target = max(wanted, killed[-1] + 1) if killed else wanted
        dump.reveal(target + 1)
        process = subprocess.Popen(
            [*command, "--follow"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + timeout
            while (found := committed()) is None or found < target:
                if process.poll() is not None:
                    error = process.stderr.read().decode() if process.stderr else ""
                    raise AssertionError(
                        f"the loader exited ({process.returncode}) before ledger {target}, "
                        f"killed after {killed}: {error}"
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(f"the loader did not reach ledger {target}")
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, pause))
            process.send_signal(signal.SIGKILL)
            process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr:
                process.stderr.close()
        after = committed()
        assert after is not None
        killed.append(after)
    dump.reveal(dump.last)
    finished = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    assert finished.returncode == 0, finished.stderr.decode()
    return killed


def differences(clean: Mapping[str, list[tuple[Any, ...]]], resumed: Tables) -> dict[str, str]:
    """Per table that differs, how many rows only one side has (empty when identical)."""
    found: dict[str, str] = {}
    for name in sorted(clean.keys() | resumed.keys()):
        ours, theirs = clean.get(name), resumed.get(name)
        if ours == theirs:
            continue
        if ours is None or theirs is None:
            found[name] = "present in one store only"
            continue
        only_clean, only_resumed = set(ours) - set(theirs), set(theirs) - set(ours)
        found[name] = (
            f"{len(only_clean)} rows only in the clean load (e.g. {_sample(only_clean)}), "
            f"{len(only_resumed)} only in the resumed one (e.g. {_sample(only_resumed)})"
        )
    return found


def _sample(rows: set[tuple[Any, ...]]) -> str:
    if not rows:
        return "-"
    return repr(tuple(v.hex().upper() if isinstance(v, bytes) else v for v in min(rows)))
