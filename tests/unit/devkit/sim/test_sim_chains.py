"""The in-memory simulated chain: a token bridge's refusals and the failures it injects.

(The Redis-backed chain is exercised with real workers in tests/integration/relayer.)
"""

from __future__ import annotations

import pytest

from chainloom.relayer.adapters import ChainAdapter
from chainloom.relayer.errors import SubmitError, UnknownSubmissionError
from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet
from chainloom_dev.sim.sim_chains import InProcessAdapter, vaa_identity
from tests.ingest_support import signed_transfer

WALLET = Wallet(bytes(31) + b"\x01")
VAA = signed_transfer(1).to_bytes()
OTHER = signed_transfer(2).to_bytes()


def test_it_is_a_chain_adapter_and_refuses_a_second_redemption():
    chain = InProcessAdapter(4)
    assert isinstance(chain, ChainAdapter)
    assert not chain.is_redeemed(VAA)
    submission = chain.submit(VAA, WALLET)
    assert chain.is_redeemed(VAA)
    with pytest.raises(SubmitError, match="already redeemed"):
        chain.submit(VAA, WALLET)
    assert chain.duplicate_attempts == 1
    digest, sequence = vaa_identity(VAA)
    assert [s.submission_id for s in chain.submissions_of(digest)] == [submission]
    assert chain.submissions[0].wallet == WALLET.address
    assert sequence == 1


def test_finality_waits_for_confirmations_and_a_roll_back_frees_the_transfer():
    chain = InProcessAdapter(4, confirmations=2)
    submission = chain.submit(VAA, WALLET)
    assert [chain.finality(submission) for _ in range(3)] == [
        Finality.PENDING,
        Finality.PENDING,
        Finality.FINAL,
    ]
    chain.roll_back(submission)
    assert chain.finality(submission) is Finality.ROLLED_BACK
    assert not chain.is_redeemed(VAA)
    with pytest.raises(UnknownSubmissionError):
        chain.finality("0xnope")


def test_injected_failures_and_a_scooped_transfer():
    chain = InProcessAdapter(4)
    chain.fail_next(1, reason="rpc down")
    with pytest.raises(SubmitError, match="rpc down"):
        chain.submit(VAA, WALLET)
    digest, _ = vaa_identity(OTHER)
    chain.fail_always(digest)
    for _ in range(2):
        with pytest.raises(SubmitError, match="permanent"):
            chain.submit(OTHER, WALLET)
    assert chain.failed_attempts == 3
    chain.submit(VAA, WALLET)  # the one-off failure is gone
    scooped = signed_transfer(3).to_bytes()
    chain.mark_redeemed(scooped)
    assert chain.is_redeemed(scooped)
    with pytest.raises(SubmitError, match="already redeemed"):
        chain.submit(scooped, WALLET)
