"""How each value is stored as bytes, and read back.

Every value except the opaque blobs (the payload and the signed VAA) is UTF-8 text, so a
``cbt read`` is readable and value filters are plain regular expressions. Where order matters
for a value-range filter, the text sorts like the number it encodes: the sequence is padded to
the 20 digits of a uint64 and the timestamp is RFC 3339 in UTC. Each qualifier's codec is named
in :data:`CODECS`, which also produces the table in ``docs/eventstore.md``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chainloom.eventstore import schema
from chainloom.eventstore.schema import Q


def encode_int(value: int) -> bytes:
    return str(value).encode()


def decode_int(raw: bytes) -> int:
    return int(raw.decode())


def encode_sequence(value: int) -> bytes:
    return f"{value:020d}".encode()


def encode_timestamp(value: int) -> bytes:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(value)).encode()


def decode_timestamp(raw: bytes) -> int:
    moment = dt.datetime.strptime(raw.decode(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    return int(moment.timestamp())


def encode_hex(value: bytes) -> bytes:
    return value.hex().encode()


def decode_hex(raw: bytes) -> bytes:
    return bytes.fromhex(raw.decode())


def encode_text(value: str) -> bytes:
    return value.encode()


def decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def encode_decimal(value: Decimal) -> bytes:
    return format(value, "f").encode()


def decode_decimal(raw: bytes) -> Decimal:
    return Decimal(raw.decode())


def encode_signature_list(entries: Iterable[tuple[int, bytes]]) -> bytes:
    """``index:sighex`` entries, comma-separated, in ascending guardian index."""
    return ",".join(f"{index}:{sig.hex()}" for index, sig in sorted(entries)).encode()


def decode_signature_list(raw: bytes) -> list[tuple[int, bytes]]:
    if not raw:
        return []
    entries = []
    for item in raw.decode().split(","):
        index, _, sig = item.partition(":")
        entries.append((int(index), bytes.fromhex(sig)))
    return entries


@dataclass(frozen=True, slots=True)
class Codec:
    """A value encoding: its name, a reader for display, and what the docs say about it."""

    name: str
    """Short name used in the docs table."""
    decode: Callable[[bytes], Any]
    """Bytes to a Python value (used by queries and ``--json``)."""
    doc: str
    """How the bytes look, and how they sort."""


INT = Codec("decimal", decode_int, "ASCII decimal, no padding (e.g. `2`)")
SEQUENCE = Codec(
    "decimal-20", decode_int, "ASCII decimal zero-padded to 20 digits; sorts numerically"
)
TIMESTAMP = Codec(
    "rfc3339",
    decode_text,
    "the VAA's timestamp as `YYYY-MM-DDTHH:MM:SSZ` (UTC); sorts chronologically",
)
HEX32 = Codec("hex-32", decode_hex, "64 lower-case hex characters, no `0x`")
HEX = Codec("hex", decode_hex, "lower-case hex, no `0x`")
TEXT = Codec("utf8", decode_text, "UTF-8 text, NUL padding removed")
RAW = Codec("bytes", bytes, "the raw bytes, unchanged")
DECIMAL = Codec("decimal-fraction", decode_decimal, "ASCII decimal with a fractional part")
SIGNATURE_LIST = Codec(
    "sig-list",
    decode_signature_list,
    "`index:sighex` entries (65-byte r||s||v) joined by `,`, ascending guardian index",
)

CODECS: dict[tuple[str, str], Codec] = {
    (schema.MESSAGE_PUBLICATION, Q.VERSION): INT,
    (schema.MESSAGE_PUBLICATION, Q.GUARDIAN_SET_INDEX): INT,
    (schema.MESSAGE_PUBLICATION, Q.TIMESTAMP): TIMESTAMP,
    (schema.MESSAGE_PUBLICATION, Q.NONCE): INT,
    (schema.MESSAGE_PUBLICATION, Q.SEQUENCE): SEQUENCE,
    (schema.MESSAGE_PUBLICATION, Q.EMITTER_CHAIN): INT,
    (schema.MESSAGE_PUBLICATION, Q.EMITTER_ADDRESS): HEX32,
    (schema.MESSAGE_PUBLICATION, Q.INITIATING_TX_ID): TEXT,
    (schema.MESSAGE_PUBLICATION, Q.PAYLOAD): RAW,
    (schema.MESSAGE_PUBLICATION, Q.CONSISTENCY_LEVEL): INT,
    (schema.MESSAGE_PUBLICATION, Q.DIGEST): HEX32,
    (schema.SIGNATURES, "{GuardianAddress}"): HEX,
    (schema.VAA_STATE, Q.SIGNATURES_PREFIX + "{GuardianSetIndex}"): SIGNATURE_LIST,
    (schema.QUORUM_STATE, Q.SIGNED_VAA): RAW,
    (schema.QUORUM_STATE, Q.CONFLICT_PREFIX + "{digest}"): RAW,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.PAYLOAD_ID): INT,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.AMOUNT): INT,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.FEE): INT,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.ORIGIN_ADDRESS): HEX32,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.ORIGIN_CHAIN): INT,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.TARGET_ADDRESS): HEX32,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.TARGET_CHAIN): INT,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.FROM_ADDRESS): HEX32,
    (schema.TOKEN_TRANSFER_PAYLOAD, Q.TRANSFER_PAYLOAD): RAW,
    (schema.ASSET_META_PAYLOAD, Q.PAYLOAD_ID): INT,
    (schema.ASSET_META_PAYLOAD, Q.TOKEN_ADDRESS): HEX32,
    (schema.ASSET_META_PAYLOAD, Q.TOKEN_CHAIN): INT,
    (schema.ASSET_META_PAYLOAD, Q.DECIMALS): INT,
    (schema.ASSET_META_PAYLOAD, Q.SYMBOL): TEXT,
    (schema.ASSET_META_PAYLOAD, Q.NAME): TEXT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.PAYLOAD_ID): INT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.ORIGIN_ADDRESS): HEX32,
    (schema.NFT_TRANSFER_PAYLOAD, Q.ORIGIN_CHAIN): INT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.SYMBOL): TEXT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.NAME): TEXT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.TOKEN_ID): INT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.URI): TEXT,
    (schema.NFT_TRANSFER_PAYLOAD, Q.TARGET_ADDRESS): HEX32,
    (schema.NFT_TRANSFER_PAYLOAD, Q.TARGET_CHAIN): INT,
    (schema.TOKEN_TRANSFER_DETAILS, Q.AMOUNT): DECIMAL,
    (schema.TOKEN_TRANSFER_DETAILS, Q.DECIMALS): INT,
    (schema.TOKEN_TRANSFER_DETAILS, Q.NOTIONAL_USD): DECIMAL,
    (schema.TOKEN_TRANSFER_DETAILS, Q.TOKEN_PRICE_USD): DECIMAL,
    (schema.TOKEN_TRANSFER_DETAILS, Q.ORIGIN_SYMBOL): TEXT,
    (schema.TOKEN_TRANSFER_DETAILS, Q.ORIGIN_NAME): TEXT,
    (schema.TOKEN_TRANSFER_DETAILS, Q.ORIGIN_TOKEN_ADDRESS): TEXT,
    (schema.CHAIN_DETAILS, Q.SENDER_ADDRESS): TEXT,
    (schema.CHAIN_DETAILS, Q.RECEIVER_ADDRESS): TEXT,
    (schema.CHAIN_DETAILS, Q.RESULTING_TOKEN_ADDRESS): TEXT,
    (schema.CHAIN_DETAILS, Q.RESULTING_TOKEN_SYMBOL): TEXT,
    (schema.CHAIN_DETAILS, Q.RESULTING_TOKEN_NAME): TEXT,
}


def codec_for(family: str, qualifier: str) -> Codec:
    """The codec of one stored cell (patterned qualifiers resolved by family)."""
    found = CODECS.get((family, qualifier))
    if found is not None:
        return found
    if family == schema.SIGNATURES:
        return HEX
    if family == schema.VAA_STATE:
        return SIGNATURE_LIST
    if family == schema.QUORUM_STATE:
        return RAW
    return RAW


def decode_value(family: str, qualifier: str, raw: bytes) -> Any:
    """A stored value as a Python value; falls back to the raw bytes if it does not decode."""
    try:
        return codec_for(family, qualifier).decode(raw)
    except (ValueError, UnicodeDecodeError):
        return raw
