"""The workload generator with Multi-Purpose Tokens: issuances, and holders' MPTokens created
and destroyed.

Why apart: ``mpt_holders`` must list, at an older ledger, the MPTokens that existed then, so a
history needs MPTokens that come and go. Kept out of the default mix so every history generated
before (and its figures) stays the same for a given seed; ``chainloom-dev ledger generate
--mpt`` asks for it. The rules kept: an MPToken and an issuance sit in their owner's directory
and count toward its OwnerCount; a holder destroys (MPTokenAuthorize with tfMPTUnauthorize) only
an MPToken with no balance. Balances are never moved, so ``MPTAmount`` stays absent (0).
"""

from __future__ import annotations

from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.binary import STObject
from chainloom_dev.sim.ledger_generator import (
    FEE,
    MIX,
    WorkloadGenerator,
    _Transaction,
    u16,
    u32,
    u64,
)

MPT_MIX: dict[str, int] = {
    **MIX,
    "mpt_issuance_create": 2,
    "mpt_authorize": 8,
    "mpt_unauthorize": 4,
}
"""The default mix plus the MPT kinds."""

TF_MPT_UNAUTHORIZE = 0x00000001
"""MPTokenAuthorize's flag: the holder gives its (empty) MPToken up."""

_ISSUER = sf.field_key("Issuer")
_OUTSTANDING = sf.field_key("OutstandingAmount")
_ISSUANCE_ID = sf.field_key("MPTokenIssuanceID")
_OWNER_NODE = sf.field_key("OwnerNode")
_MPTOKEN = sf.LEDGER_ENTRY_CODES["MPToken"]
_MPT_ISSUANCE = sf.LEDGER_ENTRY_CODES["MPTokenIssuance"]


class MptWorkloadGenerator(WorkloadGenerator):
    """:class:`WorkloadGenerator` whose mix also creates issuances and MPTokens and destroys
    MPTokens."""

    def __init__(self, initial: SourceLedger, *, seed: int, txs_per_ledger: int) -> None:
        super().__init__(initial, seed=seed, txs_per_ledger=txs_per_ledger)
        self._mix = MPT_MIX
        self._issuances: list[bytes] = []  # MPTokenIssuanceIDs
        self._mptokens: list[tuple[bytes, bytes]] = []  # (issuance ID, holder)

    def _tx_mpt_issuance_create(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        del sequence
        picked = self._pick_account(view, FEE)
        if picked is None:
            return None
        issuer, root = picked
        owner_dir = keylets.owner_directory(issuer)
        if not self._dir_can_add(view, owner_dir):
            return None
        used = self._spend(root, FEE)
        issuance_id = u32(used) + issuer
        key = keylets.mpt_issuance(issuance_id)
        self._dir_add(view, owner_dir, key, {sf.OWNER: issuer})
        self._owner_count(root, 1)
        view.create(
            key,
            {
                sf.LEDGER_ENTRY_TYPE: u16(_MPT_ISSUANCE),
                sf.FLAGS: u32(0),
                _ISSUER: issuer,
                sf.SEQUENCE: u32(used),
                _OUTSTANDING: u64(0),
                _OWNER_NODE: u64(0),
            },
        )
        self._issuances.append(issuance_id)
        tx = self._base_tx(sf.transaction_code("MPTokenIssuanceCreate"), issuer, used)
        return tx, FEE, {}

    def _tx_mpt_authorize(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        del sequence
        if not self._issuances:
            return None
        picked = self._pick_account(view, FEE)
        if picked is None:
            return None
        holder, root = picked
        issuance_id = self._rng.choice(self._issuances)
        key = keylets.mptoken(issuance_id, holder)
        owner_dir = keylets.owner_directory(holder)
        if holder == issuance_id[4:] or view.get(key) is not None:
            return None
        if not self._dir_can_add(view, owner_dir):
            return None
        self._dir_add(view, owner_dir, key, {sf.OWNER: holder})
        self._owner_count(root, 1)
        view.create(
            key,
            {
                sf.LEDGER_ENTRY_TYPE: u16(_MPTOKEN),
                sf.FLAGS: u32(0),
                sf.ACCOUNT: holder,
                _ISSUANCE_ID: issuance_id,
                _OWNER_NODE: u64(0),
            },
        )
        self._mptokens.append((issuance_id, holder))
        used = self._spend(root, FEE)
        tx = self._base_tx(sf.transaction_code("MPTokenAuthorize"), holder, used)
        tx[_ISSUANCE_ID] = issuance_id
        return tx, FEE, {}

    def _tx_mpt_unauthorize(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        del sequence
        if not self._mptokens:
            return None
        issuance_id, holder = self._rng.choice(self._mptokens)
        root = view.get(keylets.account_root(holder))
        if root is None:
            return None
        key = keylets.mptoken(issuance_id, holder)
        self._dir_remove(view, keylets.owner_directory(holder), key)
        view.delete(key)
        self._owner_count(root, -1)
        self._mptokens.remove((issuance_id, holder))
        used = self._spend(root, FEE)
        tx = self._base_tx(sf.transaction_code("MPTokenAuthorize"), holder, used)
        tx[sf.FLAGS] = u32(0x80000000 | TF_MPT_UNAUTHORIZE)
        tx[_ISSUANCE_ID] = issuance_id
        return tx, FEE, {}
