"""Processes are started detached, tracked by pid, and stopped with their children."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from chainloom_dev.net import free_port
from chainloom_dev.stack import _process
from chainloom_dev.stack._model import Running
from chainloom_dev.stack.errors import PortConflictError, StartError


def test_spawn_and_stop_a_process_group(tmp_path: Path) -> None:
    log = tmp_path / "sleep.log"
    pid = _process.spawn(["bash", "-c", "echo started; sleep 60 & wait"], log)
    deadline = time.monotonic() + 5
    while "started" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _process.alive(pid)
    _process.stop(pid, timeout=5)
    assert not _process.alive(pid)
    assert _process.tail(log) == "started"


def test_wait_until_reports_a_dead_process_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "dies.log"
    pid = _process.spawn(["bash", "-c", "echo 'fatal: bad config'; exit 3"], log)
    with pytest.raises(StartError, match="exited") as raised:
        _process.wait_until("thing", lambda: False, pid=pid, log=log, timeout=10)
    assert "fatal: bad config" in raised.value.log_tail


def test_requested_port_in_use_is_a_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        monkeypatch.setenv("CHAINLOOM_TEST_PORT", str(port))
        with pytest.raises(PortConflictError, match=str(port)):
            _process.choose_port("thing", None, "CHAINLOOM_TEST_PORT")


def _recorded(port: int) -> Running:
    return Running("thing", "1.0", f"127.0.0.1:{port}", 4242, "thing.log")


def test_a_restarted_server_gets_the_port_it_had_when_that_port_is_free() -> None:
    port = free_port()
    assert _process.choose_port("thing", _recorded(port)) == port


def test_a_recorded_port_someone_else_took_is_replaced_by_a_free_one() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        chosen = _process.choose_port("thing", _recorded(taken))
    assert chosen != taken


def test_a_port_asked_for_wins_over_the_recorded_one(monkeypatch: pytest.MonkeyPatch) -> None:
    asked, recorded = free_port(), free_port()
    monkeypatch.setenv("CHAINLOOM_TEST_PORT", str(asked))
    assert _process.choose_port("thing", _recorded(recorded), "CHAINLOOM_TEST_PORT") == asked


def test_tools_have_no_recorded_port() -> None:
    tool = Running("kubectl", "v1", "/cache/bin/kubectl", 0, "")
    assert _process.recorded_port(tool) is None
    assert _process.recorded_port(None) is None
