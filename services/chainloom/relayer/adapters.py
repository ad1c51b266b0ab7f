"""Chain adapters: the workers' only view of a target chain, behind one small Protocol.

A worker needs three answers from a chain: is this transfer already redeemed (someone may have
scooped it, or this relayer submitted it just before a crash), submit it, and is that
submission final or rolled back. :class:`ChainAdapter` is exactly that; a real EVM adapter
comes in its own issue. The simulated chains the tests, the bench and ``chainloom relayer
work --adapter`` use live in :mod:`chainloom.testing.sim_chains`, outside the product.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet

__all__ = ["ChainAdapter", "Finality"]


@runtime_checkable
class ChainAdapter(Protocol):
    """What a worker needs from its target chain."""

    chain_id: int

    def is_redeemed(self, vaa: bytes) -> bool:
        """Whether the transfer in ``vaa`` is already redeemed on this chain."""
        ...

    def submit(self, vaa: bytes, wallet: Wallet) -> str:
        """Submit the redemption, signed by ``wallet``; return the submission (tx) id.

        Raises :class:`SubmitError` when the chain refuses it or the submission fails.
        """
        ...

    def finality(self, submission_id: str) -> Finality:
        """Whether the submission is still pending, final, or was rolled back."""
        ...
