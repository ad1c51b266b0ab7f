"""A Bigtable outage surfaces as a clear error within the deadline; nothing is lost to it.

The outages are real: the writer talks to the emulator through a TCP relay that the test closes
(connections refused, live connections cut) and reopens on the same port; the CLI is pointed at
a loopback port nothing listens on; and a private emulator (never the shared stack's) is
SIGKILLed, or frozen with SIGSTOP, in the middle of a ``chainloom events put``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainloom.backoff import Backoff
from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.errors import StoreUnavailableError
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import DEFAULT_FLUSH_ROWS, EventWriter, WriterConfig
from chainloom.settings import BigtableSettings
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.stack.components.bigtable import BigtableEmulator

KIT = DevGuardians()


class Relay:
    """A TCP relay to ``target`` that can be switched off and on again on the same port."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            if self._listener is not None:
                # shutdown wakes the thread blocked in accept(); close alone would not
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def relay(bigtable_emulator: str) -> Iterator[Relay]:
    opened = Relay(bigtable_emulator)
    opened.start()
    yield opened
    opened.stop()


def _vaas(first: int, count: int) -> list[bytes]:
    return [
        KIT.sign(
            emitter_chain=2,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=seq,
            payload=b"outage %d" % seq,
            timestamp=1_700_000_000 + seq,
        ).to_bytes()
        for seq in range(first, first + count)
    ]


