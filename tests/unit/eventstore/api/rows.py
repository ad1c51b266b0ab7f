"""Rows as the writer stores them, planned in memory (no Bigtable), for the pure tests."""

from __future__ import annotations

from decimal import Decimal

from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.planner import (
    EnrichmentContext,
    MessageInput,
    RowSnapshot,
    apply_plan,
    plan_message,
)
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, VAA, decode_payload, mainnet_emitters
from chainloom_dev.sim.dev_guardians import DevGuardians
from tests.unit.eventstore import builders

KIT = DevGuardians()
EMITTERS = mainnet_emitters().with_dev_emitters([2])
ADDRESSES = KIT.guardian_set(0).checksummed
WETH = builders.evm("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")
ASSET = AssetInfo(2, WETH.hex(), 18, "WETH", "Wrapped Ether", 1)


def transfer_vaa(sequence: int = 9, signers: list[int] | None = None) -> VAA:
    return KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=sequence,
        payload=builders.transfer(3 * 10**8, WETH, 2, builders.evm("aa" * 20), 4, fee=7),
        timestamp=1_650_000_000,
        nonce=5,
        signers=list(range(13)) if signers is None else signers,
    )


def stored_row(vaa: VAA, *, tx: str | None = None, enrich: bool = True) -> RowSnapshot:
    """The row the writer would leave for ``vaa`` alone."""
    item = MessageInput(
        vaa=vaa,
        raw=vaa.to_bytes(),
        signers={s.guardian_index: ADDRESSES[s.guardian_index] for s in vaa.signatures},
        quorum_met=len(vaa.signatures) >= KIT.quorum,
        payload=decode_payload(vaa, emitters=EMITTERS),
        initiating_tx_id=tx,
    )
    context = (
        EnrichmentContext(asset=ASSET, price_usd=Decimal(2)) if enrich else EnrichmentContext()
    )
    row: RowSnapshot = {}
    apply_plan(row, plan_message(item, row, context))
    return row
