"""RPC failover on the real chain: the worker's primary endpoint dies mid-run.

The chain's ``rpc_url`` is a TCP relay in front of geth (the "primary"), ``rpc_urls`` lists geth
itself. One ``relayer work --adapter evm`` process redeems transfers; when it has sent a third
of its redemptions the relay is killed (the listening socket closed, open connections reset).
The worker switches to the second endpoint with one log line and finishes: every transfer is
completed on the chain, the recipient holds exactly their sum less fees, and the wallet holds
the fees of exactly one redemption per transfer (nothing lost, nothing redeemed twice).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
from eth_account import Account
from web3 import Web3

from chainloom.evm.compile import contract
from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from tests.integration.evm.conftest import funded_wallet_key
from tests.integration.evm.tcp_relay import TcpRelay
from tests.integration.evm.test_relay import FEE, TOKEN, TOKEN_CHAIN, _config, _post, _transfer

CHAIN = 2
COUNT = 30


def test_the_primary_endpoint_dies_mid_run_and_every_transfer_is_redeemed_once(
    tmp_path: Path,
    redis_url: str,
    bridges: dict[int, Deployment],
    dev_sender: dict[int, Sender],
) -> None:
    rng = random.Random(2424)
    deployment = bridges[CHAIN]
    key = funded_wallet_key(dev_sender[CHAIN], "failover")
    recipient = Account.from_key(Web3.keccak(text=f"failover-to-{rng.random()}")).address
    base = rng.randrange(2**40)
    transfers = [
        (amount, _transfer(s, source=4, target=CHAIN, to=recipient, amount=amount))
        for s, amount in ((s, rng.randrange(FEE, 10**12)) for s in range(base, base + COUNT))
    ]
    primary = TcpRelay(deployment.rpc_url.removeprefix("http://"))
    config_path = _config(tmp_path, redis_url, bridges)
    config = json.loads(config_path.read_text())
    for entry in config["evm_chains"]:
        if entry["chain"] == CHAIN:
            entry["rpc_url"] = primary.url
            entry["rpc_urls"] = [deployment.rpc_url]
            entry["failover"] = {"backoff": {"initial": 0.5, "maximum": 5.0}}
    config_path.write_text(json.dumps(config))
    wallet_file = tmp_path / "wallet"
    wallet_file.write_text(key.hex())

    chainloom = [sys.executable, "-m", "chainloom.cli", "relayer"]
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    listener = subprocess.Popen(
        [*chainloom, "listen", "--config", str(config_path), "--no-spy"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    worker = None
    try:
        assert listener.stderr is not None
        line = ""
        while not line.startswith("listener: REST on"):
            line = listener.stderr.readline()
            assert line, "the listener exited before serving"
        port = int(line.rsplit(":", 1)[1])
        for _, vaa in transfers:
            assert _post(port, vaa)[0] == 202
        worker = subprocess.Popen(
            [*chainloom, "work", "--config", str(config_path), "--chain", str(CHAIN),
             "--wallet-file", str(wallet_file)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        wallet = Account.from_key(key).address
        while dev_sender[CHAIN].w3.eth.get_transaction_count(wallet, "pending") < COUNT // 3:
            assert time.monotonic() < deadline, "the worker completed too little before the kill"
            assert worker.poll() is None, "the worker exited before the kill"
            time.sleep(0.05)
        used_before_kill = primary.connections
        primary.kill()
        output = worker.communicate(timeout=300)[0]
        assert worker.returncode == 0, output
    finally:
        primary.kill()
        listener.send_signal(signal.SIGTERM)
        listener.wait(timeout=30)
        if listener.stderr is not None:
            listener.stderr.close()
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.communicate()

    assert used_before_kill > 0  # the primary really was in use
    switches = [line for line in output.splitlines() if "switching RPC endpoint" in line]
    assert len(switches) == 1, output  # the dead primary is probed, never used again
    geth_address = deployment.rpc_url.removeprefix("http://")
    assert f"{primary.url} -> http://{geth_address}" in switches[0]
    assert key.hex() not in output

    depths = tables.depths()
    assert depths[Table.COMPLETED].get(CHAIN) == COUNT
    assert sum(depths[Table.INCOMING].values()) == 0
    assert sum(depths[Table.PENDING_CONFIRMATION].values()) == 0
    assert tables.failed() == []
    client.close()

    bridge_abi, _ = contract("ChainloomTokenBridge")
    token_abi, _ = contract("ChainloomWrappedToken")
    w3 = dev_sender[CHAIN].w3
    bridge = w3.eth.contract(
        address=Web3.to_checksum_address(deployment.token_bridge), abi=bridge_abi
    )
    for _, vaa in transfers:
        assert bridge.functions.isTransferCompleted(vaa.digest).call()
    token = w3.eth.contract(
        address=bridge.functions.wrappedAsset(TOKEN_CHAIN, TOKEN).call(), abi=token_abi
    )
    assert token.functions.balanceOf(recipient).call() == sum(a - FEE for a, _ in transfers)
    assert token.functions.balanceOf(wallet).call() == FEE * COUNT  # one redemption each
