"""``chainloom evm deploy`` on a geth dev chain: contracts, guardian set, emitters, funding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from web3 import Web3

from chainloom.evm.compile import contract
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS
from tests.integration.evm.conftest import GUARDIANS


def test_deploy_prints_a_working_deployment_as_json(evm_rpc: dict[int, str]) -> None:
    url = evm_rpc[2]
    wallet = "0x" + os.urandom(20).hex()  # fresh: the chain outlives test sessions
    done = subprocess.run(
        [sys.executable, "-m", "chainloom", "evm", "deploy", "--rpc", url, "--chain", "2",
         "--fund", wallet, "--fund-eth", "3", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    deployment = json.loads(done.stdout)
    w3 = Web3(Web3.HTTPProvider(url))
    assert deployment["evm_chain_id"] == w3.eth.chain_id
    assert deployment["wormhole_chain"] == 2
    assert deployment["guardian_set_indices"] == [0]
    core_abi, _ = contract("ChainloomCore")
    core = w3.eth.contract(address=Web3.to_checksum_address(deployment["core"]), abi=core_abi)
    keys, expiration = core.functions.getGuardianSet(0).call()
    assert [bytes.fromhex(k[2:]) for k in keys] == list(GUARDIANS.addresses)
    assert expiration == 0
    assert core.functions.chainId().call() == 2
    bridge_abi, _ = contract("ChainloomTokenBridge")
    bridge = w3.eth.contract(
        address=Web3.to_checksum_address(deployment["token_bridge"]), abi=bridge_abi
    )
    for chain, emitter in DEVNET_TOKEN_BRIDGE_EMITTERS.items():
        assert bridge.functions.registeredEmitters(chain).call() == emitter
        assert deployment["emitters"][str(chain)] == emitter.hex()
    assert bridge.functions.registeredEmitters(23).call() == bytes(32)
    assert w3.eth.get_balance(Web3.to_checksum_address(wallet)) == 3 * 10**18
