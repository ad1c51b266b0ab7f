"""The signed VAA: strict parsing, byte-exact serialisation, digest and identifiers.

Why this module is written the way it is:

* **Strict.** Every malformed input raises a :class:`~chainloom.wormhole.errors.VAAParseError`
  that names the field and byte offset; nothing else escapes (the fuzz test checks it). Guardian
  indices must be strictly ascending already at parse time, because a VAA that breaks this can
  never verify and storing it would only let it masquerade as a real message.
* **Byte exact.** The digest is the VAA's identity for replay protection, and it must be taken
  over the *received* body bytes (sdk/vaa/structs.go). The wire format is canonical (fixed
  widths, the payload is the rest), so ``to_bytes()`` of a parsed VAA is the input again; the
  parser still keeps the received buffer so ``body`` and ``to_bytes()`` cost nothing.
* **Fast.** The spy delivers every VAA ~10 times; decoding must stay far below the cost of one
  signature recovery. The digest is computed lazily and cached, fields are unpacked with one
  :mod:`struct` call, and objects are built without going through ``__init__``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass(frozen=True, slots=True)
class VAA:
    """A signed Verifiable Action Approval (layout: ``sdk/vaa/structs.go``)."""

    version: int
    """Wire-format version; always 1."""
    guardian_set_index: int
    """The guardian set whose members signed (uint32)."""
    signatures: tuple[Signature, ...]
    """Guardian signatures, guardian indices strictly ascending."""
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
    _encoded: bytes | None = field(default=None, init=False, repr=False, compare=False)
    """The received buffer (header and body), when this VAA came from :func:`parse_vaa`."""
    _body_offset: int = field(default=0, init=False, repr=False, compare=False)
    """Where the body starts inside ``_encoded``."""
    _digest: bytes | None = field(default=None, init=False, repr=False, compare=False)
    """Cached signing digest."""

    def __post_init__(self) -> None:
        if len(self.emitter_address) != 32:
            raise ValueError(f"emitter_address must be 32 bytes, got {len(self.emitter_address)}")
        if self.version != SUPPORTED_VERSION:
            raise ValueError(f"version must be {SUPPORTED_VERSION}, got {self.version}")
        if len(self.signatures) > 0xFF:
            raise ValueError(f"at most 255 signatures fit in a VAA, got {len(self.signatures)}")
        for name, value, limit in (
            ("guardian_set_index", self.guardian_set_index, _MAX_U32),
            ("timestamp", self.timestamp, _MAX_U32),
            ("nonce", self.nonce, _MAX_U32),
            ("emitter_chain", self.emitter_chain, 0xFFFF),
            ("sequence", self.sequence, _MAX_U64),
            ("consistency_level", self.consistency_level, 0xFF),
        ):
            if not 0 <= value <= limit:
                raise ValueError(f"{name} {value} does not fit its field (max {limit})")

    # ---- bytes ---------------------------------------------------------------------------

    @property
    def body(self) -> bytes:
        """The body bytes exactly as received (what the guardians signed)."""
        if self._encoded is not None:
            return self._encoded[self._body_offset :]
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
        if self._encoded is not None:
            return self._encoded
        parts = [_HEADER.pack(self.version, self.guardian_set_index, len(self.signatures))]
        for sig in self.signatures:
            parts.append(bytes((sig.guardian_index,)))
            parts.append(sig.signature)
        parts.append(self.body)
        return b"".join(parts)

    # ---- identity ------------------------------------------------------------------------

    @property
    def digest(self) -> bytes:
        """keccak256(keccak256(body)), 32 bytes: the VAA's identity and what was signed."""
        cached = self._digest
        if cached is None:
            cached = double_keccak256(self.body)
            object.__setattr__(self, "_digest", cached)
        return cached

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
        if self._encoded is not None:
            return tuple(self._encoded[HEADER_LENGTH : self._body_offset : SIGNATURE_ENTRY_LENGTH])
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


_new = object.__new__
_set = object.__setattr__


