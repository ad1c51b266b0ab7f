"""Helpers for the ledger loader's crash tests: generated dumps, a loader killed with SIGKILL
at random ledgers and restarted, and every stored table read back for comparison.

The loader runs as a real subprocess (``python -m chainloom.cli ledger load``), so a kill is
the real thing: no ``finally`` runs, rows of the ledger being written stay behind unseen.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chainloom.ledger.generate import WorkloadGenerator, vectors_ledger
from chainloom.ledger.sources.dump import DumpWriter

FIRST = 38129
"""The ledger whose real state (from the vectors) starts every generated dump."""

Tables = dict[str, list[tuple[Any, ...]]]
"""Every row of every table, sorted, by table name."""


def generate_dump(vectors_dir: Path, path: Path, *, seed: int, ledgers: int, txs: int) -> int:
    """Write ledger ``FIRST``'s state and ``ledgers`` generated ledgers; return the last."""
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=seed, txs_per_ledger=txs)
    last = FIRST
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(ledgers):
            writer.write(ledger, sequence)
            last = sequence
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


def load_with_kills(
    command: Sequence[str],
    committed: Callable[[], int | None],
    kill_after: Sequence[int],
    rng: random.Random,
    *,
    pause: float,
    timeout: float = 120.0,
) -> list[int]:
    """Run the loader; kill it with SIGKILL once per ``kill_after`` ledger; finish the load.

    For each target the loader is (re)started, and once ``committed()`` reports the target or
    later it is killed after a random pause in ``[0, pause)`` seconds (often in the middle of
    the next ledger). Returns the committed ledger found after each kill; the last run must
    end with exit status 0.
    """
    killed: list[int] = []
    for wanted in kill_after:
        # Each run commits at least one ledger before it is killed.
        target = max(wanted, killed[-1] + 1) if killed else wanted
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
                time.sleep(0.002)
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
