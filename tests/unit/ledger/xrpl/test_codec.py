"""The XRPL binary codec against the real vectors (and xrpl-py as an oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xrpl
from xrpl.core import addresscodec, binarycodec

from chainloom.ledger.types import LedgerHeader
from chainloom.ledger.xrpl import binary, hashing
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import decode_account, encode_account
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.parse import (
    NodeKind,
    book_base,
    is_book_directory,
    native_drops,
    parse_metadata,
    parse_transaction,
    transaction_type,
)


def _of_kind(vectors: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [v for v in vectors if v["kind"] == kind]


def test_field_codes_match_xrpl_definitions() -> None:
    path = Path(xrpl.__file__).parent / "core/binarycodec/definitions/definitions.json"
    definitions = json.loads(path.read_text())
    types = definitions["TYPES"]
    by_name = dict(definitions["FIELDS"])
    for field_key, name in sf.FIELD_NAMES.items():
        if name not in by_name:
            continue  # newer than the installed xrpl-py
        info = by_name[name]
        assert sf.key(types[info["type"]], info["nth"]) == field_key, name
    for table, ours in (
        ("TRANSACTION_TYPES", sf.TRANSACTION_TYPE_NAMES),
        ("LEDGER_ENTRY_TYPES", sf.LEDGER_ENTRY_NAMES),
        ("TRANSACTION_RESULTS", sf.RESULT_NAMES),
    ):
        mine = {name: code for code, name in ours.items()}
        theirs = {name: code for name, code in definitions[table].items() if name in mine}
        assert len(theirs) >= 30
        assert {name: mine[name] for name in theirs} == theirs


def test_every_header_vector_parses_to_its_fields_and_hash(xrpl_vectors: Any) -> None:
    headers = _of_kind(xrpl_vectors, "ledger_header")
    assert headers
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
        want_hash = expected.get("hash") or expected["hash_appended"]
        assert header.compute_hash().hex().upper() == want_hash
        assert header.hash.hex().upper() == want_hash
        assert header.serialize() == blob[:118]


def test_transactions_parse_to_expected_fields(xrpl_vectors: Any) -> None:
    transactions = _of_kind(xrpl_vectors, "transaction")
    assert len(transactions) >= 10
    for vector in transactions:
        expected = vector["expected"]
        parsed = parse_transaction(bytes.fromhex(vector["hex"]))
        assert transaction_type(bytes.fromhex(vector["hex"])) == parsed.transaction_type
        assert parsed.hash.hex().upper() == expected["hash"]
        assert parsed.type_name == expected["TransactionType"]
        assert encode_account(parsed.account) == expected["Account"]
        assert parsed.sequence == expected["Sequence"]
        fee = parsed.fields[sf.FEE]
        assert isinstance(fee, bytes)
        assert native_drops(fee) == int(expected["Fee"])


def test_metadata_parses_to_index_result_nodes_and_accounts(xrpl_vectors: Any) -> None:
    metas = _of_kind(xrpl_vectors, "metadata")
    assert len(metas) >= 8
    for vector in metas:
        expected = vector["expected"]
        meta = parse_metadata(bytes.fromhex(vector["hex"]))
        assert meta.transaction_index == expected["TransactionIndex"]
        assert meta.result_name == expected["TransactionResult"]
        got_nodes = [
            (n.kind.value, sf.ledger_entry_name(n.ledger_entry_type), n.ledger_index.hex().upper())
            for n in meta.nodes
        ]
        want_nodes = [
            (n["node"], n["LedgerEntryType"], n["LedgerIndex"]) for n in expected["affected_nodes"]
        ]
        assert got_nodes == want_nodes
        accounts = sorted(encode_account(a) for a in meta.affected_accounts)
        assert accounts == sorted(expected["affected_accounts"])
        for row in expected.get("account_tx_rows", []):
            assert decode_account(row["account"]) in meta.affected_accounts
            assert row["seq_idx"][1] == meta.transaction_index


def test_metadata_node_fields_agree_with_xrpl_py(xrpl_vectors: Any) -> None:
    for vector in _of_kind(xrpl_vectors, "metadata"):
        decoded = binarycodec.decode(vector["hex"])
        meta = parse_metadata(bytes.fromhex(vector["hex"]))
        for node, oracle in zip(meta.nodes, decoded["AffectedNodes"], strict=True):
            body = oracle[node.kind.value]
            inner = body.get("NewFields" if node.kind is NodeKind.CREATED else "FinalFields", {})
            got = node.fields_after
            for name, value in inner.items():
                if name == "Account":
                    account = got[sf.ACCOUNT]
                    assert isinstance(account, bytes)
                    assert encode_account(account) == value
                if name == "Balance" and isinstance(value, str):
                    balance = got[sf.BALANCE]
                    assert isinstance(balance, bytes)
                    assert native_drops(balance) == int(value)


def test_every_blob_round_trips_byte_exact(xrpl_vectors: Any) -> None:
    for vector in xrpl_vectors:
        if vector["kind"] == "ledger_header":
            continue
        blob = bytes.fromhex(vector["hex"])
        assert binary.encode(binary.decode(blob)) == blob, vector["source"]


def test_state_and_transaction_roots_of_ledger_38129(xrpl_vectors: Any) -> None:
    objects = [
        (bytes.fromhex(v["expected"]["key"]), bytes.fromhex(v["hex"]))
        for v in _of_kind(xrpl_vectors, "ledger_object")
        if v["expected"].get("state_at_ledger") == 38129
    ]
    assert len(objects) == 261
    header = next(
        LedgerHeader.parse(bytes.fromhex(v["hex"]))
        for v in _of_kind(xrpl_vectors, "ledger_header")
        if v["expected"]["ledger_index"] == 38129
    )
    assert hashing.state_root(objects) == header.account_hash
    tx = next(
        v for v in _of_kind(xrpl_vectors, "transaction") if v["expected"]["ledger_index"] == 38129
    )
    meta = next(
        v for v in _of_kind(xrpl_vectors, "metadata") if v["expected"]["ledger_index"] == 38129
    )
    pair = (bytes.fromhex(tx["hex"]), bytes.fromhex(meta["hex"]))
    assert hashing.transaction_root([pair]) == header.transaction_hash
    assert hashing.transaction_root([]) == b"\x00" * 32


def test_book_directories_and_bases(xrpl_vectors: Any) -> None:
    seen = 0
    for vector in _of_kind(xrpl_vectors, "ledger_object"):
        expected = vector["expected"]
        if "is_book_dir" not in expected:
            continue
        seen += 1
        blob = bytes.fromhex(vector["hex"])
        assert is_book_directory(blob) == expected["is_book_dir"], expected["key"]
        if expected["is_book_dir"]:
            assert book_base(bytes.fromhex(expected["key"])).hex().upper() == expected["book_base"]
    assert seen >= 65


def test_addresses_round_trip_and_match_xrpl_py() -> None:
    account = bytes(range(20))
    address = encode_account(account)
    assert address == addresscodec.encode_classic_address(account)
    assert decode_account(address) == account
    with pytest.raises(XrplBinaryError, match="not a valid"):
        decode_account(address[:-1] + ("r" if address[-1] != "r" else "p"))
    with pytest.raises(XrplBinaryError, match="bad character"):
        decode_account("r0OIl")


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (bytes.fromhex("1200"), "past the end"),
        (bytes.fromhex("01"), "truncated"),
        (bytes.fromhex("E1"), "unexpected end-of-object"),
        (bytes.fromhex("E3"), "not terminated"),
        (bytes.fromhex("7305AABB"), "past the end"),
        (bytes.fromhex("F8E31200"), "past the end"),
        (bytes.fromhex("F8"), "array is not terminated"),
        (bytes.fromhex("F81200"), "expected an object"),
    ],
)
def test_malformed_blobs_are_refused_with_offsets(blob: bytes, message: str) -> None:
    with pytest.raises(XrplBinaryError, match=message):
        binary.decode(blob)


def test_a_transaction_must_start_with_its_type() -> None:
    with pytest.raises(XrplBinaryError, match="does not start with its TransactionType"):
        transaction_type(bytes.fromhex("2400000001"))


def test_vl_prefix_round_trips_at_the_boundaries() -> None:
    for length in (0, 192, 193, 12480, 12481, 918744):
        prefix = binary.vl_prefix(length)
        value = bytes(length)
        obj = binary.decode(binary.field_header(sf.URI) + prefix + value)
        assert obj[sf.URI] == value
    with pytest.raises(XrplBinaryError, match="too long"):
        binary.vl_prefix(918745)
