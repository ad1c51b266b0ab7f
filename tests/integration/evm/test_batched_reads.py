"""The adapter's batched reads (one JSON-RPC batch for many) answer what the single reads do.

The worker asks ``redeemed_many`` for a claimed batch and ``finality_many`` for its due
submissions; both must agree with ``is_redeemed`` and ``finality`` one by one, including a
transaction the node does not know (rolled back) and one with no receipt yet.
"""

from __future__ import annotations

import time

import pytest
from web3 import Web3

from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.evm_adapter import EvmAdapter
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet
from tests.integration.evm.conftest import GUARDIANS, funded_wallet_key

CHAIN = 2


def _transfer(sequence: int) -> bytes:
    payload = (
        b"\x01" + (10**9).to_bytes(32, "big") + bytes(31) + b"\x55" + (6).to_bytes(2, "big")
        + bytes(31) + b"\x66" + CHAIN.to_bytes(2, "big") + (10).to_bytes(32, "big")
    )  # fmt: skip
    return GUARDIANS.sign(
        emitter_chain=4,
        emitter_address=GUARDIANS.token_bridge_emitter,
        sequence=sequence,
        payload=payload,
    ).to_bytes()


def test_batched_reads_agree_with_single_reads(
    bridges: dict[int, Deployment], dev_sender: dict[int, Sender]
) -> None:
    deployment = bridges[CHAIN]
    adapter = EvmAdapter(
        EvmChainSettings(
            chain=CHAIN,
            rpc_url=deployment.rpc_url,
            evm_chain_id=deployment.evm_chain_id,
            token_bridge=deployment.token_bridge,
            confirmations=2,
        )
    )
    wallet = Wallet(funded_wallet_key(dev_sender[CHAIN], "batched-reads"))
    first = time.time_ns()
    vaas = [_transfer(first + n) for n in range(4)]
    sent = [adapter.submit(vaa, wallet) for vaa in vaas[:3]]
    w3 = dev_sender[CHAIN].w3
    for tx in sent:  # mined (instant mining), each in its own block
        w3.eth.wait_for_transaction_receipt(tx, timeout=60, poll_latency=0.05)  # type: ignore[arg-type]

    redeemed = adapter.redeemed_many(vaas)
    assert redeemed == [True, True, True, False]
    assert redeemed == [adapter.is_redeemed(vaa) for vaa in vaas]

    # At 2 confirmations a transaction in the head block is pending and the ones below are
    # final. The chain is the session's: another block may land at any time, so the answers
    # are compared with the depths at one head, read again if the head moved meanwhile, and
    # a fresh transaction is sent when none is left in the head block.
    # A transaction the node does not know counts as rolled back.
    unknown = "0x" + "ab" * 32
    for _ in range(20):
        head = w3.eth.block_number
        expected = [_by_depth(w3, tx, head, adapter.settings.confirmations) for tx in sent]
        states = adapter.finality_many(sent)
        singles = [adapter.finality(tx) for tx in sent]
        with_unknown = adapter.finality_many([*sent, unknown])
        if w3.eth.block_number != head:
            continue
        assert states == expected
        assert singles == expected
        assert with_unknown == [*expected, Finality.ROLLED_BACK]
        if Finality.PENDING in expected:
            break
        sent.append(adapter.submit(_transfer(time.time_ns()), wallet))
        w3.eth.wait_for_transaction_receipt(sent[-1], timeout=60, poll_latency=0.05)  # type: ignore[arg-type]
    else:
        pytest.fail("no quiet moment on the chain to see a pending transaction in 20 tries")
    assert states[:2] == [Finality.FINAL, Finality.FINAL]


def _by_depth(w3: Web3, tx: str, head: int, confirmations: int) -> Finality:
    """What ``confirmations`` make of ``tx`` at ``head``: final once it is that many blocks
    deep, its own block counted."""
    height = w3.eth.get_transaction_receipt(tx)["blockNumber"]  # type: ignore[arg-type]
    return Finality.FINAL if head - height + 1 >= confirmations else Finality.PENDING
