"""Fixtures of the EVM tier: the stack's geth dev chains and its solcjs.

The chains come from ``chainloom-dev stack up --evm`` (or ``--only geth``). When they are not up,
the tests skip, unless ``CHAINLOOM_EVM=1`` asks for them: then the session starts them (the
first run builds geth, ~20 minutes), as ``CHAINLOOM_NODE=1`` does for the node tier.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from eth_account import Account
from web3 import Web3

from chainloom.evm.deploy import Deployment, Sender, connect, deploy, fund
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.stack import manager
from chainloom_dev.stack._install import is_installed
from chainloom_dev.stack._model import SilentProgress
from chainloom_dev.stack.components.evm import CHAINS, install_solc, solc_dir
from tests.conftest import StackForTests

GUARDIANS = DevGuardians()


@pytest.fixture(scope="session")
def evm_rpc(local_stack: StackForTests) -> dict[int, str]:
    """RPC URL of each running geth dev chain, by the Wormhole chain it stands for."""
    names = [chain.component for chain in CHAINS]
    rows = manager.status(names)
    if not all(row.healthy for row in rows):
        if os.environ.get("CHAINLOOM_EVM") != "1":
            pytest.skip(
                "the geth chains are not up: chainloom-dev stack up --evm (or CHAINLOOM_EVM=1)"
            )
        local_stack.require("geth")
    state = manager.load_state()
    return {chain.wormhole_chain: state[chain.component].address for chain in CHAINS}


@pytest.fixture(scope="session")
def solcjs() -> Path:
    """solcjs from the stack's cache (installed here only with ``CHAINLOOM_EVM=1``)."""
    if not is_installed(solc_dir()) and os.environ.get("CHAINLOOM_EVM") != "1":
        pytest.skip(
            "solcjs is not installed: chainloom-dev stack up --only solc (or CHAINLOOM_EVM=1)"
        )
    return install_solc(SilentProgress())


@pytest.fixture(scope="session")
def dev_sender(evm_rpc: dict[int, str]) -> dict[int, Sender]:
    """A sender from each chain's unlocked dev account."""
    return {chain: Sender(connect(url)) for chain, url in evm_rpc.items()}


@pytest.fixture(scope="session")
def bridges(evm_rpc: dict[int, str], dev_sender: dict[int, Sender]) -> dict[int, Deployment]:
    """Core + token bridge on each chain, with the dev kit's guardians and devnet emitters."""
    return {
        chain: deploy(
            dev_sender[chain],
            rpc_url=url,
            wormhole_chain=chain,
            guardian_sets=GUARDIANS.sets(0),
            emitters=DEVNET_TOKEN_BRIDGE_EMITTERS,
        )
        for chain, url in evm_rpc.items()
    }


def funded_wallet_key(sender: Sender, seed: str) -> bytes:
    """A fresh key (derived from ``seed``), funded on ``sender``'s chain."""
    key = Web3.keccak(text=f"chainloom-evm-test:{seed}:{os.getpid()}")
    fund(sender, [Account.from_key(key).address])
    return bytes(key)
