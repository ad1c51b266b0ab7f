"""The codec names and decodes every type rippled's definitions know, against xrpl-py's decoder.

Three sources: the real vectors (261 of them are the accountState of xrpl.js's / xrpl-py's
codec-fixtures.json), xrpl.js's full ``codec-fixtures.json`` when ``CHAINLOOM_CODEC_FIXTURES``
points at a copy (skipped otherwise: the wheel does not ship it), and objects built with
xrpl-py's encoder for every transaction type, every ledger entry type and every serialized
field of the definitions.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import xrpl
from xrpl.core import binarycodec

from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.definitions import definitions, parse_definitions
from chainloom.ledger.xrpl.errors import XrplDefinitionsError
from chainloom.ledger.xrpl.jsonform import (
    amount_to_json,
    currency_text,
    issued_value_text,
    number_text,
    to_json,
)

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
ISSUER = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"
HASH = "A" * 64


BASE_TEN = ("MaximumAmount", "OutstandingAmount", "MPTAmount")


def normalize_decoded(value: Any, *, ours: bool = False) -> Any:
    """Issued values compared as numbers (xrpl-py prints some in Decimal's own notation), and
    rippled's base-10 UInt64 fields as numbers (xrpl-py's ``decode`` prints them in hex)."""
    if isinstance(value, dict):
        out = {key: normalize_decoded(item, ours=ours) for key, item in value.items()}
        for name in BASE_TEN:
            if name in out:
                out[name] = int(out[name], 10 if ours else 16)
        if "value" in out and "currency" in out and isinstance(out["value"], str):
            out["value"] = Decimal(out["value"].replace("e", "E"))
        return out
    if isinstance(value, list):
        return [normalize_decoded(item, ours=ours) for item in value]
    return value


def _assert_same_as_xrpl_py(blob_hex: str) -> dict[str, Any]:
    ours = to_json(bytes.fromhex(blob_hex))
    assert normalize_decoded(ours, ours=True) == normalize_decoded(binarycodec.decode(blob_hex))
    assert "Unknown(" not in json.dumps(ours)
    assert binary.encode(binary.decode(bytes.fromhex(blob_hex))).hex().upper() == blob_hex.upper()
    return ours


def test_every_vector_decodes_like_xrpl_py(xrpl_vectors: Any) -> None:
    blobs = [v for v in xrpl_vectors if v["kind"] in ("transaction", "metadata", "ledger_object")]
    assert len(blobs) > 270
    for vector in blobs:
        decoded = _assert_same_as_xrpl_py(vector["hex"])
        if vector["kind"] == "ledger_object":
            assert decoded["LedgerEntryType"] in definitions().ledger_entry_types.values()
        if vector["kind"] == "transaction":
            assert decoded["TransactionType"] == vector["expected"]["TransactionType"]


def test_xrpl_js_codec_fixtures_decode_with_their_names() -> None:
    path = os.environ.get("CHAINLOOM_CODEC_FIXTURES")
    if not path:
        pytest.skip(
            "xrpl.js codec-fixtures.json is not shipped by the xrpl-py wheel nor in the shared "
            "vectors; set CHAINLOOM_CODEC_FIXTURES to a copy of packages/ripple-binary-codec/"
            "test/fixtures/codec-fixtures.json to run it"
        )
    fixtures = json.loads(Path(path).read_text())
    newer = 0
    for kind, name in (("accountState", "LedgerEntryType"), ("transactions", "TransactionType")):
        for fixture in fixtures[kind]:
            try:
                binarycodec.decode(fixture["binary"])
            except (KeyError, ValueError):
                # Newer than the installed xrpl-py (ConfidentialMPT*, ...): named by ours alone.
                newer += 1
                decoded = to_json(bytes.fromhex(fixture["binary"]))
                assert "Unknown(" not in json.dumps(decoded)
                blob = bytes.fromhex(fixture["binary"])
                assert binary.encode(binary.decode(blob)) == blob
            else:
                decoded = _assert_same_as_xrpl_py(fixture["binary"])
            assert decoded[name] == fixture["json"][name]
    names = {f["json"]["TransactionType"] for f in fixtures["transactions"]}
    if any(n.startswith("ConfidentialMPT") for n in names):
        assert newer > 0


def test_every_transaction_type_is_named() -> None:
    names = definitions().transaction_types
    assert len(names) > 60
    for code, name in names.items():
        if name not in _XRPL_PY["TRANSACTION_TYPES"]:
            continue  # newer than the installed xrpl-py: see the ConfidentialMPT test
        blob = binarycodec.encode(
            {"TransactionType": name, "Account": ACCOUNT, "Fee": "10", "Sequence": 1}
        )
        decoded = _assert_same_as_xrpl_py(blob)
        assert decoded["TransactionType"] == name
        assert sf.transaction_type_name(code) == name


_XRPL_PY: dict[str, Any] = json.loads(  # the installed xrpl-py's copy
    (Path(xrpl.__file__).parent / "core/binarycodec/definitions/definitions.json").read_text()
)
_XRPL_PY_FIELDS = {name for name, _ in _XRPL_PY["FIELDS"]}


def test_the_newest_amendments_are_named() -> None:
    """The kept definitions are newer than the installed xrpl-py's: ConfidentialMPT* and
    Sponsorship transactions decode by name (encoded here with our own writer)."""
    names = set(definitions().transaction_types.values())
    newer = {"ConfidentialMPTSend", "ConfidentialMPTConvert", "ConfidentialMPTConvertBack",
             "ConfidentialMPTMergeInbox", "ConfidentialMPTClawback", "SponsorshipSet"}  # fmt: skip
    assert newer <= names
    for name in sorted(newer):
        code = definitions().code_of(definitions().transaction_types, name)
        blob = binary.encode({sf.TRANSACTION_TYPE: code.to_bytes(2, "big")})
        assert to_json(blob)["TransactionType"] == name
    assert {name for name, code in _XRPL_PY["TRANSACTION_TYPES"].items() if code >= 0} <= names


def test_every_ledger_entry_type_is_named() -> None:
    names = definitions().ledger_entry_types
    assert {"MPToken", "MPTokenIssuance", "Vault", "Oracle", "DID", "Delegate"} <= set(
        names.values()
    )
    for code, name in names.items():
        if name not in _XRPL_PY["LEDGER_ENTRY_TYPES"]:
            continue
        decoded = _assert_same_as_xrpl_py(binarycodec.encode({"LedgerEntryType": name, "Flags": 0}))
        assert decoded["LedgerEntryType"] == name
        assert sf.ledger_entry_name(code) == name


def _sample(name: str, type_name: str) -> Any:
    if name == "TransactionType":
        return "Payment"
    if name == "LedgerEntryType":
        return "Offer"
    if name == "TransactionResult":
        return "tecPATH_DRY"
    if name == "PermissionValue":
        return "TrustlineAuthorize"
    widths = {"Hash128": 16, "Hash160": 20, "Hash192": 24, "Hash256": 32, "UInt96": 12}
    widths |= {"UInt384": 48, "UInt512": 64}
    if type_name in widths:
        return "AB" * widths[type_name]
    samples: dict[str, Any] = {
        "UInt8": 7,
        "UInt16": 300,
        "UInt32": 70000,
        "UInt64": "1234"
        if name not in ("MaximumAmount", "OutstandingAmount", "MPTAmount")
        else "99",
        "Int32": -5,
        "Amount": {"currency": "USD", "issuer": ISSUER, "value": "-1.25"},
        "Blob": "DEADBEEF",
        "AccountID": ACCOUNT,
        "Number": "1.5",
        "Vector256": [HASH, "B" * 64],
        "Currency": "EUR",
        "Issue": {"currency": "USD", "issuer": ISSUER},
        "PathSet": [
            [{"account": ACCOUNT}, {"currency": "USD", "issuer": ISSUER}],
            [{"currency": "XRP"}],
        ],
        "XChainBridge": {
            "LockingChainDoor": ACCOUNT,
            "LockingChainIssue": {"currency": "XRP"},
            "IssuingChainDoor": ISSUER,
            "IssuingChainIssue": {"currency": "XRP"},
        },
        "STObject": {"Flags": 1},
        "STArray": [{"Memo": {"MemoData": "AB"}}],
    }
    return samples.get(type_name)


def test_every_serialized_field_decodes_like_xrpl_py() -> None:
    checked = 0
    for field in definitions().fields_by_key.values():
        if field.name in ("ObjectEndMarker", "ArrayEndMarker") or field.name not in _XRPL_PY_FIELDS:
            continue
        value = _sample(field.name, field.type_name)
        assert value is not None, f"no sample for {field.name} ({field.type_name})"
        blob = binarycodec.encode({field.name: value})
        _assert_same_as_xrpl_py(blob)
        checked += 1
    assert checked > 290


@pytest.mark.parametrize(
    ("value_hex", "text"),
    [
        ("D4838D7EA4C68000", "1"),  # 1e15 * 10^-15
        ("D5438D7EA4C68000", "1000"),
        ("D7038D7EA4C68000", "10000000000"),  # exponent -5: still plain
        ("D7438D7EA4C68000", "1000000000000000e-4"),  # above -5: scientific
        ("94838D7EA4C68000", "-1"),
        ("D4438D7EA4C68000", "0.1"),
        ("8000000000000000", "0"),
        ("D1C38D7EA4C68000", "1000000000000000e-26"),  # below -25: scientific
    ],
)
def test_issued_values_read_like_rippled(value_hex: str, text: str) -> None:
    assert issued_value_text(bytes.fromhex(value_hex)) == text


def test_amounts_and_currencies() -> None:
    assert amount_to_json(bytes.fromhex("400000000000000A")) == "10"
    assert amount_to_json(bytes.fromhex("000000000000000A")) == "-10"
    assert currency_text(bytes(20)) == "XRP"
    assert currency_text(bytes(12) + b"USD" + bytes(5)) == "USD"
    assert (
        currency_text(b"\x01" + bytes(11) + b"USD" + bytes(5))
        == "01" + "00" * 11 + "555344" + "00" * 5
    )
    assert number_text(0, -2147483648) == "0"
    assert number_text(15 * 10**17, -18) == "1.5"


def test_definitions_in_the_wrong_shape_are_refused() -> None:
    with pytest.raises(XrplDefinitionsError, match="shape"):
        parse_definitions({"TYPES": {}})
    with pytest.raises(XrplDefinitionsError, match="no field"):
        definitions().field("NoSuchField")
