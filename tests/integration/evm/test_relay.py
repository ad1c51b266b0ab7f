"""Transfers through the whole relayer onto the geth dev chains.

``relayer listen`` (REST) validates and queues signed transfers in the real Redis; one
``relayer work --adapter evm`` process per target chain claims them and redeems them on the
project's token bridge with its own wallet. Afterwards every transfer is completed on its chain,
each recipient holds the sum of its transfers less fees, each wallet holds the fees of what it
redeemed and sent exactly one (never reverted) transaction per redemption; a transfer already
redeemed is completed without a transaction, and one from an emitter the chain does not trust
goes to Failed with the contract's reason, at once.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import redis
from eth_account import Account
from web3 import Web3

from chainloom.evm.compile import contract
from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables
from chainloom.wormhole import VAA
from tests.integration.evm.conftest import GUARDIANS, funded_wallet_key

TOKEN_CHAIN = 6
TOKEN = bytes(12) + bytes.fromhex("b97ef9ef8734c71904d8002f8b6bc66dd9c48a6e")
FEE = 1_000
UNTRUSTED_CHAIN = 23  # known to the listener, not registered on the chains


def _transfer(sequence: int, *, source: int, target: int, to: str, amount: int) -> VAA:
    payload = (
        b"\x01"
        + amount.to_bytes(32, "big")
        + TOKEN
        + TOKEN_CHAIN.to_bytes(2, "big")
        + bytes(12)
        + bytes.fromhex(to.removeprefix("0x"))
        + target.to_bytes(2, "big")
        + FEE.to_bytes(32, "big")
    )
    return GUARDIANS.sign(
        emitter_chain=source,
        emitter_address=GUARDIANS.token_bridge_emitter,
        sequence=sequence,
        payload=payload,
    )


def _post(port: int, vaa: VAA) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/relay",
        data=json.dumps({"vaa": vaa.to_bytes().hex()}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def _config(tmp_path: Path, redis_url: str, bridges: dict[int, Deployment]) -> Path:
    sets = tmp_path / "guardian-sets.json"
    sets.write_text(json.dumps(GUARDIANS.sets().to_json()))
    emitter = GUARDIANS.token_bridge_emitter.hex()
    config = tmp_path / "relayer.json"
    config.write_text(
        json.dumps(
            {
                "redis": {"url": redis_url},
                "rest": {"host": "127.0.0.1", "port": 0},
                "guardian_sets": {"source": str(sets)},
                "known_emitters": [
                    {"chain": chain, "address": emitter} for chain in (2, 4, UNTRUSTED_CHAIN)
                ],
                "target_chains": [2, 4],
                "tokens": [{"chain": "*", "address": "*", "min_fee": FEE}],
                "worker": {
                    "adapter": "evm",
                    "recheck": 0.1,
                    "idle_sleep": 0.02,
                    "stop_when_idle": 4,
                    "backoff": {"initial": 0.2, "maximum": 1.0},
                },
                "evm_chains": [
                    {
                        "chain": chain,
                        "rpc_url": deployment.rpc_url,
                        "evm_chain_id": deployment.evm_chain_id,
                        "token_bridge": deployment.token_bridge,
                        "confirmations": 1,
                    }
                    for chain, deployment in bridges.items()
                ],
            }
        )
    )
    return config


def test_transfers_are_redeemed_once_each_on_both_chains(
    tmp_path: Path,
    redis_url: str,
    bridges: dict[int, Deployment],
    dev_sender: dict[int, Sender],
) -> None:
    _relay(tmp_path, redis_url, bridges, dev_sender, count=40, wallets_per_chain=1)


@pytest.mark.slow
def test_five_hundred_transfers_over_two_chains_and_four_wallets(
    tmp_path: Path,
    redis_url: str,
    bridges: dict[int, Deployment],
    dev_sender: dict[int, Sender],
) -> None:
    _relay(tmp_path, redis_url, bridges, dev_sender, count=500, wallets_per_chain=2)


def _relay(
    tmp_path: Path,
    redis_url: str,
    bridges: dict[int, Deployment],
    dev_sender: dict[int, Sender],
    *,
    count: int,
    wallets_per_chain: int,
) -> None:
    rng = random.Random(count)
    keys = {
        (chain, n): funded_wallet_key(dev_sender[chain], f"relay-{count}-{chain}-{n}")
        for chain in bridges
        for n in range(wallets_per_chain)
    }
    recipients = [
        Account.from_key(Web3.keccak(text=f"recipient-{count}-{i}")).address for i in range(3)
    ]
    transfers: list[tuple[int, str, int, VAA]] = []
    base = rng.randrange(2**40)
    for sequence in range(base, base + count):
        target = 2 if sequence % 2 else 4
        to = rng.choice(recipients)
        amount = rng.randrange(FEE, 10**12)
        source = 4 if target == 2 else 2
        vaa = _transfer(sequence, source=source, target=target, to=to, amount=amount)
        transfers.append((target, to, amount, vaa))
    # One transfer someone else redeemed first, one from an emitter the chain does not trust.
    scooped = transfers.pop()
    untrusted = _transfer(base, source=UNTRUSTED_CHAIN, target=2, to=recipients[0], amount=10**9)

    bridge_abi, _ = contract("ChainloomTokenBridge")
    token_abi, _ = contract("ChainloomWrappedToken")
    contracts = {
        chain: dev_sender[chain].w3.eth.contract(
            address=Web3.to_checksum_address(deployment.token_bridge), abi=bridge_abi
        )
        for chain, deployment in bridges.items()
    }
    sender = dev_sender[scooped[0]]
    data = contracts[scooped[0]].encode_abi("completeTransfer", args=[scooped[3].to_bytes()])
    sender.send({"to": contracts[scooped[0]].address, "data": data}, "a scooping redemption")

    config = _config(tmp_path, redis_url, bridges)
    chainloom = [sys.executable, "-m", "chainloom.cli", "relayer"]
    listener = subprocess.Popen(
        [*chainloom, "listen", "--config", str(config), "--no-spy"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    workers: list[subprocess.Popen[str]] = []
    try:
        assert listener.stderr is not None
        line = ""
        while not line.startswith("listener: REST on"):
            line = listener.stderr.readline()
            assert line, "the listener exited before serving"
        port = int(line.rsplit(":", 1)[1])
        for _, _, _, vaa in [*transfers, scooped]:
            assert _post(port, vaa)[0] == 202
        assert _post(port, untrusted)[0] == 202
        for (chain, n), key in keys.items():
            wallet_file = tmp_path / f"wallet-{chain}-{n}"
            wallet_file.write_text(key.hex())
            command = [*chainloom, "work", "--config", str(config), "--chain", str(chain),
                       "--wallet-file", str(wallet_file)]  # fmt: skip
            workers.append(
                subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            )
        outputs = [worker.communicate(timeout=600)[0] for worker in workers]
        for worker, output in zip(workers, outputs, strict=True):
            assert worker.returncode == 0, output
            for key in keys.values():
                assert key.hex() not in output
    finally:
        listener.send_signal(signal.SIGTERM)
        listener.wait(timeout=30)
        if listener.stderr is not None:
            listener.stderr.close()
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()

    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    depths = tables.depths()
    assert depths[Table.COMPLETED] == {2: count // 2, 4: count // 2}
    assert sum(depths[Table.INCOMING].values()) == 0
    assert sum(depths[Table.PENDING_CONFIRMATION].values()) == 0
    failed = tables.failed()
    assert [r.digest for r in failed] == [untrusted.digest_hex]
    assert failed[0].retries == 1
    assert failed[0].last_error is not None
    assert "unknown emitter" in failed[0].last_error
    outcomes = tables.completed_log(scooped[0])
    assert outcomes[scooped[3].digest_hex]["outcome"] == "already_redeemed"

    expected: dict[tuple[int, str], int] = defaultdict(int)
    redeemed: dict[int, int] = defaultdict(int)
    for target, to, amount, vaa in transfers:
        assert contracts[target].functions.isTransferCompleted(vaa.digest).call()
        expected[(target, to)] += amount - FEE
        redeemed[target] += 1
    scooped_target, scooped_to, scooped_amount, _ = scooped
    expected[(scooped_target, scooped_to)] += scooped_amount - FEE
    for chain, bridge in contracts.items():
        wrapped = bridge.functions.wrappedAsset(TOKEN_CHAIN, TOKEN).call()
        token = dev_sender[chain].w3.eth.contract(address=wrapped, abi=token_abi)
        for to in recipients:
            assert token.functions.balanceOf(to).call() == expected[(chain, to)]
        # One transaction per redemption and no other: none reverted, none repeated; each
        # wallet holds the fees of exactly the redemptions it sent.
        sent = 0
        for (wallet_chain, _), key in keys.items():
            if wallet_chain != chain:
                continue
            wallet = Account.from_key(key).address
            transactions = dev_sender[chain].w3.eth.get_transaction_count(wallet)
            assert token.functions.balanceOf(wallet).call() == FEE * transactions
            sent += transactions
        assert sent == redeemed[chain]
    client.close()
