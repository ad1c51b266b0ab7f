"""The signed VAA: strict parsing, byte-exact serialisation, digest and identifiers.

Why this module is written the way it is:

* **Strict.** Every malformed input raises a :class:`~chainloom.wormhole.errors.VAAParseError`
  that names the field and byte offset; nothing else escapes (the fuzz test checks it). Guardian
  indices must be strictly ascending already at parse time, because a VAA that breaks this can
  never verify and storing it would only let it masquerade as a real message.
* **Byte exact.** The digest is the VAA's identity for replay protection, and it must be taken
  over the *received* body bytes (sdk/vaa/structs.go). The wire format is canonical (fixed
  widths, the payload is the rest), so ``to_bytes()`` of a parsed VAA is the input again.
* **Plain, and cheap to decode.** A VAA is an ordinary frozen dataclass built through its
  constructor (frozen because its digest is its identity and is cached). Decoding runs on every
  copy of every message a spy streams, so the parser builds only what is always needed: the
  signatures stay as the received entries (:class:`ReceivedSignatures`, which is what the
  verifier reads) and a :class:`Signature` is built only when one is asked for; the digest
  (two keccak passes) is computed on first use, because many VAAs are parsed for their
  identifiers alone; and the constructor's range checks are one ``struct`` pack.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from chainloom.wormhole.errors import (
    SignatureOrderError,
    TruncatedVAAError,
    UnsupportedVersionError,
    VAAEncodingError,
)
from chainloom.wormhole.hashing import double_keccak256

__all__ = [
    "BODY_LENGTH_WITHOUT_PAYLOAD",
    "HEADER_LENGTH",
    "SIGNATURE_ENTRY_LENGTH",
    "SUPPORTED_VERSION",
    "VAA",
    "ReceivedSignatures",
    "Signature",
    "decode_vaa_text",
    "encode_body",
    "parse_vaa",
    "parse_vaa_text",
    "raw_signatures",
    "signature_entries",
]

SUPPORTED_VERSION = 1
HEADER_LENGTH = 6
SIGNATURE_ENTRY_LENGTH = 66
BODY_LENGTH_WITHOUT_PAYLOAD = 51

_HEADER = struct.Struct(">BIB")
_BODY = struct.Struct(">IIH32sQB")
# The integer fields of a VAA in their wire widths: packing them is the range check.
_INTEGER_FIELDS = struct.Struct(">IIIHQB")
_MAX_U32 = 0xFFFFFFFF
_MAX_U64 = 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True, slots=True)
class Signature:
    """One guardian's signature over the VAA digest."""

    guardian_index: int
    """Index of the signer in the guardian set the VAA names (0..255)."""
    signature: bytes
    """65 bytes: r (32) || s (32) || v (1, the recovery id 0 or 1)."""

    def __post_init__(self) -> None:
        if not 0 <= self.guardian_index <= 0xFF:
            raise ValueError(f"guardian_index {self.guardian_index} is not a uint8")
        if len(self.signature) != 65:
            raise ValueError(f"signature must be 65 bytes, got {len(self.signature)}")