def _slot_setter(name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = VAA.__dict__[name].__set__
    return setter


_set_version = _slot_setter("version")
_set_guardian_set_index = _slot_setter("guardian_set_index")
_set_timestamp = _slot_setter("timestamp")
_set_nonce = _slot_setter("nonce")
_set_emitter_chain = _slot_setter("emitter_chain")
_set_emitter_address = _slot_setter("emitter_address")
_set_sequence = _slot_setter("sequence")
_set_consistency_level = _slot_setter("consistency_level")
_set_payload = _slot_setter("payload")
_set_encoded = _slot_setter("_encoded")
_set_body_offset = _slot_setter("_body_offset")
_set_digest = _slot_setter("_digest")

# ``signatures`` is materialised lazily for parsed VAAs: building 13 Signature objects costs
# more than the rest of parsing, and the verifier and the store read the signature bytes
# straight from the buffer. The slot keeps the tuple (None until first access); a property
# in front of it keeps the dataclass behaviour (init, eq, repr, hash, replace) unchanged.
_signatures_slot = VAA.__dict__["signatures"]
_set_signatures = _slot_setter("signatures")


def _materialise_signatures(vaa: VAA) -> tuple[Signature, ...]:
    value: tuple[Signature, ...] | None = _signatures_slot.__get__(vaa, VAA)
    if value is None:
        data = vaa._encoded
        assert data is not None
        signatures = []
        for start in range(HEADER_LENGTH, vaa._body_offset, SIGNATURE_ENTRY_LENGTH):
            sig: Signature = _new(Signature)
            _set(sig, "guardian_index", data[start])
            _set(sig, "signature", data[start + 1 : start + SIGNATURE_ENTRY_LENGTH])
            signatures.append(sig)
        value = tuple(signatures)
        _set_signatures(vaa, value)
    return value


setattr(VAA, "signatures", property(_materialise_signatures, _set_signatures))  # noqa: B010


def _raise_order_error(indices: bytes) -> None:
    previous = -1
    for position, index in enumerate(indices):
        if index <= previous:
            offset = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * position
            raise SignatureOrderError(position, previous, index, offset=offset)
        previous = index


def raw_signatures(vaa: VAA) -> list[tuple[int, bytes]]:
    """(guardian index, 65-byte signature) pairs, read from the buffer when there is one."""
    return [(entry[0], entry[1:]) for entry in signature_entries(vaa)[1]]


def signature_entries(vaa: VAA) -> tuple[bytes, list[bytes]]:
    """The guardian indices (one byte each) and the 66-byte entries (index || r || s || v).

    Read straight from the received buffer for parsed VAAs; this is what the verifier and the
    signature cache work on, without building :class:`Signature` objects.
    """
    data = vaa._encoded
    if data is None:
        signatures = vaa.signatures
        return (
            bytes(s.guardian_index for s in signatures),
            [bytes((s.guardian_index,)) + s.signature for s in signatures],
        )
    end = vaa._body_offset
    return (
        data[HEADER_LENGTH:end:SIGNATURE_ENTRY_LENGTH],
        [data[start : start + SIGNATURE_ENTRY_LENGTH] for start in range(HEADER_LENGTH, end, 66)],
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
    vaa: VAA = _new(VAA)
    _set_version(vaa, version)
    _set_guardian_set_index(vaa, guardian_set_index)
    _set_signatures(vaa, None)  # materialised from _encoded on first access
    _set_timestamp(vaa, timestamp)
    _set_nonce(vaa, nonce)
    _set_emitter_chain(vaa, chain)
    _set_emitter_address(vaa, emitter)
    _set_sequence(vaa, sequence)
    _set_consistency_level(vaa, consistency)
    _set_payload(vaa, data[body_offset + BODY_LENGTH_WITHOUT_PAYLOAD :])
    _set_encoded(vaa, data)
    _set_body_offset(vaa, body_offset)
    _set_digest(vaa, None)
    return vaa


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
