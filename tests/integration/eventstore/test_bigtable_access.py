"""The app profile and the credentials file against the real Bigtable emulator: the profile is
in the bytes of every data request the tables send (seen through a relay in front of the
emulator), and a bad key file stops a command with one line naming it and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import EMULATOR_ENV, BigtableTables
from chainloom.eventstore.cells import Cell
from chainloom.settings import BigtableSettings
from tests.google_key_support import write_service_account_key
from tests.integration.evm.tcp_relay import TcpRelay

PROFILE = "chainloom-reads-7f3a"


@pytest.fixture
def relay(bigtable_emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TcpRelay]:
    opened = TcpRelay(bigtable_emulator)
    monkeypatch.setenv(EMULATOR_ENV, f"127.0.0.1:{opened.port}")
    yield opened
    opened.kill()


def test_every_data_request_carries_the_app_profile(
    settings: BigtableSettings, relay: TcpRelay, tmp_path: Path
) -> None:
    key = write_service_account_key(tmp_path / "key.json")
    profiled = settings.model_copy(update={"app_profile": PROFILE, "credentials_file": str(key)})
    with BigtableTables(profiled) as tables:
        assert tables.events.app_profile_id == tables.index.app_profile_id == PROFILE
        cell = Cell(schema.MESSAGE_PUBLICATION, "chain", b"2", 1_000_000)
        assert tables.bulk_write(tables.events, [("row-1", [cell])]) == []
        rows = tables.read_event_rows(["row-1"])
    assert rows["row-1"][schema.MESSAGE_PUBLICATION]["chain"] == b"2"
    assert PROFILE.encode() in relay.sent


def test_without_a_profile_none_is_sent(settings: BigtableSettings, relay: TcpRelay) -> None:
    with BigtableTables(settings) as tables:
        assert tables.events.app_profile_id is None
        tables.read_event_rows(["row-1"])
    assert relay.sent
    assert PROFILE.encode() not in relay.sent


def _bad_keys(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "text.json").write_text("a password, not a key\n")
    (tmp_path / "user.json").write_text(json.dumps({"type": "authorized_user"}))
    return {
        "missing": (tmp_path / "absent.json", "No such file or directory"),
        "not JSON": (tmp_path / "text.json", "not JSON"),
        "not a key": (tmp_path / "user.json", "not a service-account key"),
    }


@pytest.mark.parametrize("case", ["missing", "not JSON", "not a key"])
@pytest.mark.parametrize("command", [["events", "get", "1/" + "0" * 63 + "4/1"], ["events", "api"]])
def test_bad_key_file_is_one_line_and_exit_2(
    bigtable_emulator: str, tmp_path: Path, case: str, command: list[str]
) -> None:
    path, problem = _bad_keys(tmp_path)[case]
    env = {**os.environ, "CHAINLOOM_BIGTABLE__CREDENTIALS_FILE": str(path)}
    done = subprocess.run(
        [sys.executable, "-m", "chainloom", *command],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: bigtable.credentials_file {path}: {problem}")
