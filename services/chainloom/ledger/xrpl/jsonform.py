"""The JSON form of XRPL binary objects, as rippled's API prints them.

The API answers ``ledger_entry``, ``ledger_data``, ``tx`` and ``account_tx`` with decoded
objects. :mod:`.binary` has already split a blob into raw field values in one pass; this module
turns those values into rippled's JSON (names from :mod:`.definitions`, r-addresses, amounts as
rippled's ``STAmount::getText`` writes them, hashes in upper-case hex) without a second parse, so
a page of objects costs one walk of its bytes. xrpl-py's ``decode`` is the test oracle.

Shapes per serialized type:

============  ====================================================================
UInt8/16/32   number; ``TransactionType``, ``LedgerEntryType``, ``TransactionResult`` and
              ``PermissionValue`` become their names
UInt64        16 upper-case hex digits (base 10 for rippled's ``sMD_BaseTen`` fields)
Int32/Int64   number
HashN/UIntN   upper-case hex (UInt96, UInt384, UInt512 included)
Amount        drops as a string; ``{currency, issuer, value}``; ``{mpt_issuance_id, value}``
Blob          upper-case hex
AccountID     classic address
Number        rippled's ``Number`` text
STObject      object; STArray a list of one-key objects
PathSet       list of paths, each a list of ``{account, currency, issuer}`` steps
Vector256     list of hex hashes
Issue         ``{currency}`` / ``{currency, issuer}`` / ``{mpt_issuance_id}``
XChainBridge  ``{LockingChainDoor, LockingChainIssue, IssuingChainDoor, IssuingChainIssue}``
Currency      ISO code, ``XRP`` or hex
============  ====================================================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from xrpl.core.binarycodec.definitions import get_permission_value_type_name

from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.definitions import FieldDefinition, definitions
from chainloom.ledger.xrpl.errors import XrplBinaryError

JSON = Any
"""A JSON value (dict, list, str, int)."""

_Renderer = Callable[["FieldDefinition", bytes], JSON]

BASE_TEN_UINT64 = frozenset({"MaximumAmount", "OutstandingAmount", "MPTAmount"})
"""UInt64 fields rippled prints in decimal (``SField::sMD_BaseTen``) rather than hex."""

_ISO_CHARACTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>(){}[]|?!@#$%^&*"
)
_NO_CURRENCY = b"\x00" * 19 + b"\x01"

ADDRESS_CACHE_SIZE = 1 << 16
"""Addresses remembered: the same accounts recur on every page, and base58 is the costliest
step of decoding (about 0.1 ms an address)."""

address = functools.lru_cache(maxsize=ADDRESS_CACHE_SIZE)(encode_account)
""":func:`~chainloom.ledger.xrpl.address.encode_account` with a bounded cache."""
_BLACK_HOLE = b"\x00" * 19 + b"\x01"


def to_json(blob: bytes) -> dict[str, JSON]:
    """The JSON form of a whole blob: a transaction, a metadata blob or a ledger object."""
    return object_to_json(binary.decode(blob))


def object_to_json(obj: binary.STObject) -> dict[str, JSON]:
    """The JSON form of a decoded object (field keys in, field names out, canonical order)."""
    table = _field_table()
    out: dict[str, JSON] = {}
    for field_key, value in obj.items():
        entry = table.get(field_key)
        if entry is None:
            raise XrplBinaryError(
                f"field {field_key >> 16}/{field_key & 0xFFFF} is not in the definitions"
            )
        field, render = entry
        if isinstance(value, bytes):
            out[field.name] = render(field, value)
        elif isinstance(value, dict):
            out[field.name] = object_to_json(value)
        else:
            out[field.name] = [
                {_element_name(table, key): object_to_json(element)} for key, element in value
            ]
    return out


def _element_name(table: dict[int, tuple[FieldDefinition, _Renderer]], key: int) -> str:
    entry = table.get(key)
    if entry is None:
        raise XrplBinaryError(f"array element {key >> 16}/{key & 0xFFFF} is not in the definitions")
    return entry[0].name


def _no_json_form(field: FieldDefinition, value: bytes) -> JSON:
    raise XrplBinaryError(f"field {field.name} has a type ({field.type_name}) with no JSON form")


@functools.cache
def _field_table() -> dict[int, tuple[FieldDefinition, _Renderer]]:
    """Every serialized field with the function that renders its leaf values (built once)."""
    return {
        field_key: (field, _RENDERERS.get(field.type_code, _no_json_form))
        for field_key, field in definitions().fields_by_key.items()
    }


# --- leaves ------------------------------------------------------------------------------------


def _uint(field: FieldDefinition, value: bytes) -> JSON:
    number = int.from_bytes(value, "big")
    if field.name == "TransactionType":
        return sf.transaction_type_name(number)
    if field.name == "LedgerEntryType":
        return sf.ledger_entry_name(number)
    if field.name == "TransactionResult":
        return sf.result_name(number)
    if field.name == "PermissionValue":
        try:
            return str(get_permission_value_type_name(number))
        except KeyError:
            return number
    return number


def _uint64(field: FieldDefinition, value: bytes) -> JSON:
    if field.name in BASE_TEN_UINT64:
        return str(int.from_bytes(value, "big"))
    return value.hex().upper()


def _int(field: FieldDefinition, value: bytes) -> JSON:
    return int.from_bytes(value, "big", signed=True)


def _hex(field: FieldDefinition, value: bytes) -> JSON:
    return value.hex().upper()


def _account(field: FieldDefinition, value: bytes) -> JSON:
    # Pseudo-transactions carry an empty Account: rippled shows the zero account.
    return address(value or bytes(20))


def _vector256(field: FieldDefinition, value: bytes) -> JSON:
    return [value[i : i + 32].hex().upper() for i in range(0, len(value), 32)]


def _amount(field: FieldDefinition, value: bytes) -> JSON:
    return amount_to_json(value)


def _number(field: FieldDefinition, value: bytes) -> JSON:
    return number_text(
        int.from_bytes(value[:8], "big", signed=True),
        int.from_bytes(value[8:12], "big", signed=True),
    )


def _currency(field: FieldDefinition, value: bytes) -> JSON:
    return currency_text(value)


def _issue(field: FieldDefinition, value: bytes) -> JSON:
    return issue_to_json(value)


def _bridge(field: FieldDefinition, value: bytes) -> JSON:
    out: dict[str, JSON] = {}
    position = 0
    for door, issue in (
        ("LockingChainDoor", "LockingChainIssue"),
        ("IssuingChainDoor", "IssuingChainIssue"),
    ):
        length = value[position]
        out[door] = address(value[position + 1 : position + 1 + length])
        position += 1 + length
        size = _issue_size(value, position)
        out[issue] = issue_to_json(value[position : position + size])
        position += size
    return out


def _pathset(field: FieldDefinition, value: bytes) -> JSON:
    paths: list[list[dict[str, str]]] = []
    path: list[dict[str, str]] = []
    position = 0
    while position < len(value):
        kind = value[position]
        position += 1
        if kind in (0x00, 0xFF):
            paths.append(path)
            path = []
            if kind == 0x00:
                break
            continue
        step: dict[str, str] = {}
        if kind & 0x01:
            step["account"] = address(value[position : position + 20])
            position += 20
        if kind & 0x10:
            step["currency"] = currency_text(value[position : position + 20])
            position += 20
        if kind & 0x20:
            step["issuer"] = address(value[position : position + 20])
            position += 20
        path.append(step)
    return paths


_RENDERERS: dict[int, _Renderer] = {
    sf.UINT8: _uint,
    sf.UINT16: _uint,
    sf.UINT32: _uint,
    sf.UINT64: _uint64,
    sf.INT32: _int,
    sf.INT64: _int,
    sf.UINT96: _hex,
    sf.HASH128: _hex,
    sf.HASH160: _hex,
    sf.HASH192: _hex,
    sf.HASH256: _hex,
    sf.UINT384: _hex,
    sf.UINT512: _hex,
    sf.BLOB: _hex,
    sf.ACCOUNT_ID: _account,
    sf.VECTOR256: _vector256,
    sf.AMOUNT: _amount,
    sf.NUMBER: _number,
    sf.CURRENCY: _currency,
    sf.ISSUE: _issue,
    sf.XCHAIN_BRIDGE: _bridge,
    sf.PATHSET: _pathset,
}


# --- amounts, currencies, numbers --------------------------------------------------------------


def amount_to_json(value: bytes) -> JSON:
    """An Amount: XRP drops as a string, an issued amount or an MPT amount as an object."""
    if len(value) == 8:
        raw = int.from_bytes(value, "big")
        drops = raw & 0x3FFFFFFFFFFFFFFF
        return str(drops) if raw & 0x4000000000000000 or drops == 0 else f"-{drops}"
    if len(value) == 33:
        number = int.from_bytes(value[1:9], "big")
        sign = "" if value[0] & 0x40 else "-"
        return {"mpt_issuance_id": value[9:33].hex().upper(), "value": f"{sign}{number}"}
    if len(value) == 48:
        return {
            "currency": currency_text(value[8:28]),
            "issuer": address(value[28:48]),
            "value": issued_value_text(value[:8]),
        }
    raise XrplBinaryError(f"an Amount of {len(value)} bytes")


def issued_value_text(value: bytes) -> str:
    """The 8-byte value of an issued amount as rippled's ``STAmount::getText`` writes it."""
    raw = int.from_bytes(value, "big")
    mantissa = raw & 0x003FFFFFFFFFFFFF
    if mantissa == 0:
        return "0"
    exponent = ((raw >> 54) & 0xFF) - 97
    sign = "" if raw & 0x4000000000000000 else "-"
    return sign + _decimal_text(mantissa, exponent, scientific_below=-25, scientific_above=-5)


