"""A small, fast reader and writer of the XRPL canonical binary format (STObject).

Why not xrpl-py: its ``decode`` builds the full JSON form of every value and manages about 75
metadata blobs a second; the ETL needs a handful of fields out of every transaction, every
metadata blob and some ledger objects, thousands per second. This module walks the bytes once and
keeps values *raw*: a decoded object is a ``dict`` from field key (``type << 16 | field``, see
:mod:`.fields`) to

* ``bytes`` for every leaf (without its length prefix),
* a nested ``dict`` for an STObject field,
* a ``list`` of ``(field key, dict)`` for an STArray field (its wrapped objects, in order).

Callers convert only the values they use. The writer does the reverse and always emits fields in
canonical (sorted) order, so ``encode(decode(blob)) == blob`` for every canonical blob.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union

from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.errors import XrplBinaryError

Value = Union[bytes, "STObject", "STArray"]
STObject = dict[int, Value]
STArray = list[tuple[int, STObject]]

_NO_ACCOUNT = b"\x00" * 19 + b"\x01"
_ZERO20 = b"\x00" * 20
_FIXED = sf.FIXED_WIDTH
_VL = sf.VL_TYPES


def decode(blob: bytes) -> STObject:
    """Decode a whole blob (a transaction, a metadata blob or a ledger object)."""
    obj, _ = _read_object(blob, 0, len(blob), inner=False)
    return obj


def _read_vl_length(buf: bytes, pos: int) -> tuple[int, int]:
    b1 = buf[pos]
    if b1 <= 192:
        return b1, pos + 1
    if b1 <= 240:
        return 193 + (b1 - 193) * 256 + buf[pos + 1], pos + 2
    if b1 <= 254:
        return 12481 + (b1 - 241) * 65536 + buf[pos + 1] * 256 + buf[pos + 2], pos + 3
    raise XrplBinaryError("invalid variable-length prefix 0xFF", offset=pos)


def _read_object(  # noqa: PLR0912 (one flat loop: this is the hot path)
    buf: bytes, pos: int, end: int, *, inner: bool
) -> tuple[STObject, int]:
    obj: STObject = {}
    try:
        while pos < end:
            start = pos
            b = buf[pos]
            pos += 1
            type_code = b >> 4
            field_code = b & 0x0F
            if type_code == 0:
                type_code = buf[pos]
                pos += 1
            if field_code == 0:
                field_code = buf[pos]
                pos += 1
            field_key = type_code << 16 | field_code
            if type_code == 14:  # STObject
                if field_code == 1:
                    if inner:
                        return obj, pos
                    raise XrplBinaryError("unexpected end-of-object marker", offset=start)
                obj[field_key], pos = _read_object(buf, pos, end, inner=True)
            elif type_code == 15:  # STArray
                if field_code == 1:
                    raise XrplBinaryError("unexpected end-of-array marker", offset=start)
                obj[field_key], pos = _read_array(buf, pos, end)
            else:
                width = _FIXED.get(type_code)
                if width is not None:
                    value_end = pos + width
                elif type_code in _VL:
                    length, pos = _read_vl_length(buf, pos)
                    value_end = pos + length
                elif type_code == 6:  # Amount
                    first = buf[pos]
                    value_end = pos + (48 if first & 0x80 else 33 if first & 0x20 else 8)
                else:
                    value_end = _skip_special(buf, pos, type_code, start)
                if value_end > end:
                    raise XrplBinaryError(
                        f"blob is truncated: field {type_code}/{field_code} runs past the end",
                        offset=start,
                    )
                obj[field_key] = buf[pos:value_end]
                pos = value_end
    except IndexError:
        raise XrplBinaryError("blob is truncated", offset=pos) from None
    if inner:
        raise XrplBinaryError("object is not terminated", offset=pos)
    return obj, pos


def _read_array(buf: bytes, pos: int, end: int) -> tuple[STArray, int]:
    items: STArray = []
    while pos < end:
        start = pos
        b = buf[pos]
        pos += 1
        type_code = b >> 4
        field_code = b & 0x0F
        if type_code == 0:
            type_code = buf[pos]
            pos += 1
        if field_code == 0:
            field_code = buf[pos]
            pos += 1
        if type_code == 15 and field_code == 1:
            return items, pos
        if type_code != 14:
            raise XrplBinaryError(
                f"array element of type {type_code} (expected an object)", offset=start
            )
        element, pos = _read_object(buf, pos, end, inner=True)
        items.append((type_code << 16 | field_code, element))
    raise XrplBinaryError("array is not terminated", offset=pos)


def _skip_special(buf: bytes, pos: int, type_code: int, start: int) -> int:
    """End offset of a value of one of the irregular types."""
    if type_code == sf.PATHSET:
        while True:
            kind = buf[pos]
            pos += 1
            if kind == 0x00:
                return pos
            if kind == 0xFF:
                continue
            pos += 20 * ((kind & 0x01) + ((kind & 0x10) >> 4) + ((kind & 0x20) >> 5))
    if type_code == sf.ISSUE:
        return _issue_end(buf, pos)
    if type_code == sf.XCHAIN_BRIDGE:
        for _ in range(2):
            length, pos = _read_vl_length(buf, pos)
            pos = _issue_end(buf, pos + length)
        return pos
    raise XrplBinaryError(f"unknown type code {type_code}", offset=start)


def _issue_end(buf: bytes, pos: int) -> int:
    if buf[pos : pos + 20] == _ZERO20:
        return pos + 20
    if buf[pos + 20 : pos + 40] == _NO_ACCOUNT:
        return pos + 44
    return pos + 40


# --- writer ------------------------------------------------------------------------------------


def field_header(field_key: int) -> bytes:
    """The 1-3 byte header of a field."""
    type_code, field_code = field_key >> 16, field_key & 0xFFFF
    if type_code < 16:
        if field_code < 16:
            return bytes((type_code << 4 | field_code,))
        return bytes((type_code << 4, field_code))
    if field_code < 16:
        return bytes((field_code, type_code))
    return bytes((0, type_code, field_code))


def vl_prefix(length: int) -> bytes:
    """The variable-length prefix of a value of ``length`` bytes."""
    if length <= 192:
        return bytes((length,))
    if length <= 12480:
        length -= 193
        return bytes((193 + (length >> 8), length & 0xFF))
    if length <= 918744:
        length -= 12481
        return bytes((241 + (length >> 16), (length >> 8) & 0xFF, length & 0xFF))
    raise XrplBinaryError(f"value of {length} bytes is too long for a length prefix")


def encode(obj: Mapping[int, Value]) -> bytes:
    """Encode an object (top level: no end marker) in canonical field order."""
    out = bytearray()
    _write_object(out, obj)
    return bytes(out)


_OBJECT_END = field_header(sf.OBJECT_END)
_ARRAY_END = field_header(sf.ARRAY_END)


def _write_object(out: bytearray, obj: Mapping[int, Value]) -> None:
    for field_key in sorted(obj):
        value = obj[field_key]
        out += field_header(field_key)
        type_code = field_key >> 16
        if type_code == 14:
            assert isinstance(value, dict)
            _write_object(out, value)
            out += _OBJECT_END
        elif type_code == 15:
            assert isinstance(value, list)
            for element_key, element in value:
                out += field_header(element_key)
                _write_object(out, element)
                out += _OBJECT_END
            out += _ARRAY_END
        else:
            assert isinstance(value, bytes)
            if type_code in _VL:
                out += vl_prefix(len(value))
            out += value
