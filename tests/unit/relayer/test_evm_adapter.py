"""The EVM adapter's pure parts: revert classification, the nonce manager, its settings."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from chainloom.relayer.evm_adapter import (
    NonceManager,
    Revert,
    classify_revert,
    classify_send_error,
)
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.model import RelayRequest, RetryPolicy, Table, after_failure


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("execution reverted: transfer already completed", Revert.ALREADY_COMPLETED),
        ("execution reverted: invalid VAA: quorum not met", Revert.FOR_GOOD),
        ("execution reverted: invalid VAA: signature does not match", Revert.FOR_GOOD),
        ("execution reverted: unknown emitter", Revert.FOR_GOOD),
        ("execution reverted: transfer is for another chain", Revert.FOR_GOOD),
        ("execution reverted: payload 3 may only be redeemed by its recipient", Revert.FOR_GOOD),
        ("execution reverted: guardian indices must be strictly ascending", Revert.FOR_GOOD),
        ("out of gas", Revert.RETRY),
        ("execution reverted", Revert.RETRY),
    ],
)
def test_reverts_are_sorted_by_the_contracts_reason(reason: str, kind: Revert) -> None:
    assert classify_revert(reason) is kind


def test_send_errors_are_retried_and_say_when_to_reread_the_nonce() -> None:
    assert classify_send_error("nonce too low: next nonce 7, tx nonce 5") == (Revert.RETRY, True)
    assert classify_send_error("replacement transaction underpriced") == (Revert.RETRY, True)
    assert classify_send_error("already known") == (Revert.RETRY, False)
    assert classify_send_error("insufficient funds for gas * price + value")[0] is Revert.RETRY


def test_nonce_manager_starts_from_the_pending_count_and_rereads_after_forget() -> None:
    chain = {"0xa": 5}
    reads: list[str] = []

    def pending(address: str) -> int:
        reads.append(address)
        return chain[address]

    nonces = NonceManager(pending)
    assert nonces.reserve("0xa") == 5
    assert nonces.reserve("0xa") == 5  # not sent yet: the same nonce again
    nonces.sent("0xa", 5)
    assert nonces.reserve("0xa") == 6
    assert reads == ["0xa"]
    chain["0xa"] = 9  # e.g. a send whose outcome is unknown did reach the pool
    nonces.forget("0xa")
    assert nonces.reserve("0xa") == 9
    assert reads == ["0xa", "0xa"]
    nonces.sent("0xa", 9)
    chain["0xa"] = 4  # a reorg took the chain back below this wallet's last transactions
    nonces.forget()
    assert nonces.reserve("0xa") == 4


def test_evm_chain_settings_check_their_fields() -> None:
    settings = EvmChainSettings(
        chain=2, rpc_url="http://127.0.0.1:8545", evm_chain_id=1, token_bridge="0x" + "ab" * 20
    )
    assert settings.confirmations == 1
    assert settings.gas.max_fee_gwei > 0
    with pytest.raises(ValidationError, match="token_bridge"):
        EvmChainSettings(chain=2, rpc_url="http://x", evm_chain_id=1, token_bridge="0x12")
    with pytest.raises(ValidationError, match="private_key"):
        EvmChainSettings.model_validate(
            {
                "chain": 2,
                "rpc_url": "http://x",
                "evm_chain_id": 1,
                "token_bridge": "0x" + "ab" * 20,
                "private_key": "00",
            }
        )


def test_a_refusal_for_good_goes_to_failed_at_once() -> None:
    request = RelayRequest(
        digest="0x" + "11" * 32, vaa=b"\x01", target_chain=2, emitter_chain=4, sequence=1
    )
    policy = RetryPolicy(max_retries=10)
    decision = after_failure(
        request, "unknown emitter", now=100.0, policy=policy, rng=random.Random(1), for_good=True
    )
    assert decision.destination is Table.FAILED
    assert decision.request.last_error == "unknown emitter"
    retried = after_failure(request, "timeout", now=100.0, policy=policy, rng=random.Random(1))
    assert retried.destination is Table.INCOMING
