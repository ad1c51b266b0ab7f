"""Fixtures: a fresh pair of tables on the real Bigtable emulator for each test, and an
emulator of a test's own for the outage tests."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.settings import BigtableSettings
from chainloom_dev.net import free_port, port_open
from chainloom_dev.stack.components.bigtable import emulator_binary


@pytest.fixture
def settings(bigtable_table_name: str) -> BigtableSettings:
    store = BigtableSettings(project="chainloom", instance="test", table=bigtable_table_name)
    report = ensure_schema(store)
    assert set(report.created_tables) == {store.table, store.index_table}
    return store


@pytest.fixture
def tables(settings: BigtableSettings) -> Iterator[BigtableTables]:
    with BigtableTables(settings) as opened:
        yield opened


class OwnEmulator:
    """A Bigtable emulator process of this test's own, on a free port."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(emulator_binary()), "-host", "127.0.0.1", "-port", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 20
        while not port_open("127.0.0.1", self.port):
            assert time.monotonic() < deadline, "the emulator did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


@pytest.fixture
def emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OwnEmulator]:
    """A Bigtable emulator of the test's own (the stack's is shared: never stopped or paused),
    named by ``BIGTABLE_EMULATOR_HOST``; resumed and killed afterwards."""
    own = OwnEmulator(tmp_path / "emulator.log")
    own.start()
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{own.port}")
    try:
        yield own
    finally:
        if own.process is not None:
            own.process.send_signal(signal.SIGCONT)  # a failed test may leave it stopped
        own.kill()
