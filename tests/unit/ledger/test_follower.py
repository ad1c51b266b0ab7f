"""The follower loop over SQLite and a dump file: the first replica on an empty store writes at
once; a second one stands by while the range is current and takes over once it stalls with the
source ahead, resuming exactly after the last committed ledger; ``stop`` ends a standby."""

from __future__ import annotations

import threading
from pathlib import Path

from chainloom.ledger.election import Role
from chainloom.ledger.follower import LedgerFollower, RoleChange
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.file import FileLedgerSource
from tests.ledger_support import FIRST, generate_dump


def test_a_standby_takes_over_a_stalled_range_and_resumes_after_it(
    vectors_dir: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "ledgers.jsonl"
    last = generate_dump(vectors_dir, dump, seed=5, ledgers=6, txs=5)
    config = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "f.db")}}
    changes: list[RoleChange] = []

    with make_backend(config) as backend:
        first = LedgerFollower(backend, FileLedgerSource(dump), poll_interval=0.01,
                               on_role=changes.append)  # fmt: skip
        summary = first.run(until=FIRST + 3)
    assert summary.committed == [FIRST, FIRST + 1, FIRST + 2, FIRST + 3]
    assert (summary.takeovers, summary.conflicts, summary.role) == (1, 0, Role.WRITER)
    assert changes[0].role is Role.WRITER
    assert changes[0].stored_max is None
    assert "empty" in changes[0].reason

    # The first writer is gone; the range stays at FIRST + 3 while the source has more.
    changes.clear()
    with make_backend(config) as backend:
        second = LedgerFollower(backend, FileLedgerSource(dump), fallback_seconds=0.2,
                                poll_interval=0.01, on_role=changes.append)  # fmt: skip
        summary = second.run(until=last)
    assert summary.committed == list(range(FIRST + 4, last + 1))
    assert summary.takeovers == 1
    assert [c.role for c in changes] == [Role.STANDBY, Role.WRITER]
    assert changes[-1].stored_max == FIRST + 3
    assert changes[-1].reason.startswith(f"ledger range stuck at {FIRST + 3} for ")


def test_a_standby_over_a_current_range_waits_until_stopped(
    vectors_dir: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "ledgers.jsonl"
    last = generate_dump(vectors_dir, dump, seed=6, ledgers=2, txs=3)
    config = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "g.db")}}
    with make_backend(config) as backend:
        LedgerFollower(backend, FileLedgerSource(dump), poll_interval=0.01).run(until=last)
    stop = threading.Event()
    changes: list[RoleChange] = []
    with make_backend(config) as backend:
        idle = LedgerFollower(backend, FileLedgerSource(dump), fallback_seconds=0.05,
                              poll_interval=0.01, on_role=changes.append, stop=stop)  # fmt: skip
        timer = threading.Timer(0.5, stop.set)
        timer.start()
        summary = idle.run()
        timer.join()
    # Nothing new in the source: the writer (gone) is not behind, so no takeover.
    assert (summary.committed, summary.takeovers, summary.role) == ([], 0, Role.STANDBY)
    assert [c.reason for c in changes] == [f"writer is current at ledger {last}"]
