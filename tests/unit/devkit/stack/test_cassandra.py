"""What ``stack env`` exports for the Cassandra node is what the ledger settings read."""

from __future__ import annotations

import pytest

from chainloom.ledger.config import LedgerSettings
from chainloom.settings import load_settings
from chainloom_dev.stack.components.cassandra import client_env


def test_the_exports_are_the_ledger_settings_own_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in client_env(39603).items():
        monkeypatch.setenv(name, value)
    database = load_settings(LedgerSettings, flags={"database.type": "cassandra"}).database
    assert database.cassandra.hosts == ("127.0.0.1",)
    assert database.cassandra.port == 39603
    assert database.cassandra.replication_factor == 1  # one node: QUORUM writes need RF 1


def test_the_port_choice_input_is_not_exported() -> None:
    # Exported, it would make the next `stack up` in another run directory ask for a taken port.
    assert "CHAINLOOM_CASSANDRA_PORT" not in client_env(39603)
