"""Ledger value types: the fixed header layout against real headers, NFT ID fields."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from chainloom.ledger.errors import LedgerHeaderError
from chainloom.ledger.types import (
    FIRST_KEY,
    LAST_KEY,
    LedgerHeader,
    LedgerObject,
    NFTsData,
    TransactionsCursor,
    nft_issuer,
    nft_taxon,
)


def _headers(xrpl_vectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in xrpl_vectors if v["kind"] == "ledger_header"]


def test_every_vector_header_parses_to_its_expected_fields(xrpl_vectors):
    headers = _headers(xrpl_vectors)
    assert len(headers) >= 4
    for vector in headers:
        blob = bytes.fromhex(vector["hex"])
        expected = vector["expected"]
        header = LedgerHeader.parse(blob)
        assert header.sequence == expected["ledger_index"]
        assert header.total_drops == int(expected["total_coins"])
        assert header.parent_hash.hex().upper() == expected["parent_hash"]
        assert header.transaction_hash.hex().upper() == expected["transaction_hash"]
        assert header.account_hash.hex().upper() == expected["account_hash"]
        assert header.parent_close_time == expected["parent_close_time"]
        assert header.close_time == expected["close_time"]
        assert header.close_time_resolution == expected["close_time_resolution"]
        assert header.close_flags == expected["close_flags"]
        assert header.hash.hex().upper() == expected["hash"]
        assert header.compute_hash() == header.hash
        assert header.serialize() == blob[:118]
        assert header.serialize(include_hash=True) == blob[:118] + header.hash


def test_a_stored_header_whose_hash_does_not_match_is_refused(xrpl_vectors):
    stored = next(v for v in _headers(xrpl_vectors) if len(v["hex"]) == 300)
    blob = bytearray.fromhex(stored["hex"])
    blob[-1] ^= 1
    with pytest.raises(LedgerHeaderError, match=f"ledger {stored['expected']['ledger_index']}"):
        LedgerHeader.parse(bytes(blob))
    # Without verification the stored hash is kept as given.
    assert LedgerHeader.parse(bytes(blob), verify=False).hash == bytes(blob[118:])


def test_a_changed_field_changes_the_hash(xrpl_vectors):
    header = LedgerHeader.parse(bytes.fromhex(_headers(xrpl_vectors)[0]["hex"]))
    changed = dataclasses.replace(header, close_flags=1)
    assert changed.compute_hash() != header.hash


@pytest.mark.parametrize("size", [0, 117, 119, 149, 151])
def test_header_of_wrong_size_is_refused(size):
    with pytest.raises(LedgerHeaderError, match=f"got {size}"):
        LedgerHeader.parse(bytes(size))


def test_values_are_frozen():
    obj = LedgerObject(FIRST_KEY, b"x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.blob = b"y"  # type: ignore[misc]
    assert LAST_KEY == b"\xff" * 32


def test_cursors_order_like_seq_idx_tuples():
    assert TransactionsCursor(5, 2) < TransactionsCursor(6, 0) < TransactionsCursor(6, 1)


def test_nft_issuer_and_taxon_match_the_vectors(xrpl_vectors):
    from xrpl.core.addresscodec import decode_classic_address

    checked = 0
    for vector in xrpl_vectors:
        fields = vector["expected"].get("clio_nft", {}).get("token_id_fields")
        if not fields:
            continue
        token_id = bytes.fromhex(vector["expected"]["clio_nft"]["nf_tokens"]["token_id"])
        assert nft_taxon(token_id) == fields["taxon"]
        assert nft_issuer(token_id) == decode_classic_address(fields["issuer"])
        data = NFTsData(token_id, 1, nft_issuer(token_id), False, b"")
        assert (data.issuer, data.taxon) == (nft_issuer(token_id), fields["taxon"])
        checked += 1
    assert checked >= 1
