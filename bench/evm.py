"""Redemptions/s on a real geth dev chain: the whole relayer against a bare web3 loop.

The relayer: N signed transfers are queued in the real Redis (as the listener queues them) and
one :class:`Worker` with the :class:`EvmAdapter` redeems them on the project's token bridge
(``isTransferCompleted``, ``eth_estimateGas``, base fee, sign, ``eth_sendRawTransaction``,
then the receipt at 1 confirmation), until every one is in Completed. The bare loop, in the
same run, from the same wallet, on the same chain: N other transfers' ``completeTransfer``
transactions signed before the clock starts, sent one by one, each waited for to its receipt.
The ratio says how much of what geth and web3 can do one worker keeps (goal: >= 0.7); the median
time from Incoming to confirmed is printed too.

Needs the stack's geth and Redis (``chainloom-dev stack up --only redis,geth``;
``eval "$(chainloom-dev stack env)"`` exports ``CHAINLOOM_EVM_RPC_2`` and ``CHAINLOOM_REDIS__URL``).
Run: ``.venv/bin/python bench/evm.py [--transfers 200]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

import redis
from eth_account import Account
from web3 import Web3

from chainloom.backoff import Backoff
from chainloom.evm.compile import contract
from chainloom.evm.deploy import Sender, connect, deploy, fund
from chainloom.relayer.evm_adapter import EvmAdapter
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.model import RelayRequest, RetryPolicy, Table
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.wallet import Wallet
from chainloom.relayer.worker import Worker, WorkerSettings
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS, VAA
from chainloom_dev.sim.dev_guardians import DevGuardians

CHAIN = 2
GUARDIANS = DevGuardians()


def transfers(count: int, first: int) -> list[VAA]:
    """``count`` signed payload-1 transfers to chain 2 of one wrapped asset."""
    out = []
    for sequence in range(first, first + count):
        payload = (
            b"\x01" + (10**9).to_bytes(32, "big") + bytes(31) + b"\x42" + (6).to_bytes(2, "big")
            + bytes(31) + b"\x99" + CHAIN.to_bytes(2, "big") + (10).to_bytes(32, "big")
        )  # fmt: skip
        out.append(
            GUARDIANS.sign(
                emitter_chain=4,
                emitter_address=GUARDIANS.token_bridge_emitter,
                sequence=sequence,
                payload=payload,
            )
        )
    return out


def bare(w3: Web3, bridge_address: str, key: bytes, vaas: list[VAA]) -> float:
    """Redemptions/s of pre-signed transactions sent and awaited one by one."""
    abi, _ = contract("ChainloomTokenBridge")
    bridge = w3.eth.contract(address=Web3.to_checksum_address(bridge_address), abi=abi)
    account = Account.from_key(key)
    nonce = w3.eth.get_transaction_count(account.address, "pending")
    base_fee = int(w3.eth.get_block("latest").get("baseFeePerGas", 0))
    signed = []
    for offset, vaa in enumerate(vaas):
        transaction = {
            "to": bridge.address,
            "data": bridge.encode_abi("completeTransfer", args=[vaa.to_bytes()]),
            "gas": 3_000_000,
            "maxFeePerGas": 2 * base_fee + 10**9,
            "maxPriorityFeePerGas": 10**9,
            "nonce": nonce + offset,
            "chainId": w3.eth.chain_id,
        }
        signed.append(account.sign_transaction(transaction).raw_transaction)
    start = time.perf_counter()
    for raw in signed:
        receipt = w3.eth.wait_for_transaction_receipt(
            w3.eth.send_raw_transaction(raw), poll_latency=0.01
        )
        if receipt["status"] != 1:
            raise SystemExit("a bare redemption reverted")
    return len(signed) / (time.perf_counter() - start)


def relayer(
    client: redis.Redis, settings: EvmChainSettings, key: bytes, vaas: list[VAA], batch: int
) -> tuple[float, float]:
    """(redemptions/s, median seconds from Incoming to confirmed) through one worker."""
    prefix = f"chainloom:bench-evm:{uuid.uuid4().hex[:8]}"
    tables = RelayTables(client, prefix)
    pacing = WorkerSettings(
        policy=RetryPolicy(max_retries=3, schedule=Backoff(initial=0.1, maximum=0.5)),
        batch=batch,
        idle_sleep=0.0,
        recheck=0.0,
        seed=1,
    )
    worker = Worker(tables, EvmAdapter(settings), Wallet(key), pacing)
    now = time.time()
    requests = [
        RelayRequest(
            digest=v.digest_hex,
            vaa=v.to_bytes(),
            target_chain=CHAIN,
            emitter_chain=v.emitter_chain,
            sequence=v.sequence,
            enqueued_at=now,
        )
        for v in vaas
    ]
    worker.start(timeout=10)
    try:
        start = time.perf_counter()
        tables.enqueue_many(requests)
        while tables.depths()[Table.COMPLETED].get(CHAIN, 0) < len(requests):
            worker.step()
        elapsed = time.perf_counter() - start
    finally:
        worker.close()
    log = tables.completed_log(CHAIN)
    latencies = [record["completed_at"] - now for record in log.values()]
    for key_name in client.scan_iter(f"{prefix}:*"):
        client.delete(key_name)
    return len(requests) / elapsed, statistics.median(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transfers", type=int, default=200)
    parser.add_argument(
        "--batch", type=int, default=64, help="the worker's batch (claims and finality checks)"
    )
    options = parser.parse_args()
    rpc = os.environ.get("CHAINLOOM_EVM_RPC_2")
    redis_url = os.environ.get("CHAINLOOM_REDIS__URL")
    if not rpc or not redis_url:
        sys.exit(
            "needs the stack: chainloom-dev stack up --only redis,geth; "
            'eval "$(chainloom-dev stack env)"'
        )
    w3 = connect(rpc)
    sender = Sender(w3)
    deployment = deploy(
        sender,
        rpc_url=rpc,
        wormhole_chain=CHAIN,
        guardian_sets=GUARDIANS.sets(0),
        emitters=DEVNET_TOKEN_BRIDGE_EMITTERS,
    )
    key = bytes(Web3.keccak(text=f"bench-evm-{uuid.uuid4()}"))
    fund(sender, [Account.from_key(key).address])
    first = int(time.time()) * 1000
    count = options.transfers
    warm, bare_set, relay_set = (
        transfers(1, first),
        transfers(count, first + 1),
        transfers(count, first + 1 + count),
    )
    bare(w3, deployment.token_bridge, key, warm)  # creates the wrapped token
    settings = EvmChainSettings(
        chain=CHAIN,
        rpc_url=rpc,
        evm_chain_id=deployment.evm_chain_id,
        token_bridge=deployment.token_bridge,
        confirmations=1,
    )
    client = redis.Redis.from_url(redis_url)
    through_relayer, median = relayer(client, settings, key, relay_set, options.batch)
    baseline = bare(w3, deployment.token_bridge, key, bare_set)
    client.close()
    print(f"bare web3 loop: {baseline:8.1f} redemptions/s ({count} transfers)")
    print(f"relayer:        {through_relayer:8.1f} redemptions/s ({count} transfers)")
    print(f"ratio:          {through_relayer / baseline:8.2f} (goal >= 0.7)")
    print(f"median Incoming -> confirmed: {median * 1000:.0f} ms")


if __name__ == "__main__":
    main()
