"""The geth and solc components' pure parts: groups, names, the block period."""

from __future__ import annotations

import pytest

from chainloom_dev.stack import manager
from chainloom_dev.stack._model import Running
from chainloom_dev.stack.components.evm import CHAINS, PERIOD_VARIABLE, block_period
from chainloom_dev.stack.errors import StackError


def test_geth_group_is_two_chains_with_their_own_ids() -> None:
    assert manager.resolve(["geth"]) == ["geth-2", "geth-4"]
    assert [c.wormhole_chain for c in CHAINS] == [2, 4]
    assert len({c.evm_chain_id for c in CHAINS}) == 2
    assert [c.rpc_variable for c in CHAINS] == ["CHAINLOOM_EVM_RPC_2", "CHAINLOOM_EVM_RPC_4"]


def test_evm_flag_adds_the_chains_and_the_compiler_but_defaults_do_not() -> None:
    assert manager.resolve(["redis"], evm=True) == ["redis", "solc", "geth-2", "geth-4"]
    assert not {"solc", "geth-2", "geth-4"} & set(manager.resolve(manager.DEFAULT, full=True))


def test_block_period_comes_from_the_environment_then_the_last_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    previous = Running("geth-2", "", "http://127.0.0.1:1", 1, "", extra={"period": "3"})
    monkeypatch.delenv(PERIOD_VARIABLE, raising=False)
    assert block_period(None) == 0
    assert block_period(previous) == 3
    monkeypatch.setenv(PERIOD_VARIABLE, "2")
    assert block_period(previous) == 2
    monkeypatch.setenv(PERIOD_VARIABLE, "fast")
    with pytest.raises(StackError, match="CHAINLOOM_GETH_PERIOD='fast'"):
        block_period(None)
