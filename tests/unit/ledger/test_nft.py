"""NFT rows derived from the vectors' NFToken transactions and NFTokenPage objects."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom.ledger.errors import LedgerIntegrityError
from chainloom.ledger.nft import ledger_nft_rows, nfts_from_object, nfts_from_transaction
from chainloom.ledger.types import NFTsData
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.parse import (
    ParsedMetadata,
    ParsedTransaction,
    parse_metadata,
    parse_transaction,
)

SEQ = 77


def _pairs(vectors: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    txs = {v["expected"]["hash"]: v for v in vectors if v["kind"] == "transaction"}
    return [
        (txs[m["expected"]["tx_hash"]], m)
        for m in vectors
        if m["kind"] == "metadata" and m["expected"]["tx_hash"] in txs
    ]


def test_transaction_vectors_yield_clio_rows(xrpl_vectors: Any) -> None:
    checked = 0
    for tx_vector, meta_vector in _pairs(xrpl_vectors):
        tx = parse_transaction(bytes.fromhex(tx_vector["hex"]))
        meta = parse_metadata(bytes.fromhex(meta_vector["hex"]))
        result = nfts_from_transaction(tx, meta, SEQ)
        expected = meta_vector["expected"].get("clio_nft")
        if expected is None:
            assert result is None, tx.type_name
            continue
        checked += 1
        assert result is not None
        assert [
            (r.token_id.hex().upper(), r.transaction_index, r.tx_hash.hex().upper())
            for r in result.transactions
        ] == [
            (r["token_id"], r["seq_idx"][1], r["hash"]) for r in expected["nf_token_transactions"]
        ]
        assert all(r.ledger_sequence == SEQ for r in result.transactions)
        want_state = expected.get("nf_tokens")
        if want_state is None:
            assert result.state is None
            continue
        state = result.state
        assert state is not None
        assert state.token_id.hex().upper() == want_state["token_id"]
        assert encode_account(state.owner) == want_state["owner"]
        assert state.is_burned == want_state["is_burned"]
        if "uri" in want_state:
            assert state.uri is not None
            assert state.uri.hex().upper() == want_state["uri"]
        fields = expected["token_id_fields"]
        assert encode_account(state.issuer) == fields["issuer"]
        assert state.taxon == fields["taxon"]
        if "issuer_nf_tokens_v2" in expected:
            assert state.taxon == expected["issuer_nf_tokens_v2"]["taxon"]
    assert checked >= 3


def test_nftoken_page_objects_yield_initial_rows(xrpl_vectors: Any) -> None:
    pages = [
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_object" and "clio_getNFTDataFromObj" in v["expected"]
    ]
    assert len(pages) == 2
    for vector in pages:
        key = bytes.fromhex(vector["expected"]["key"])
        rows = nfts_from_object(key, bytes.fromhex(vector["hex"]), SEQ)
        want = vector["expected"]["clio_getNFTDataFromObj"]
        assert [
            (
                r.token_id.hex().upper(),
                encode_account(r.owner),
                r.uri.hex().upper() if r.uri else None,
            )
            for r in rows
        ] == [(w["token_id"], w["owner"], w["uri"]) for w in want]
        assert all(not r.is_burned and r.ledger_sequence == SEQ for r in rows)


def test_other_objects_yield_no_nfts(xrpl_vectors: Any) -> None:
    account_root = next(
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_object" and v["expected"]["LedgerEntryType"] == "AccountRoot"
    )
    assert nfts_from_object(bytes(32), bytes.fromhex(account_root["hex"]), SEQ) == []


def test_last_state_per_token_wins_within_a_ledger(xrpl_vectors: Any) -> None:
    mint = burn = None
    for tx_vector, meta_vector in _pairs(xrpl_vectors):
        tx = parse_transaction(bytes.fromhex(tx_vector["hex"]))
        meta = parse_metadata(bytes.fromhex(meta_vector["hex"]))
        if tx.type_name == "NFTokenMint" and meta.transaction_index == 4:
            mint = nfts_from_transaction(tx, meta, SEQ)
        if tx.type_name == "NFTokenBurn":
            burn = nfts_from_transaction(tx, meta, SEQ)
    assert mint is not None
    assert burn is not None
    # The burn has index 0, the mint index 4: the mint is the ledger's last state change.
    states, history = ledger_nft_rows([burn, mint])
    assert len(history) == 2
    assert len(states) == 1
    assert not states[0].is_burned
    states, _ = ledger_nft_rows([mint, burn])
    assert len(states) == 1
    assert not states[0].is_burned


def test_a_mint_without_a_new_token_is_refused(xrpl_vectors: Any) -> None:
    for tx_vector, _ in _pairs(xrpl_vectors):
        tx = parse_transaction(bytes.fromhex(tx_vector["hex"]))
        if tx.type_name != "NFTokenMint":
            continue
        burn_meta = next(
            m
            for t, m in _pairs(xrpl_vectors)
            if parse_transaction(bytes.fromhex(t["hex"])).type_name == "NFTokenBurn"
        )
        with pytest.raises(LedgerIntegrityError, match="ledger 77: unexpected NFTokenMint"):
            nfts_from_transaction(tx, parse_metadata(bytes.fromhex(burn_meta["hex"])), SEQ)
        return
    pytest.fail("no NFTokenMint vector")


def test_issuer_and_taxon_decode() -> None:
    token = bytes.fromhex("000800006203F49C21D5D6E022CB16DE3538F248662FC73CEF7FF5C60000002C")
    data = NFTsData(token, 1, bytes(20), False, None)
    assert encode_account(data.issuer) == "r9AExd6v3keXaXa3nXAMHHcP9nWy9Aef2g"
    assert data.taxon == 1


# Synthetic transactions for the rules no vector covers (built with the codec's encoder).

ALICE, BOB = b"\xaa" * 20, b"\xbb" * 20
TOKEN = bytes.fromhex("00080000") + ALICE + bytes.fromhex("0000000100000005")
OTHER = bytes.fromhex("00080000") + ALICE + bytes.fromhex("0000000200000006")


def _tx(kind: int, **extra: bytes) -> ParsedTransaction:
    fields: dict[int, Any] = {
        sf.TRANSACTION_TYPE: kind.to_bytes(2, "big"),
        sf.ACCOUNT: BOB,
        sf.SEQUENCE: (7).to_bytes(4, "big"),
    }
    names = {"NFTokenID": sf.NFTOKEN_ID, "URI": sf.URI, "NFTokenBuyOffer": sf.NFTOKEN_BUY_OFFER}
    fields.update({names[k]: v for k, v in extra.items()})
    return parse_transaction(binary.encode(fields))


def _meta(*nodes: tuple[int, dict[int, Any]], result: int = 0) -> ParsedMetadata:
    return parse_metadata(
        binary.encode(
            {
                sf.TRANSACTION_INDEX: (3).to_bytes(4, "big"),
                sf.TRANSACTION_RESULT: bytes((result,)),
                sf.AFFECTED_NODES: list(nodes),
            }
        )
    )


def _offer_node(key: bytes, token: bytes, owner: bytes) -> tuple[int, dict[int, Any]]:
    return (
        sf.DELETED_NODE,
        {
            sf.LEDGER_ENTRY_TYPE: sf.NFTOKEN_OFFER.to_bytes(2, "big"),
            sf.LEDGER_INDEX: key,
            sf.FINAL_FIELDS: {sf.NFTOKEN_ID: token, sf.OWNER: owner},
        },
    )


def test_modify_changes_only_the_uri() -> None:
    tx = _tx(sf.NFTOKEN_MODIFY, NFTokenID=TOKEN, URI=b"ipfs://new")
    result = nfts_from_transaction(tx, _meta(), SEQ)
    assert result is not None
    assert [r.token_id for r in result.transactions] == [TOKEN]
    assert result.state is not None
    assert result.state.only_uri_changed
    assert result.state.uri == b"ipfs://new"


def test_accepting_a_buy_offer_gives_the_token_to_the_offer_owner() -> None:
    offer = b"\x0b" * 32
    tx = _tx(sf.NFTOKEN_ACCEPT_OFFER, NFTokenBuyOffer=offer)
    result = nfts_from_transaction(tx, _meta(_offer_node(offer, TOKEN, ALICE)), SEQ)
    assert result is not None
    assert result.state is not None
    assert (result.state.token_id, result.state.owner) == (TOKEN, ALICE)
    with pytest.raises(LedgerIntegrityError, match="buy offer is not among the affected nodes"):
        nfts_from_transaction(tx, _meta(), SEQ)


def test_cancel_offer_lists_each_token_once_and_create_offer_one_row() -> None:
    nodes = (
        _offer_node(b"\x01" * 32, TOKEN, ALICE),
        _offer_node(b"\x02" * 32, TOKEN, BOB),
        _offer_node(b"\x03" * 32, OTHER, BOB),
    )
    result = nfts_from_transaction(_tx(sf.NFTOKEN_CANCEL_OFFER), _meta(*nodes), SEQ)
    assert result is not None
    assert result.state is None
    assert sorted(r.token_id for r in result.transactions) == sorted([TOKEN, OTHER])
    created = nfts_from_transaction(_tx(sf.NFTOKEN_CREATE_OFFER, NFTokenID=TOKEN), _meta(), SEQ)
    assert created is not None
    assert [(r.token_id, r.transaction_index) for r in created.transactions] == [(TOKEN, 3)]


def test_failed_and_unrelated_transactions_touch_no_nft_table() -> None:
    failed = _meta(result=101)
    assert nfts_from_transaction(_tx(sf.NFTOKEN_MODIFY, NFTokenID=TOKEN), failed, SEQ) is None
    assert nfts_from_transaction(_tx(sf.PAYMENT), _meta(), SEQ) is None
    with pytest.raises(LedgerIntegrityError, match="no NFTokenID"):
        nfts_from_transaction(_tx(sf.NFTOKEN_BURN), _meta(), SEQ)
