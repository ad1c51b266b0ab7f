"""Chain adapters: the workers' only view of a target chain, behind one small Protocol.

A worker needs three answers from a chain: is this transfer already redeemed (someone may have
scooped it, or this relayer submitted it just before a crash), submit it, and is that
submission final or rolled back. :class:`ChainAdapter` is exactly that; a real EVM adapter
comes in its own issue. The simulated chains the tests, the bench and ``chainloom relayer
work --adapter`` use live in :mod:`chainloom_dev.sim.sim_chains`, outside the product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet

__all__ = ["BatchFinality", "BatchRedeemedCheck", "ChainAdapter", "Finality"]


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


@runtime_checkable
class BatchFinality(Protocol):
    """An adapter that can read the finality of many submissions at once (one round trip
    instead of several per submission); a worker uses it when its adapter offers it."""

    def finality_many(self, submission_ids: Sequence[str]) -> list[Finality]:
        """:meth:`ChainAdapter.finality` of each id, in order; a submission the chain does
        not know counts as rolled back. Raises when the chain cannot be read now."""
        ...


@runtime_checkable
class BatchRedeemedCheck(Protocol):
    """An adapter that can tell whether many transfers are redeemed at once; a worker asks it
    for a whole claimed batch before submitting any of it."""

    def redeemed_many(self, vaas: Sequence[bytes]) -> list[bool]:
        """:meth:`ChainAdapter.is_redeemed` of each VAA, in order. Raises when the chain
        cannot be read now, or when a VAA does not parse (the worker then asks one by one)."""
        ...
