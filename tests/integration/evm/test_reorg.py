"""A redemption whose block is reorganised away before N confirmations is redeemed again, once.

geth's ``debug_setHead`` rewinds the dev chain below the block holding the worker's
redemption while it waits for 3 confirmations; the worker must notice (the receipt's block is
no longer canonical, or the node no longer knows the transaction), return the request through
the rollback path, find the transfer not redeemed and submit it again.
"""

from __future__ import annotations

import time

import redis
from eth_account import Account
from web3 import Web3

from chainloom.backoff import Backoff
from chainloom.evm.compile import contract
from chainloom.evm.deploy import Deployment, Sender, fund
from chainloom.relayer.evm_adapter import EvmAdapter
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.model import RelayRequest, RetryPolicy, Table
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.wallet import Wallet
from chainloom.relayer.worker import Worker, WorkerSettings
from tests.integration.evm.conftest import GUARDIANS, funded_wallet_key

CHAIN = 4
FEE = 5


def _advance(sender: Sender, blocks: int) -> None:
    """Mine ``blocks`` blocks (instant mining: one per transaction)."""
    for _ in range(blocks):
        fund(sender, ["0x" + "00" * 19 + "01"], 1)


def test_a_reorged_redemption_is_noticed_and_redeemed_again_once(
    redis_url: str, bridges: dict[int, Deployment], dev_sender: dict[int, Sender]
) -> None:
    sender = dev_sender[CHAIN]
    w3 = sender.w3
    deployment = bridges[CHAIN]
    recipient = Account.from_key(Web3.keccak(text="reorg-recipient")).address
    amount = 10**9
    payload = (
        b"\x01" + amount.to_bytes(32, "big") + bytes(31) + b"\x77" + (6).to_bytes(2, "big")
        + bytes(12) + bytes.fromhex(recipient[2:]) + CHAIN.to_bytes(2, "big")
        + FEE.to_bytes(32, "big")
    )  # fmt: skip
    vaa = GUARDIANS.sign(
        emitter_chain=2,
        emitter_address=GUARDIANS.token_bridge_emitter,
        sequence=int(time.time()),
        payload=payload,
    )
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    tables.enqueue_many(
        [
            RelayRequest(
                digest=vaa.digest_hex,
                vaa=vaa.to_bytes(),
                target_chain=CHAIN,
                emitter_chain=2,
                sequence=vaa.sequence,
                enqueued_at=time.time(),
            )
        ]
    )
    settings = EvmChainSettings(
        chain=CHAIN,
        rpc_url=deployment.rpc_url,
        evm_chain_id=deployment.evm_chain_id,
        token_bridge=deployment.token_bridge,
        confirmations=3,
    )
    wallet = Wallet(funded_wallet_key(sender, "reorg"))
    pacing = WorkerSettings(
        policy=RetryPolicy(max_retries=5, schedule=Backoff(initial=0.0, maximum=0.0)),
        lease_ttl=10.0,
        idle_sleep=0.0,
        recheck=0.0,
        seed=1,
    )
    worker = Worker(tables, EvmAdapter(settings), wallet, pacing)
    worker.start(timeout=10)
    try:
        worker.step()
        assert tables.locate(vaa.digest_hex) is Table.PENDING_CONFIRMATION
        first = tables.get(vaa.digest_hex)
        assert first is not None
        assert first.submission_id is not None
        # Mined at once by the dev chain, but asynchronously: on a loaded machine the receipt
        # may come a moment after the worker's step (read at once, it can be "not found").
        receipt = w3.eth.wait_for_transaction_receipt(
            first.submission_id,  # type: ignore[arg-type]
            timeout=60,
            poll_latency=0.05,
        )
        height = receipt["blockNumber"]
        bridge_abi, _ = contract("ChainloomTokenBridge")
        bridge = w3.eth.contract(
            address=Web3.to_checksum_address(deployment.token_bridge), abi=bridge_abi
        )
        assert bridge.functions.isTransferCompleted(vaa.digest).call()

        # Nothing else may send to this chain meanwhile: a block mined by someone else between
        # the rewind and these checks would make them fail for a reason not the worker's.
        w3.provider.make_request("debug_setHead", [hex(height - 1)])  # type: ignore[arg-type]
        head = w3.eth.block_number
        assert head == height - 1, f"head {head} after rewinding to {height - 1}"
        assert not bridge.functions.isTransferCompleted(vaa.digest).call(), (
            f"redeemed still after the rewind to {height - 1} (head {w3.eth.block_number})"
        )

        deadline = time.monotonic() + 120
        while tables.locate(vaa.digest_hex) is not Table.COMPLETED:
            assert time.monotonic() < deadline, tables.get(vaa.digest_hex)
            worker.step()
            _advance(sender, 1)
    finally:
        worker.close()
    assert worker.counters.rolled_back == 1
    assert worker.counters.submitted == 2
    assert worker.counters.confirmed == 1
    assert bridge.functions.isTransferCompleted(vaa.digest).call()
    token_abi, _ = contract("ChainloomWrappedToken")
    wrapped = bridge.functions.wrappedAsset(6, bytes(31) + b"\x77").call()
    token = w3.eth.contract(address=wrapped, abi=token_abi)
    assert token.functions.balanceOf(recipient).call() == amount - FEE
    client.close()