def number_text(mantissa: int, exponent: int) -> str:
    """A Number (int64 mantissa, int32 exponent) as rippled's ``to_string(Number)`` writes it,
    with the 19-digit mantissa range of current rippled (a mantissa shrunk to fit an int64 is
    restored first)."""
    if mantissa != 0 and abs(mantissa) < 10**18:
        mantissa *= 10
        exponent -= 1
    if exponent == 0:
        return str(mantissa)
    if mantissa == 0:
        return "0"
    if exponent < -28 or exponent > -8:
        while mantissa != 0 and mantissa % 10 == 0 and exponent < 32768:
            mantissa //= 10
            exponent += 1
        return f"{mantissa}e{exponent}"
    sign = "-" if mantissa < 0 else ""
    return sign + _decimal_text(
        abs(mantissa), exponent, scientific_below=None, scientific_above=None
    )


def _decimal_text(
    mantissa: int, exponent: int, *, scientific_below: int | None, scientific_above: int | None
) -> str:
    """``mantissa * 10**exponent`` in plain decimal (no trailing zeros), or ``MeE`` when the
    exponent is outside rippled's plain range."""
    if (
        exponent != 0
        and scientific_below is not None
        and scientific_above is not None
        and (exponent < scientific_below or exponent > scientific_above)
    ):
        return f"{mantissa}e{exponent}"
    digits = str(mantissa)
    if exponent >= 0:
        return digits + "0" * exponent
    point = len(digits) + exponent
    if point > 0:
        whole, fraction = digits[:point], digits[point:]
    else:
        whole, fraction = "0", "0" * -point + digits
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def currency_text(code: bytes) -> str:
    """A 20-byte currency as rippled prints it: ``XRP``, a three-character code, or hex."""
    if not any(code):
        return "XRP"
    if code == _NO_CURRENCY:
        return "1"
    if not any(code[:12]) and not any(code[15:]):
        iso = code[12:15].decode("latin-1")
        if iso != "XRP" and all(char in _ISO_CHARACTERS for char in iso):
            return iso
    return code.hex().upper()


def issue_to_json(value: bytes) -> dict[str, str]:
    """An Issue: XRP, a currency with its issuer, or an MPT issuance (issuer + sequence)."""
    if len(value) == 20:
        return {"currency": currency_text(value)}
    if len(value) == 44 and value[20:40] == _BLACK_HOLE:
        # The sequence is stored little-endian; the ID puts it first, big-endian.
        return {"mpt_issuance_id": (value[40:44][::-1] + value[:20]).hex().upper()}
    return {"currency": currency_text(value[:20]), "issuer": address(value[20:40])}


def _issue_size(value: bytes, position: int) -> int:
    if not any(value[position : position + 20]):
        return 20
    if value[position + 20 : position + 40] == _BLACK_HOLE:
        return 44
    return 40