@dataclass(frozen=True, slots=True, eq=False)
class ReceivedSignatures(Sequence[Signature]):
    """A parsed VAA's signatures, kept as the received entries and read on access.

    Verification works on the raw entries (see :func:`signature_entries`), so the parser does
    not build a :class:`Signature` per guardian; indexing or iterating builds them on demand.
    It compares and hashes like the tuple of the same signatures, so a parsed VAA equals the
    VAA it was encoded from.
    """

    entries: bytes
    """The signature list as received: per signature, index (1 byte) || r || s || v (65)."""

    def __len__(self) -> int:
        return len(self.entries) // SIGNATURE_ENTRY_LENGTH

    @overload
    def __getitem__(self, position: int) -> Signature: ...

    @overload
    def __getitem__(self, position: slice) -> tuple[Signature, ...]: ...

    def __getitem__(self, position: int | slice) -> Signature | tuple[Signature, ...]:
        if isinstance(position, slice):
            return tuple(self)[position]
        start = range(0, len(self.entries), SIGNATURE_ENTRY_LENGTH)[position]
        return Signature(
            self.entries[start], self.entries[start + 1 : start + SIGNATURE_ENTRY_LENGTH]
        )

    def __iter__(self) -> Iterator[Signature]:
        entries = self.entries
        for start in range(0, len(entries), SIGNATURE_ENTRY_LENGTH):
            yield Signature(entries[start], entries[start + 1 : start + SIGNATURE_ENTRY_LENGTH])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReceivedSignatures):
            return self.entries == other.entries
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    @property
    def indices(self) -> bytes:
        """The guardian index of each signature, one byte each, in signature order."""
        return self.entries[::SIGNATURE_ENTRY_LENGTH]

    def entry_list(self) -> list[bytes]:
        """The 66-byte entries (index || r || s || v), in signature order."""
        entries = self.entries
        return [
            entries[start : start + SIGNATURE_ENTRY_LENGTH]
            for start in range(0, len(entries), SIGNATURE_ENTRY_LENGTH)
        ]


@dataclass(frozen=True)
class VAA:
    """A signed Verifiable Action Approval (layout: ``sdk/vaa/structs.go``)."""

    version: int
    """Wire-format version; always 1."""
    guardian_set_index: int
    """The guardian set whose members signed (uint32)."""
    signatures: Sequence[Signature]
    """Guardian signatures, guardian indices strictly ascending: a tuple when built by hand,
    :class:`ReceivedSignatures` (the received entries) when parsed."""
    timestamp: int
    """Block time of the source transaction, unix seconds (uint32)."""
    nonce: int
    """Emitter-chosen nonce (uint32)."""
    emitter_chain: int
    """Wormhole chain id of the emitter (uint16; not the EVM chain id)."""
    emitter_address: bytes
    """The emitter's address, left-zero-padded to 32 bytes."""
    sequence: int
    """Per-emitter sequence number (uint64)."""
    consistency_level: int
    """Finality the emitter asked for (uint8; chain specific)."""
    payload: bytes
    """The application payload (the rest of the body; may be empty)."""

    def __post_init__(self) -> None:
        if self.version != SUPPORTED_VERSION:
            raise ValueError(f"version must be {SUPPORTED_VERSION}, got {self.version}")
        if len(self.emitter_address) != 32:
            raise ValueError(f"emitter_address must be 32 bytes, got {len(self.emitter_address)}")
        if len(self.signatures) > 0xFF:
            raise ValueError(f"at most 255 signatures fit in a VAA, got {len(self.signatures)}")
        try:
            _INTEGER_FIELDS.pack(
                self.guardian_set_index,
                self.timestamp,
                self.nonce,
                self.emitter_chain,
                self.sequence,
                self.consistency_level,
            )
        except struct.error:
            raise ValueError(_out_of_range(self)) from None

    # ---- bytes ---------------------------------------------------------------------------

    @property
    def body(self) -> bytes:
        """The body bytes (what the guardians signed; the format is canonical, so for a parsed
        VAA these are exactly the bytes received)."""
        return encode_body(
            timestamp=self.timestamp,
            nonce=self.nonce,
            emitter_chain=self.emitter_chain,
            emitter_address=self.emitter_address,
            sequence=self.sequence,
            consistency_level=self.consistency_level,
            payload=self.payload,
        )

    def to_bytes(self) -> bytes:
        """The full signed VAA; for a parsed VAA, exactly the bytes it was parsed from."""
        header = _HEADER.pack(self.version, self.guardian_set_index, len(self.signatures))
        return header + b"".join(signature_entries(self)[1]) + self.body

    # ---- identity ------------------------------------------------------------------------

    @functools.cached_property
    def digest(self) -> bytes:
        """keccak256(keccak256(body)), 32 bytes: the VAA's identity and what was signed."""
        return double_keccak256(self.body)

    @property
    def digest_hex(self) -> str:
        """The digest as ``0x`` and 64 lower-case hex digits."""
        return "0x" + self.digest.hex()

    @property
    def emitter_hex(self) -> str:
        """The emitter address as 64 lower-case hex digits."""
        return self.emitter_address.hex()

    @property
    def message_id(self) -> str:
        """``chain/emitter64hex/sequence``, the reference's MessageID."""
        return f"{self.emitter_chain}/{self.emitter_address.hex()}/{self.sequence}"

    @property
    def row_key(self) -> str:
        """``chain:emitter64hex:sequence`` with the sequence zero-padded to 16 digits.

        This is the event store's Bigtable row key (``docs/eventstore.md``). Sequences of
        17-20 digits are longer than 16 characters and sort after every 16-digit key of the
        same emitter whose first digit is not greater (the documented caveat).
        """
        return f"{self.emitter_chain}:{self.emitter_address.hex()}:{self.sequence:016d}"

    @property
    def guardian_indices(self) -> tuple[int, ...]:
        """The guardian index of each signature, in signature order."""
        return tuple(sig.guardian_index for sig in self.signatures)


