"""The workload generator: consecutive ledgers whose headers, transactions, metadata and diffs
agree with each other and with the state they start from."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from xrpl.core.binarycodec import decode

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.nft import nfts_from_transaction
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.types import LedgerHeader
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl import hashing
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.parse import NodeKind, native_drops, parse_metadata, parse_transaction
from chainloom_dev.sim.ledger_generator import (
    WorkloadGenerator,
    issued,
    issued_value,
    quality,
    vectors_ledger,
    xrp,
)

LEDGERS = 12
TXS = 60


def _fee(transaction: bytes) -> int:
    fee = parse_transaction(transaction).fields[sf.FEE]
    assert isinstance(fee, bytes)
    drops = native_drops(fee)
    assert drops is not None
    return drops


@pytest.fixture(scope="module")
def initial(vectors_dir: Path) -> SourceLedger:
    return vectors_ledger(vectors_dir / "xrpl_vectors.json", 38129)


@pytest.fixture(scope="module")
def generated(initial: SourceLedger) -> tuple[WorkloadGenerator, list[tuple[int, SourceLedger]]]:
    generator = WorkloadGenerator(initial, seed=7, txs_per_ledger=TXS)
    return generator, list(generator.ledgers(LEDGERS))


def test_the_initial_ledger_is_38129_with_its_payment(initial: SourceLedger) -> None:
    header = LedgerHeader.parse(initial.header)
    assert header.sequence == 38129
    assert len(initial.objects) == 261
    assert [o.key for o in initial.objects] == sorted(o.key for o in initial.objects)
    assert hashing.state_root([(o.key, o.blob) for o in initial.objects]) == header.account_hash
    assert hashing.transaction_root(initial.transactions) == header.transaction_hash


def test_headers_chain_and_hash_their_contents(
    initial: SourceLedger, generated: tuple[WorkloadGenerator, list[tuple[int, SourceLedger]]]
) -> None:
    generator, ledgers = generated
    previous = LedgerHeader.parse(initial.header)
    state = {o.key: o.blob for o in initial.objects}
    for sequence, ledger in ledgers:
        header = LedgerHeader.parse(ledger.header)  # checks the appended hash
        assert header.sequence == sequence == previous.sequence + 1
        assert header.parent_hash == previous.hash
        assert header.parent_close_time == previous.close_time
        assert header.close_time > previous.close_time
        assert hashing.transaction_root(ledger.transactions) == header.transaction_hash
        fees = sum(_fee(t) for t, _ in ledger.transactions)
        assert header.total_drops == previous.total_drops - fees
        for obj in ledger.objects:
            if obj.blob:
                state[obj.key] = obj.blob
            else:
                assert obj.key in state
                del state[obj.key]
        assert hashing.state_root(list(state.items())) == header.account_hash
        previous = header
    assert state == generator.state


def test_metadata_matches_the_diff(
    initial: SourceLedger, generated: tuple[WorkloadGenerator, list[tuple[int, SourceLedger]]]
) -> None:
    _, ledgers = generated
    keys = {o.key for o in initial.objects}
    for _, ledger in ledgers:
        diff = {o.key: o.blob for o in ledger.objects}
        alive = set(keys)
        indexes = []
        for _, metadata in ledger.transactions:
            meta = parse_metadata(metadata)
            assert meta.result_name == "tesSUCCESS"
            indexes.append(meta.transaction_index)
            for node in meta.nodes:
                if node.kind is NodeKind.CREATED:
                    assert node.ledger_index not in alive
                    alive.add(node.ledger_index)
                else:
                    assert node.ledger_index in alive
                    if node.kind is NodeKind.DELETED:
                        alive.discard(node.ledger_index)
                if node.ledger_index in diff:
                    continue
                # Only an object created and deleted within the ledger may miss the diff.
                assert node.ledger_index not in keys
        assert indexes == list(range(len(ledger.transactions)))
        assert {k for k, b in diff.items() if b} <= alive
        assert {k for k, b in diff.items() if not b} == keys - alive
        keys = alive


def test_the_mix_covers_every_kind_and_decodes_with_xrpl_py(
    generated: tuple[WorkloadGenerator, list[tuple[int, SourceLedger]]],
) -> None:
    _, ledgers = generated
    kinds: Counter[str] = Counter()
    sampled = 0
    for sequence, ledger in ledgers:
        for position, (transaction, metadata) in enumerate(ledger.transactions):
            tx = parse_transaction(transaction)
            kinds[tx.type_name] += 1
            if sf.OFFER_SEQUENCE in tx.fields and tx.type_name == "OfferCreate":
                kinds["OfferCreate replacing an offer"] += 1
            amount = tx.fields.get(sf.AMOUNT_FIELD)
            if tx.type_name == "Payment" and isinstance(amount, bytes) and len(amount) == 48:
                kinds["Payment of an issued currency"] += 1
                assert decode(transaction.hex())["Amount"]["issuer"] == encode_account(tx.account)
            meta = parse_metadata(metadata)
            nfts_from_transaction(tx, meta, sequence)  # the NFT rules accept every NFT tx
            if position % 7 == 0:
                sampled += 1
                decoded_tx = decode(transaction.hex())
                decoded_meta = decode(metadata.hex())
                assert decoded_tx["TransactionType"] == tx.type_name
                assert decoded_tx["Account"] == encode_account(tx.account)
                assert decoded_meta["TransactionIndex"] == meta.transaction_index
                assert len(decoded_meta["AffectedNodes"]) == len(meta.nodes)
    assert sampled > 50
    for kind in (
        "Payment",
        "OfferCreate",
        "OfferCreate replacing an offer",
        "Payment of an issued currency",
        "OfferCancel",
        "TrustSet",
        "NFTokenMint",
        "NFTokenCreateOffer",
        "NFTokenAcceptOffer",
        "NFTokenBurn",
        "AccountDelete",
    ):
        assert kinds[kind] > 0, kind


def test_the_same_seed_gives_the_same_ledgers(initial: SourceLedger) -> None:
    first = list(WorkloadGenerator(initial, seed=11, txs_per_ledger=10).ledgers(3))
    second = list(WorkloadGenerator(initial, seed=11, txs_per_ledger=10).ledgers(3))
    other = list(WorkloadGenerator(initial, seed=12, txs_per_ledger=10).ledgers(3))
    assert first == second
    assert first != other


def test_amount_encodings_agree_with_xrpl_py() -> None:
    usd = b"\x00" * 12 + b"USD" + b"\x00" * 5
    issuer = bytes(range(20))

    encoded = issued(Decimal("12.5"), usd, issuer)
    fields = decode("61" + encoded.hex())  # Amount field header + value
    assert fields["Amount"]["value"] == "12.5"
    assert fields["Amount"]["currency"] == "USD"
    assert issued_value(encoded) == Decimal("12.5")
    assert issued_value(issued(Decimal("-0.001"), usd, issuer)) == Decimal("-0.001")
    assert issued_value(issued(Decimal(0), usd, issuer)) == 0
    assert decode("61" + xrp(1_000_000).hex())["Amount"] == "1000000"
    assert quality(Decimal(2), Decimal(1)) > quality(Decimal(1), Decimal(1))
    with pytest.raises(LedgerInputError, match="negative XRP"):
        xrp(-1)


def test_a_missing_vectors_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerInputError, match="does not exist"):
        vectors_ledger(tmp_path / "nope.json", 38129)
