"""The filter index rows of a row, their key order, and the filters' matching: pure."""

from __future__ import annotations

import random

from chainloom.eventstore import keys
from chainloom.eventstore.filter_index import (
    FACTS_QUALIFIER,
    Filters,
    MessageFacts,
    canonical_address,
    exact,
    facts_of,
    filter_index_entries,
    matches,
    scan_dimensions,
)
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from tests.unit.eventstore.api.rows import WETH, stored_row, transfer_vaa

ROW_KEY = f"2:{DEV_TOKEN_BRIDGE_EMITTER.hex()}:0000000000000009"


def test_a_transfer_has_a_row_per_dimension_in_each_order() -> None:
    row = stored_row(transfer_vaa(), tx="0x" + "ab" * 32)
    entries = filter_index_entries(ROW_KEY, row)
    assert entries == filter_index_entries(ROW_KEY, row)  # the same row, the same cells
    facts = facts_of(ROW_KEY, row)
    assert facts == MessageFacts(
        row_key=ROW_KEY,
        timestamp=1_650_000_000,
        source_chain=2,
        emitter=DEV_TOKEN_BRIDGE_EMITTER.hex(),
        payload_type=1,
        target_chain=4,
        token=f"2/{WETH.hex()}",
        sender=None,
        recipient="0x" + "aa" * 20,
        tx_hash="0x" + "ab" * 32,
    )
    assert {e.value for e in entries} == {facts.to_json()}
    assert MessageFacts.from_json(facts.to_json()) == facts
    assert {e.qualifier for e in entries} == {FACTS_QUALIFIER}
    assert {e.timestamp_micros for e in entries} == {1_650_000_000 * 10**6}
    ascending = sorted(e.row_key.split(":")[1] for e in entries if e.row_key.startswith("fa:"))
    assert ascending == ["all", "dst", "em", "pt", "rcv", "src", "tok", "tx"]
    assert len(entries) == 2 * len(ascending)
    assert f"fa:rcv:00004/0x{'aa' * 20}:1650000000:{ROW_KEY}" in {e.row_key for e in entries}


def test_a_row_without_its_publication_has_no_rows() -> None:
    assert filter_index_entries(ROW_KEY, {"QuorumState": {"Conflict:ab": b"x"}}) == []


def test_descending_keys_are_exactly_the_reverse_of_ascending_ones() -> None:
    rng = random.Random(3)
    messages = []
    for _ in range(400):
        sequence = rng.choice([rng.randrange(100), rng.randrange(10**16, 2**64)])
        key = keys.MessageKey(rng.randrange(1, 40), f"{rng.randrange(4):064x}", sequence)
        messages.append((rng.randrange(1_700_000_000, 1_700_000_005), key.row_key))
    ascending = sorted(messages, key=lambda m: keys.filter_suffix("asc", *m))
    descending = sorted(messages, key=lambda m: keys.filter_suffix("desc", *m))
    assert descending == ascending[::-1]
    assert ascending == sorted(messages)


def test_addresses_are_keyed_in_native_form_whatever_form_is_given() -> None:
    evm = "0x" + "11" * 20
    for given in (evm, evm.upper().replace("0X", "0x"), "11" * 20, "00" * 12 + "11" * 20):
        assert canonical_address(2, given) == evm
    solana = canonical_address(1, "01" * 32)
    assert solana == canonical_address(1, "0x" + "01" * 32) == canonical_address(1, solana)
    assert canonical_address(3, "terra1xyz") == "terra1xyz"


def test_the_most_selective_filter_is_scanned_and_the_others_tested() -> None:
    facts = MessageFacts(ROW_KEY, 100, 2, "e" * 64, 3, 1, "2/t", "0xs", "r", "0xtx")
    assert matches(facts, Filters(source_chain=2, payload_types=frozenset({1, 3}), start=100))
    assert not matches(facts, Filters(source_chain=2, end=100))
    assert matches(facts, Filters(address=(1, "r")))
    assert matches(facts, Filters(address=(2, "0xs")))
    assert not matches(facts, Filters(address=(2, "r")))
    only_chain = Filters(source_chain=2)
    assert scan_dimensions(only_chain) == [("src", "00002")]
    assert exact(only_chain, scan_dimensions(only_chain))
    both = Filters(source_chain=2, tx_hash="0xtx")
    assert scan_dimensions(both) == [("tx", "0xtx")]
    assert not exact(both, scan_dimensions(both))
    types = Filters(payload_types=frozenset({3, 1}))
    assert scan_dimensions(types) == [("pt", "1"), ("pt", "3")]
    assert exact(types, scan_dimensions(types))  # every row of either type matches
    assert scan_dimensions(Filters(start=5)) == [("all", "*")]
