"""Idempotency, signature merging, conflicts, refusals and enrichment against the emulator."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.enrichment import WrappedAsset
from chainloom.eventstore.errors import UnverifiedVAAError
from chainloom.eventstore.feed import FEED_PREFIX
from chainloom.eventstore.planner import Outcome
from chainloom.eventstore.prices import FilePriceSource
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.schema import Q
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.settings import BigtableSettings
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, mainnet_emitters, parse_vaa
from chainloom.wormhole.errors import VAAParseError
from chainloom_dev.sim.dev_guardians import DevGuardians
from tests.unit.eventstore import builders

KIT = DevGuardians()
EMITTERS = mainnet_emitters().with_dev_emitters([2, 4, 6])
WETH = builders.evm("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")
ALICE = builders.evm("00000000000000000000000000000000000a11ce")
T0 = 1_700_000_000


def _writer(tables: BigtableTables, **kwargs: object) -> EventWriter:
    return EventWriter(tables, KIT.sets(0), emitters=EMITTERS, **kwargs)  # type: ignore[arg-type]


def _cell_count(tables: BigtableTables, row_key: str) -> int:
    row = tables.events.read_row(row_key)
    return 0 if row is None else len(row.cells)


def _transfer_vaa(sequence: int, *, signers: list[int] | None = None, amount: int = 150_000_000):
    payload = builders.transfer(amount, WETH, 2, ALICE, 2, fee=0)
    return KIT.sign(
        emitter_chain=4,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=sequence,
        payload=payload,
        timestamp=T0 + sequence,
        signers=signers,
    )


def test_repeats_and_signature_subsets_are_idempotent(tables: BigtableTables) -> None:
    first = _transfer_vaa(1, signers=list(range(13)))
    other_subset = KIT.resign(first, signers=list(range(6, 19)))
    reader = EventReader(tables)
    with _writer(tables) as writer:
        assert writer.put(first.to_bytes()) is Outcome.NEW
        cells = _cell_count(tables, first.row_key)
        assert writer.put(first.to_bytes()) is Outcome.UNCHANGED
        assert _cell_count(tables, first.row_key) == cells
        assert writer.put(other_subset.to_bytes()) is Outcome.UPDATED
        grown = _cell_count(tables, first.row_key)
        # six new Signatures cells and one new VAAState list cell
        assert grown == cells + 6 + 1
        assert writer.put(first.to_bytes()) is Outcome.UNCHANGED
        assert writer.put(other_subset.to_bytes()) is Outcome.UNCHANGED
        assert _cell_count(tables, first.row_key) == grown
    message = reader.get(first.message_id)
    assert message is not None
    assert len(message.families[schema.SIGNATURES]) == 19
    assert message.signed_vaa == first.to_bytes()  # the first quorum VAA stays
    history = reader.signature_history(first.message_id, 0)
    assert history == [list(range(13)), list(range(19))]


def test_signatures_arriving_one_by_one_build_the_history(tables: BigtableTables) -> None:
    full = _transfer_vaa(2, signers=list(range(19)))
    reader = EventReader(tables)
    order = [7, 3, 15]
    with _writer(tables) as writer:
        for position, slot in enumerate(order):
            single = KIT.resign(full, signers=[slot])
            outcome = writer.put(single.to_bytes())
            assert outcome is (Outcome.NEW if position == 0 else Outcome.UPDATED)
        message = reader.get(full.message_id)
        assert message is not None
        assert message.signed_vaa is None  # no quorum yet
        assert reader.signature_history(full.message_id, 0) == [[7], [3, 7], [3, 7, 15]]
        quorum = KIT.resign(full, signers=list(range(13)))
        assert writer.put(quorum.to_bytes()) is Outcome.UPDATED
    message = reader.get(full.message_id)
    assert message is not None
    assert message.signed_vaa == quorum.to_bytes()
    assert len(message.families[schema.SIGNATURES]) == 14  # slots 0..12 and 15
    assert reader.signature_history(full.message_id, 0)[-1] == [*range(13), 15]


def test_a_different_vaa_for_the_same_message_is_kept_and_reported(
    tables: BigtableTables,
) -> None:
    original = _transfer_vaa(3)
    rival = KIT.sign(
        emitter_chain=4,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=3,
        payload=builders.transfer(999, WETH, 2, ALICE, 2),
        timestamp=T0 + 3,
        nonce=1,
    )
    assert original.message_id == rival.message_id
    with _writer(tables) as writer:
        assert writer.put(original.to_bytes()) is Outcome.NEW
        before = EventReader(tables).get(original.message_id)
        assert writer.put(rival.to_bytes()) is Outcome.CONFLICTING
        assert writer.put(rival.to_bytes()) is Outcome.CONFLICTING
        summary = writer.summary
    assert summary.conflicting == 2
    assert summary.conflicts[0] == (original.message_id, rival.digest_hex)
    after = EventReader(tables).get(original.message_id)
    assert before is not None
    assert after is not None
    assert after.signed_vaa == original.to_bytes()
    assert after.conflicts == {rival.digest.hex(): rival.to_bytes()}
    assert after.value(schema.TOKEN_TRANSFER_PAYLOAD, Q.AMOUNT) == 150_000_000
    # nothing but the conflict cell changed
    changed = {
        (f, q)
        for f, cols in after.families.items()
        for q, v in cols.items()
        if before.families.get(f, {}).get(q) != v
    }
    assert changed == {(schema.QUORUM_STATE, Q.CONFLICT_PREFIX + rival.digest.hex())}


def test_conflict_inside_one_batch(tables: BigtableTables) -> None:
    original = _transfer_vaa(4)
    rival = KIT.sign(
        emitter_chain=4,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=4,
        payload=builders.transfer(1, WETH, 2, ALICE, 2),
        timestamp=T0 + 99,
    )
    with _writer(tables) as writer:
        summary = writer.put_many([original.to_bytes(), rival.to_bytes(), original.to_bytes()])
    assert (summary.new, summary.conflicting, summary.unchanged) == (1, 1, 1)
    stored = EventReader(tables).get(original.message_id)
    assert stored is not None
    assert stored.signed_vaa == original.to_bytes()
    assert set(stored.conflicts) == {rival.digest.hex()}


def test_bad_input_is_refused_and_touches_nothing(tables: BigtableTables) -> None:
    good = _transfer_vaa(5)
    raw = bytearray(good.to_bytes())
    raw[6 + 1 + 5] ^= 0xFF  # corrupt r of the first signature
    with _writer(tables) as writer:
        with pytest.raises(UnverifiedVAAError, match=r"does not verify"):
            writer.put(bytes(raw))
        with pytest.raises(VAAParseError):
            writer.put(b"\x01\x00")
        summary = writer.put_many(
            [("bad", bytes(raw)), ("short", b"\x01"), ("good", good.to_bytes())]
        )
    assert summary.refused == 2
    assert summary.new == 1
    assert [label for label, _ in summary.refusals] == ["bad", "short"]
    # the tampered VAA names the good one's message id; the stored row is the good one
    stored = EventReader(tables).get(good.message_id)
    assert stored is not None
    assert stored.signed_vaa == good.to_bytes()
    assert stored.conflicts == {}


def test_enrichment_from_asset_meta_prices_and_wrapped_assets(
    tables: BigtableTables, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text(
        f"coin,timestamp,price_usd\nWETH,{T0 - 3600},2000.50\nWETH,{T0 + 10},2100.25\n"
    )
    attestation = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=1,
        payload=builders.asset_meta(WETH, 2, 18, "WETH", "Wrapped Ether"),
        timestamp=T0,
    )
    home = _transfer_vaa(10, amount=150_000_000)  # 1.5 WETH back to Ethereum
    away = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=2,
        payload=builders.transfer_with_payload(
            25_000_000,
            WETH,
            2,
            ALICE,
            6,
            builders.evm("00000000000000000000000000000000000b0b00"),
            b"hi",
        ),
        timestamp=T0 + 12,
    )
    with _writer(tables, prices=FilePriceSource.from_path(prices)) as writer:
        writer.register_wrapped_asset(
            2,
            WETH.hex(),
            6,
            WrappedAsset("0x7fCDc35463E3770c2fB992716Cd070B63540b947", "WETH", "WETH (Wormhole)"),
        )
        summary = writer.put_many([attestation.to_bytes(), home.to_bytes(), away.to_bytes()])
    assert summary.new == 3
    reader = EventReader(tables)
    stored_home = reader.get(home.message_id)
    assert stored_home is not None
    details = schema.TOKEN_TRANSFER_DETAILS
    assert stored_home.value(details, Q.AMOUNT) == Decimal("1.50000000")
    assert stored_home.families[details][Q.AMOUNT] == b"1.50000000"
    assert stored_home.value(details, Q.TOKEN_PRICE_USD) == Decimal("2100.25")
    assert stored_home.value(details, Q.NOTIONAL_USD) == Decimal("3150.375")
    assert stored_home.value(details, Q.ORIGIN_SYMBOL) == "WETH"
    assert stored_home.value(details, Q.ORIGIN_NAME) == "Wrapped Ether"
    assert (
        stored_home.value(details, Q.ORIGIN_TOKEN_ADDRESS)
        == "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"
    )
    chain = schema.CHAIN_DETAILS
    assert (
        stored_home.value(chain, Q.RESULTING_TOKEN_ADDRESS)
        == "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"
    )
    assert stored_home.value(chain, Q.RESULTING_TOKEN_SYMBOL) == "WETH"
    stored_away = reader.get(away.message_id)
    assert stored_away is not None
    assert stored_away.value(details, Q.AMOUNT) == Decimal("0.25")
    assert (
        stored_away.value(chain, Q.SENDER_ADDRESS).lower()
        == "0x00000000000000000000000000000000000b0b00"
    )
    assert (
        stored_away.value(chain, Q.RESULTING_TOKEN_ADDRESS)
        == "0x7fCDc35463E3770c2fB992716Cd070B63540b947"
    )
    assert stored_away.value(chain, Q.RESULTING_TOKEN_NAME) == "WETH (Wormhole)"
    assert stored_away.value(schema.TOKEN_TRANSFER_PAYLOAD, Q.PAYLOAD_ID) == 3


def test_transfer_before_its_attestation_is_enriched_when_stored_again(
    tables: BigtableTables,
) -> None:
    transfer = _transfer_vaa(20)
    attestation = KIT.sign(
        emitter_chain=2,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=7,
        payload=builders.asset_meta(WETH, 2, 18, "WETH", "Wrapped Ether"),
        timestamp=T0,
    )
    with _writer(tables) as writer:
        assert writer.put(transfer.to_bytes()) is Outcome.NEW
        assert writer.put(attestation.to_bytes()) is Outcome.NEW
        assert writer.put(transfer.to_bytes()) is Outcome.UPDATED
        assert writer.put(transfer.to_bytes()) is Outcome.UNCHANGED
    stored = EventReader(tables).get(transfer.message_id)
    assert stored is not None
    assert stored.value(schema.TOKEN_TRANSFER_DETAILS, Q.AMOUNT) == Decimal("1.5")
    assert stored.value(schema.TOKEN_TRANSFER_DETAILS, Q.NOTIONAL_USD) is None


def test_publication_observed_first_then_signatures_then_quorum(tables: BigtableTables) -> None:
    signed = _transfer_vaa(30, signers=list(range(19)))
    unsigned = parse_vaa(b"\x01" + bytes(4) + b"\x00" + signed.body)
    tx = "0x" + "5e" * 32
    reader = EventReader(tables)
    with _writer(tables) as writer:
        assert writer.observe_publication(unsigned, tx) is Outcome.NEW
        observed = reader.get(signed.message_id)
        assert observed is not None
        assert observed.value(schema.MESSAGE_PUBLICATION, Q.INITIATING_TX_ID) == tx
        assert schema.SIGNATURES not in observed.families
        assert observed.signed_vaa is None
        assert writer.put(KIT.resign(signed, signers=[2]).to_bytes()) is Outcome.UPDATED
        quorum = KIT.resign(signed, signers=list(range(1, 14)))
        assert writer.put(quorum.to_bytes()) is Outcome.UPDATED
    stored = reader.get(signed.message_id)
    assert stored is not None
    assert stored.signed_vaa == quorum.to_bytes()
    assert stored.value(schema.MESSAGE_PUBLICATION, Q.INITIATING_TX_ID) == tx
    assert reader.signature_history(signed.message_id, 0) == [[2], list(range(1, 14))]
    assert [m.key.message_id for m in reader.by_tx(tx.upper().replace("0X", "0x"))] == [
        signed.message_id
    ]


class _Crash(BaseException):
    """Stands for the process dying: nothing after it runs, nothing catches it."""


class _DiesAfterWrites(BigtableTables):
    """Real tables whose process 'dies' once ``survive`` writes have reached the server."""

    def __init__(self, settings: BigtableSettings, survive: int) -> None:
        super().__init__(settings)
        self.left = survive

    def _one_more(self) -> None:
        if self.left == 0:
            raise _Crash
        self.left -= 1

    def bulk_write(self, *args: Any, **kwargs: Any) -> list[int]:
        self._one_more()
        return super().bulk_write(*args, **kwargs)

    def write_many_if_unsigned(self, *args: Any, **kwargs: Any) -> list[bool]:
        self._one_more()
        return super().write_many_if_unsigned(*args, **kwargs)


@pytest.mark.parametrize("survive", [1, 2, 3, 4, 5])
def test_a_writer_killed_between_writes_resumes_to_the_same_tables(
    settings: BigtableSettings, survive: int
) -> None:
    """Kill the writer between its writes (three batches, two writes each) and put everything
    again: the events and index tables equal a run's that never stopped, index rows included."""
    small = WriterConfig(flush_rows=10)
    vaas = [_transfer_vaa(sequence).to_bytes() for sequence in range(1, 31)]
    with _DiesAfterWrites(settings, survive) as dying:
        writer = _writer(dying, config=small)
        with pytest.raises(_Crash):
            writer.put_many(vaas)
    with BigtableTables(settings) as tables, _writer(tables, config=small) as writer:
        writer.put_many(vaas)
        resumed = dict(tables.scan_events([("", "~")])), tables.scan_index("", "~")

    clean_settings = settings.model_copy(update={"table": settings.table + "-clean"})
    ensure_schema(clean_settings)
    with BigtableTables(clean_settings) as tables, _writer(tables, config=small) as writer:
        writer.put_many(vaas)
        clean = dict(tables.scan_events([("", "~")])), tables.scan_index("", "~")
    assert len(clean[0]) == len(vaas)
    assert resumed[0] == clean[0]
    # feed: rows carry their write time (the stream's order), and one whose VAA was stored just
    # before the crash is not written again (docs/events-api.md, Stream): compared apart
    assert _not_feed(resumed[1]) == _not_feed(clean[1])


def _not_feed(rows: list[tuple[str, dict[str, bytes]]]) -> list[tuple[str, dict[str, bytes]]]:
    return [(key, cells) for key, cells in rows if not key.startswith(FEED_PREFIX)]
