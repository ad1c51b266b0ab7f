"""The planner's rules on in-memory rows (pure: no Bigtable)."""

from __future__ import annotations

from decimal import Decimal

from chainloom.eventstore import schema
from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.planner import (
    EnrichmentContext,
    MessageInput,
    Outcome,
    RowSnapshot,
    apply_plan,
    plan_message,
)
from chainloom.eventstore.schema import Q
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, VAA, decode_payload, mainnet_emitters
from chainloom_dev.sim.dev_guardians import DevGuardians
from tests.unit.eventstore import builders

KIT = DevGuardians()
EMITTERS = mainnet_emitters().with_dev_emitters([2])
ADDRESSES = KIT.guardian_set(0).checksummed
WETH = builders.evm("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")


def _input(vaa: VAA, tx: str | None = None) -> MessageInput:
    return MessageInput(
        vaa=vaa,
        raw=vaa.to_bytes(),
        signers={s.guardian_index: ADDRESSES[s.guardian_index] for s in vaa.signatures},
        quorum_met=len(vaa.signatures) >= KIT.quorum,
        payload=decode_payload(vaa, emitters=EMITTERS),
        initiating_tx_id=tx,
    )


def _vaa(signers: list[int], *, amount: int = 10**8, nonce: int = 0) -> VAA:
    return KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=9,
        payload=builders.transfer(amount, WETH, 2, builders.evm("aa" * 20), 2),
        timestamp=1_650_000_000,
        nonce=nonce,
        signers=signers,
    )


def test_first_plan_writes_every_family_with_vaa_timestamps() -> None:
    row: RowSnapshot = {}
    asset = AssetInfo(2, WETH.hex(), 18, "WETH", "Wrapped Ether", 1)
    plan = plan_message(
        _input(_vaa(list(range(13))), tx="0xAB"),
        row,
        EnrichmentContext(asset=asset, price_usd=Decimal(2)),
    )
    assert plan.outcome is Outcome.NEW
    assert plan.conditional
    families = {c.family for c in plan.cells}
    assert families == {
        schema.MESSAGE_PUBLICATION,
        schema.SIGNATURES,
        schema.VAA_STATE,
        schema.QUORUM_STATE,
        schema.TOKEN_TRANSFER_PAYLOAD,
        schema.TOKEN_TRANSFER_DETAILS,
        schema.CHAIN_DETAILS,
    }
    base = 1_650_000_000 * 1_000_000
    state = [c for c in plan.cells if c.family == schema.VAA_STATE]
    assert [c.timestamp_micros for c in state] == [base + 13_000]
    assert {c.timestamp_micros for c in plan.cells if c.family != schema.VAA_STATE} == {base}
    published = {c.qualifier for c in plan.cells if c.family == schema.MESSAGE_PUBLICATION}
    assert {
        Q.VERSION,
        Q.GUARDIAN_SET_INDEX,
        Q.TIMESTAMP,
        Q.NONCE,
        Q.SEQUENCE,
        Q.EMITTER_CHAIN,
        Q.EMITTER_ADDRESS,
        Q.INITIATING_TX_ID,
        Q.PAYLOAD,
    } <= published
    details = {
        c.qualifier: c.value for c in plan.cells if c.family == schema.TOKEN_TRANSFER_DETAILS
    }
    assert details[Q.AMOUNT] == b"1.00000000"
    assert details[Q.NOTIONAL_USD] == b"2.000000"
    index_rows = sorted({e.row_key.split(":")[0] for e in plan.index})
    assert index_rows == ["count", "fa", "fd", "recent", "tx", "vol"]
    dimensions = sorted(e.row_key.split(":")[1] for e in plan.index if e.row_key[:3] == "fa:")
    assert dimensions == ["all", "dst", "em", "pt", "rcv", "src", "tok", "tx"]


def test_repeat_plans_nothing_and_subset_plans_only_the_difference() -> None:
    row: RowSnapshot = {}
    first = _vaa(list(range(13)))
    apply_plan(row, plan_message(_input(first), row, EnrichmentContext()))
    repeat = plan_message(_input(first), row, EnrichmentContext())
    assert repeat.outcome is Outcome.UNCHANGED
    assert repeat.cells == ()
    assert repeat.index == ()
    subset = KIT.resign(first, signers=[0, 13, 14])
    plan = plan_message(_input(subset), row, EnrichmentContext())
    assert plan.outcome is Outcome.UPDATED
    assert not plan.conditional  # SignedVAA is already there
    assert sorted(c.qualifier for c in plan.cells if c.family == schema.SIGNATURES) == sorted(
        [ADDRESSES[13], ADDRESSES[14]]
    )
    (state,) = [c for c in plan.cells if c.family == schema.VAA_STATE]
    assert state.value.count(b",") == 14  # 15 entries


def test_different_digest_is_a_conflict_that_writes_one_cell() -> None:
    row: RowSnapshot = {}
    first = _vaa(list(range(13)))
    apply_plan(row, plan_message(_input(first), row, EnrichmentContext()))
    rival = _vaa(list(range(13)), amount=5, nonce=1)
    plan = plan_message(_input(rival), row, EnrichmentContext())
    assert plan.outcome is Outcome.CONFLICTING
    assert plan.conflict_digest == rival.digest.hex()
    assert [(c.family, c.qualifier) for c in plan.cells] == [
        (schema.QUORUM_STATE, Q.CONFLICT_PREFIX + rival.digest.hex())
    ]
    apply_plan(row, plan)
    again = plan_message(_input(rival), row, EnrichmentContext())
    assert again.outcome is Outcome.CONFLICTING
    assert again.cells == ()
    # The same rival body with other signatures keeps the first copy (reruns write nothing).
    resigned = plan_message(_input(KIT.resign(rival, signers=[0, 1, 14])), row, EnrichmentContext())
    assert resigned.outcome is Outcome.CONFLICTING
    assert resigned.cells == ()


def test_below_quorum_is_stored_without_signed_vaa() -> None:
    plan = plan_message(_input(_vaa([4, 5])), {}, EnrichmentContext())
    assert plan.outcome is Outcome.NEW
    assert not plan.conditional
    assert schema.QUORUM_STATE not in {c.family for c in plan.cells}


def test_a_new_signature_subset_rewrites_no_derived_index_row() -> None:
    row: RowSnapshot = {}
    apply_plan(row, plan_message(_input(_vaa(list(range(13)))), row, EnrichmentContext()))
    grown = plan_message(_input(_vaa(list(range(15)))), row, EnrichmentContext())
    assert grown.outcome is Outcome.UPDATED
    assert {c.family for c in grown.cells} == {schema.SIGNATURES, schema.VAA_STATE}
    assert not [e for e in grown.index if e.row_key[:3] in {"fa:", "fd:", "vol"}]