def test_outage_raises_clearly_and_keeps_queued_rows(
    settings: BigtableSettings,
    tables: BigtableTables,
    relay: Relay,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", relay.address)
    through_relay = settings.model_copy(update={"operation_timeout": 1.0})
    config = WriterConfig(
        flush_rows=1000, max_attempts=3, backoff=Backoff(initial=0.1, maximum=0.5), deadline=10.0
    )
    with BigtableTables(through_relay) as relayed:
        writer = EventWriter(relayed, KIT.sets(0), config=config)
        assert writer.put_many(_vaas(0, 5)).new == 5
        relay.stop()
        for raw in _vaas(5, 20):
            writer.submit(raw)
        with pytest.raises(
            StoreUnavailableError,
            match=rf"^Bigtable unavailable at emulator {relay.address}: .*gave up after 3 attempts",
        ) as raised:
            writer.flush()
        assert raised.value.pending_rows == 20
        assert "will be retried" not in str(raised.value)
        assert writer.pending == 20
        reader = EventReader(tables)  # straight to the emulator
        assert len(reader.scan(2, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex())) == 5

        relay.start()
        retry = dataclasses.replace(config, max_attempts=8)
        writer.config = retry
        writer.flush()
        assert writer.pending == 0
        writer.close()
    assert writer.summary.new == 25
    stored = reader.scan(2, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex())
    assert [m.key.sequence for m in stored] == list(range(25))


# --- the CLI against an unreachable Bigtable ------------------------------------------------

DEADLINE = 2.0
"""bigtable.operation_timeout for the CLI runs below (seconds)."""
SLACK = 15.0
"""Start-up of the CLI (imports) and a loaded machine."""


def _chainloom(
    args: list[str], emulator: str, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = os.environ | {
        "BIGTABLE_EMULATOR_HOST": emulator,
        "CHAINLOOM_BIGTABLE__OPERATION_TIMEOUT": str(DEADLINE),
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "chainloom.cli", *args],
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return done, time.monotonic() - started


def _assert_unavailable(done: subprocess.CompletedProcess[str], emulator: str) -> None:
    assert done.returncode == 4, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: Bigtable unavailable at emulator {emulator}: ")
    assert "Traceback" not in done.stderr


MESSAGE_ID = f"2/{DEV_TOKEN_BRIDGE_EMITTER.hex()}/1"


@pytest.mark.parametrize(
    "command",
    [
        ["init"],
        ["init", "--check"],
        ["get", MESSAGE_ID],
        ["scan", "--chain", "2"],
        ["recent", "--chain", "2"],
        ["by-tx", "0xabcd"],
        ["reindex", "--chain", "2"],
        ["counts", "--from", "2023-01-01", "--to", "2023-01-31"],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_events_commands_exit_4_quickly_when_bigtable_is_down(command: list[str]) -> None:
    emulator = f"127.0.0.1:{free_port()}"
    done, elapsed = _chainloom(["events", *command], emulator)
    _assert_unavailable(done, emulator)
    assert "Connection refused" in done.stderr
    assert elapsed < DEADLINE + SLACK


def test_put_with_bigtable_down_reports_nothing_stored_and_exits_4() -> None:
    emulator = f"127.0.0.1:{free_port()}"
    lines = "\n".join(raw.hex() for raw in _vaas(0, 3))
    done, elapsed = _chainloom(["events", "put", "--guardian-set", "dev"], emulator, lines)
    _assert_unavailable(done, emulator)
    assert elapsed < DEADLINE + SLACK
    assert done.stdout.splitlines() == [
        "new 0, updated 0, unchanged 0, conflicting 0, refused 0",
        "stopped by the outage: 3 inputs not stored; run the same put again to resume "
        "(put is idempotent: inputs already stored count as unchanged)",
    ]


def test_counts_with_from_after_to_is_bad_input() -> None:
    done, _ = _chainloom(
        ["events", "counts", "--from", "2023-01-01", "--to", "2022-01-31"],
        f"127.0.0.1:{free_port()}",
    )
    assert done.returncode == 2
    assert done.stderr == "error: --from 2023-01-01 is after --to 2022-01-31\n"


# --- the emulator dies (or freezes) in the middle of a put ----------------------------------

ONE_GUARDIAN = DevGuardians(1)
"""One signature per VAA keeps verifying thousands of them cheap (``--guardian-set dev:1``)."""
PUT_VAAS = 3000
PUT_ARGS = ["events", "--instance", "local", "--table", "outage", "put", "--guardian-set", "dev:1"]


class _Quiet:
    def step(self, message: str) -> None:
        pass


@pytest.fixture
def private_emulator(tmp_path: Path) -> Iterator[str]:
    """A Bigtable emulator of this test alone (the stack's code starts it in a private run
    directory); killed at the end if the test has not."""
    (tmp_path / "logs").mkdir()
    running = BigtableEmulator().start(tmp_path, {}, _Quiet(), None)
    yield running.address
    with contextlib.suppress(ProcessLookupError):
        os.kill(running.pid, signal.SIGCONT)
        os.kill(running.pid, signal.SIGKILL)


def _emulator_pid(address: str) -> int:
    port = address.rsplit(":", 1)[1]
    found = subprocess.run(
        ["pgrep", "-f", f"cbtemulator.*-port {port}$|emulator.*-port {port}$"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(found.stdout.split()[0])


def _stored_rows(settings: BigtableSettings) -> int:
    with BigtableTables(settings) as tables:
        return len(EventReader(tables).scan(2, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex()))


def _put_until_stopped(
    emulator: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stop: signal.Signals
) -> tuple[dict[str, int], BigtableSettings, str]:
    """Start a put of PUT_VAAS VAAs, send ``stop`` to the emulator once a batch is stored,
    and check the put gives up within the deadline with exit 4 and its partial summary."""
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", emulator)
    settings = BigtableSettings(project="chainloom", instance="local", table="outage")
    ensure_schema(settings)
    lines = "\n".join(
        ONE_GUARDIAN.sign(
            emitter_chain=2,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=seq,
            payload=b"killed %d" % seq,
            timestamp=1_700_000_000 + seq,
        )
        .to_bytes()
        .hex()
        for seq in range(PUT_VAAS)
    )
    env = os.environ | {"CHAINLOOM_BIGTABLE__OPERATION_TIMEOUT": str(DEADLINE)}
    command = [sys.executable, "-m", "chainloom.cli", *PUT_ARGS, "--json"]
    inputs = tmp_path / "vaas.txt"
    inputs.write_text(lines)
    with inputs.open() as stdin:
        put = subprocess.Popen(
            command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
    with put:
        try:
            waited = time.monotonic()
            # Rows of the second batch appear only once the first is written and counted.
            while _stored_rows(settings) <= DEFAULT_FLUSH_ROWS:
                assert put.poll() is None, "the put finished before the outage"
                assert time.monotonic() - waited < 40, "no batch stored"
                time.sleep(0.05)
            os.kill(_emulator_pid(emulator), stop)
            stopped = time.monotonic()
            stdout, stderr = put.communicate(timeout=120)
            elapsed = time.monotonic() - stopped
        finally:
            if put.poll() is None:
                put.kill()
    done = subprocess.CompletedProcess(command, put.returncode, stdout, stderr)
    _assert_unavailable(done, emulator)
    # One batch's deadline after the stop (and a batch already in flight when it came).
    assert elapsed < 2 * DEADLINE + SLACK
    summary = json.loads(stdout)
    assert summary["complete"] is False
    assert "run the same put again" in summary["resume"]
    assert 0 < summary["new"] < PUT_VAAS
    assert summary["new"] + summary["not_stored"] == PUT_VAAS
    return summary, settings, lines


def test_put_when_the_emulator_is_killed_exits_4_with_what_was_stored(
    private_emulator: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _put_until_stopped(private_emulator, monkeypatch, tmp_path, signal.SIGKILL)


def test_put_resumes_after_a_frozen_emulator_comes_back(
    private_emulator: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    summary, settings, lines = _put_until_stopped(
        private_emulator, monkeypatch, tmp_path, signal.SIGSTOP
    )
    os.kill(_emulator_pid(private_emulator), signal.SIGCONT)
    stored = _stored_rows(settings)  # what the outage let through, whatever the put knew
    assert stored >= summary["new"]
    done, _ = _chainloom(
        [*PUT_ARGS, "--json"],
        private_emulator,
        lines,
    )
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert again["unchanged"] == stored
    assert again["new"] == PUT_VAAS - stored
    assert _stored_rows(settings) == PUT_VAAS