def encode_body(
    *,
    timestamp: int,
    nonce: int,
    emitter_chain: int,
    emitter_address: bytes,
    sequence: int,
    consistency_level: int,
    payload: bytes,
) -> bytes:
    """The body bytes for these fields (the part that is hashed and signed)."""
    if len(emitter_address) != 32:
        raise ValueError(f"emitter_address must be 32 bytes, got {len(emitter_address)}")
    return (
        _BODY.pack(timestamp, nonce, emitter_chain, emitter_address, sequence, consistency_level)
        + payload
    )


def _out_of_range(vaa: VAA) -> str:
    """The message naming the first integer field that does not fit its wire width."""
    for name, value, limit in (
        ("guardian_set_index", vaa.guardian_set_index, _MAX_U32),
        ("timestamp", vaa.timestamp, _MAX_U32),
        ("nonce", vaa.nonce, _MAX_U32),
        ("emitter_chain", vaa.emitter_chain, 0xFFFF),
        ("sequence", vaa.sequence, _MAX_U64),
        ("consistency_level", vaa.consistency_level, 0xFF),
    ):
        if not isinstance(value, int) or not 0 <= value <= limit:
            return f"{name} {value!r} does not fit its field (a uint up to {limit})"
    return "an integer field does not fit its wire width"


def _raise_order_error(indices: bytes) -> None:
    previous = -1
    for position, index in enumerate(indices):
        if index <= previous:
            offset = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * position
            raise SignatureOrderError(position, previous, index, offset=offset)
        previous = index


def raw_signatures(vaa: VAA) -> list[tuple[int, bytes]]:
    """(guardian index, 65-byte signature) pairs, in signature order."""
    return [(entry[0], entry[1:]) for entry in signature_entries(vaa)[1]]


def signature_entries(vaa: VAA) -> tuple[bytes, list[bytes]]:
    """The guardian indices (one byte each) and the 66-byte entries (index || r || s || v).

    This is what the verifier and the signature cache work on.
    """
    signatures = vaa.signatures
    if isinstance(signatures, ReceivedSignatures):
        return signatures.indices, signatures.entry_list()
    return (
        bytes(sig.guardian_index for sig in signatures),
        [bytes((sig.guardian_index,)) + sig.signature for sig in signatures],
    )


