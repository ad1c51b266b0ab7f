"""NFT rows derived from the vectors' NFToken transactions and NFTokenPage objects."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom.ledger.errors import LedgerIntegrityError
from chainloom.ledger.nft import ledger_nft_rows, nfts_from_object, nfts_from_transaction
from chainloom.ledger.types import NFTsData
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.parse import parse_metadata, parse_transaction

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
