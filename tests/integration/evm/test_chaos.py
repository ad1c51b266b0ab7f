"""SIGKILL chaos on the real chains: workers killed at random, restarted, nothing lost or doubled.

One ``relayer work --adapter evm`` process per chain is killed (SIGKILL) at random moments —
before, during or after ``eth_sendRawTransaction``, before its receipt is recorded — and
restarted on the same wallet (it waits out its dead predecessor's lease and resumes its
In-Work, asking ``isTransferCompleted`` before anything else). Afterwards every transfer is
completed on its chain, each recipient holds exactly its transfers less fees (so nothing was
redeemed twice), every request left the queue as confirmed or already redeemed, and every
transaction of a wallet either redeemed a transfer or reverted as already completed: the
resends a crash caused are counted and explained, never a double redemption.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
import redis
from eth_account import Account
from web3 import Web3

from chainloom.evm.compile import contract
from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from tests.integration.evm.conftest import funded_wallet_key
from tests.integration.evm.test_relay import FEE, TOKEN, TOKEN_CHAIN, _config, _post, _transfer

COUNT = 60


@pytest.mark.slow
def test_workers_killed_at_random_lose_nothing_and_redeem_each_transfer_once(
    tmp_path: Path,
    redis_url: str,
    bridges: dict[int, Deployment],
    dev_sender: dict[int, Sender],
) -> None:
    rng = random.Random(1313)
    keys = {chain: funded_wallet_key(dev_sender[chain], f"chaos-{chain}") for chain in bridges}
    recipients = [Account.from_key(Web3.keccak(text=f"chaos-to-{i}")).address for i in range(4)]
    base = rng.randrange(2**40)
    transfers = []
    for sequence in range(base, base + COUNT):
        target = 2 if sequence % 2 else 4
        to = rng.choice(recipients)
        amount = rng.randrange(FEE, 10**12)
        source = 4 if target == 2 else 2
        transfers.append(
            (
                target,
                to,
                amount,
                _transfer(sequence, source=source, target=target, to=to, amount=amount),
            )
        )
    config = _config(tmp_path, redis_url, bridges)
    chainloom = [sys.executable, "-m", "chainloom.cli", "relayer"]
    wallet_files = {}
    for chain, key in keys.items():
        wallet_files[chain] = tmp_path / f"wallet-{chain}"
        wallet_files[chain].write_text(key.hex())

    def start(chain: int, idle: float) -> subprocess.Popen[str]:
        command = [*chainloom, "work", "--config", str(config), "--chain", str(chain),
                   "--wallet-file", str(wallet_files[chain]), "--lease-ttl", "1.5",
                   "--stop-when-idle", str(idle)]  # fmt: skip
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True
        )

    listener = subprocess.Popen(
        [*chainloom, "listen", "--config", str(config), "--no-spy"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    workers: dict[int, subprocess.Popen[str]] = {}
    kills = 0
    try:
        assert listener.stderr is not None
        line = ""
        while not line.startswith("listener: REST on"):
            line = listener.stderr.readline()
            assert line, "the listener exited before serving"
        port = int(line.rsplit(":", 1)[1])
        for _, _, _, vaa in transfers:
            assert _post(port, vaa)[0] == 202
        workers = {chain: start(chain, 3600) for chain in keys}
        deadline = time.monotonic() + 600
        while sum(tables.depths()[Table.COMPLETED].values()) < COUNT * 0.8:
            assert time.monotonic() < deadline, tables.depths()
            # A worker process needs a few seconds to start (imports, the dead one's lease):
            # kill it at a random moment of the work that follows.
            time.sleep(rng.uniform(4.0, 9.0))
            chain = rng.choice(sorted(workers))
            workers[chain].send_signal(signal.SIGKILL)
            workers[chain].wait()
            kills += 1
            workers[chain] = start(chain, 3600)
        for worker in workers.values():
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        kills += len(workers)
        workers = {chain: start(chain, 4) for chain in keys}
        for worker in workers.values():
            assert worker.wait(timeout=600) == 0
    finally:
        listener.send_signal(signal.SIGTERM)
        listener.wait(timeout=30)
        if listener.stderr is not None:
            listener.stderr.close()
        for worker in workers.values():
            if worker.poll() is None:
                worker.kill()
                worker.wait()

    depths = tables.depths()
    assert depths[Table.COMPLETED] == {2: COUNT // 2, 4: COUNT // 2}
    assert sum(depths[Table.INCOMING].values()) + sum(depths[Table.IN_WORK].values()) == 0
    assert sum(depths[Table.PENDING_CONFIRMATION].values()) == 0
    assert tables.failed() == []
    outcomes: dict[str, int] = defaultdict(int)
    for chain in keys:
        for record in tables.completed_log(chain).values():
            outcomes[record["outcome"]] += 1
    assert outcomes["confirmed"] + outcomes["already_redeemed"] == COUNT

    bridge_abi, _ = contract("ChainloomTokenBridge")
    token_abi, _ = contract("ChainloomWrappedToken")
    expected: dict[tuple[int, str], int] = defaultdict(int)
    for target, to, amount, _ in transfers:
        expected[(target, to)] += amount - FEE
    for chain, deployment in bridges.items():
        w3 = dev_sender[chain].w3
        bridge = w3.eth.contract(
            address=Web3.to_checksum_address(deployment.token_bridge), abi=bridge_abi
        )
        for target, _, _, vaa in transfers:
            if target == chain:
                assert bridge.functions.isTransferCompleted(vaa.digest).call()
        token = w3.eth.contract(
            address=bridge.functions.wrappedAsset(TOKEN_CHAIN, TOKEN).call(), abi=token_abi
        )
        for to in recipients:
            assert token.functions.balanceOf(to).call() == expected[(chain, to)]
        wallet = Account.from_key(keys[chain]).address
        redeemed = token.functions.balanceOf(wallet).call() // FEE
        sent = w3.eth.get_transaction_count(wallet)
        # Every transaction redeemed a transfer, or reverted as already completed (a resend
        # after a crash): at most one such revert per kill.
        assert redeemed <= COUNT // 2
        assert sent - redeemed <= kills, (sent, redeemed, kills)
    client.close()