def parse_vaa(data: bytes | bytearray | memoryview) -> VAA:
    """Parse a signed VAA, strictly (``sdk/vaa/structs.go`` ``Unmarshal``).

    Raises :class:`VAAParseError` (or a subclass) naming what is wrong and the byte offset:
    too short, unsupported version, a truncated signature list or body, or guardian indices
    that are not strictly ascending. A declared signature count is checked against the input
    length before anything is allocated.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    length = len(data)
    if length < HEADER_LENGTH:
        if length and data[0] != SUPPORTED_VERSION:
            raise UnsupportedVersionError(data[0])
        raise TruncatedVAAError("header", offset=0, needed=HEADER_LENGTH, length=length)
    version, guardian_set_index, count = _HEADER.unpack_from(data)
    if version != SUPPORTED_VERSION:
        raise UnsupportedVersionError(version)
    body_offset = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * count
    if body_offset > length:
        complete = (length - HEADER_LENGTH) // SIGNATURE_ENTRY_LENGTH
        offset = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * complete
        raise TruncatedVAAError(
            f"signature {complete} of {count}",
            offset=offset,
            needed=SIGNATURE_ENTRY_LENGTH,
            length=length,
        )
    if body_offset + BODY_LENGTH_WITHOUT_PAYLOAD > length:
        raise TruncatedVAAError(
            "body", offset=body_offset, needed=BODY_LENGTH_WITHOUT_PAYLOAD, length=length
        )
    # Strictly ascending indices: the index bytes, sorted without repeats, are themselves.
    indices = data[HEADER_LENGTH:body_offset:SIGNATURE_ENTRY_LENGTH]
    if count > 1 and indices != bytes(sorted(set(indices))):
        _raise_order_error(indices)
    timestamp, nonce, chain, emitter, sequence, consistency = _BODY.unpack_from(data, body_offset)
    return VAA(
        version=version,
        guardian_set_index=guardian_set_index,
        signatures=ReceivedSignatures(data[HEADER_LENGTH:body_offset]),
        timestamp=timestamp,
        nonce=nonce,
        emitter_chain=chain,
        emitter_address=emitter,
        sequence=sequence,
        consistency_level=consistency,
        payload=data[body_offset + BODY_LENGTH_WITHOUT_PAYLOAD :],
    )


_NOT_HEX = re.compile(r"[^0-9a-fA-F]")


def decode_vaa_text(text: str) -> bytes:
    """Bytes from a VAA written as hex (with or without ``0x``) or standard/URL-safe base64.

    Hex is tried first when the text is made only of hex digits (a base64 VAA starts with
    ``AQ``, which is not hex, so the two never collide for version-1 VAAs).
    """
    stripped = text.strip()
    if not stripped:
        raise VAAEncodingError("empty input")
    candidate = stripped[2:] if stripped[:2] in ("0x", "0X") else stripped
    if not candidate:
        raise VAAEncodingError("bad hex: no digits after 0x")
    # The common case in one C call; fromhex skips whitespace, which the length check refuses.
    with contextlib.suppress(ValueError):
        data = bytes.fromhex(candidate)
        if len(data) * 2 == len(candidate):
            return data
    first_bad = _NOT_HEX.search(candidate)  # the first non-hex character, found in C
    if first_bad is None:  # only hex digits
        if len(candidate) % 2:
            raise VAAEncodingError(f"bad hex: odd number of hex digits ({len(candidate)})")
        return bytes.fromhex(candidate)
    if stripped[:2] in ("0x", "0X") or not stripped.startswith("AQ"):
        # A version-1 VAA in base64 always starts with "AQ"; anything else was meant as hex.
        position, bad = first_bad.start(), first_bad.group()
        raise VAAEncodingError(
            f"bad hex: {bad!r} at position {position} is not a hex digit "
            "(and the text is not base64 of a VAA, which starts with 'AQ')"
        )
    try:
        normalized = stripped.replace("-", "+").replace("_", "/")
        normalized += "=" * (-len(normalized) % 4)
        return base64.b64decode(normalized, validate=True)
    except (binascii.Error, ValueError) as error:
        raise VAAEncodingError(f"neither hex nor base64 ({error})") from None


def parse_vaa_text(text: str) -> VAA:
    """Parse a VAA given as hex (with or without ``0x``) or base64 text."""
    return parse_vaa(decode_vaa_text(text))
