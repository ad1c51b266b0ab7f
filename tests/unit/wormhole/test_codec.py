"""The VAA codec: strict errors with offsets, byte-exact round trips, identifiers."""

from __future__ import annotations

import dataclasses

import pytest

from chainloom.errors import ChainloomError
from chainloom.wormhole import VAA, Signature, WormholeError, parse_vaa, parse_vaa_text
from chainloom.wormhole.errors import (
    SignatureOrderError,
    TruncatedVAAError,
    UnsupportedVersionError,
    VAAEncodingError,
    VAAParseError,
)
from chainloom.wormhole.vaa import ReceivedSignatures, raw_signatures, signature_entries


def _vaa(signature_count: int = 2, payload: bytes = b"hello") -> VAA:
    return VAA(
        version=1,
        guardian_set_index=4,
        signatures=tuple(
            Signature(guardian_index=i * 3, signature=bytes([i]) * 65)
            for i in range(signature_count)
        ),
        timestamp=1_700_000_123,
        nonce=42,
        emitter_chain=2,
        emitter_address=bytes(12) + bytes(range(20)),
        sequence=123456789012345678,
        consistency_level=15,
        payload=payload,
    )


def test_constructed_vaa_serialises_and_parses_back_equal():
    vaa = _vaa()
    raw = vaa.to_bytes()
    assert len(raw) == 6 + 66 * 2 + 51 + 5
    parsed = parse_vaa(raw)
    assert parsed == vaa
    assert parsed.signatures == vaa.signatures
    assert parsed.body == vaa.body
    assert parsed.digest == vaa.digest
    assert hash(parsed) == hash(vaa)


def test_parsed_signatures_read_the_received_entries():
    vaa = _vaa(signature_count=3)
    parsed = parse_vaa(vaa.to_bytes())
    signatures = parsed.signatures
    assert isinstance(signatures, ReceivedSignatures)
    assert len(signatures) == 3
    assert signatures[0] == vaa.signatures[0]
    assert signatures[-1] == Signature(guardian_index=6, signature=bytes([2]) * 65)
    assert signatures[1:] == tuple(vaa.signatures[1:])
    assert list(signatures) == list(vaa.signatures)
    assert signatures == tuple(vaa.signatures)
    assert signatures != tuple(vaa.signatures[:2])
    assert signatures != list(vaa.signatures)
    assert hash(signatures) == hash(tuple(vaa.signatures))
    assert signatures.indices == bytes([0, 3, 6])
    with pytest.raises(IndexError):
        signatures[3]
    assert signature_entries(parsed) == signature_entries(vaa)
    assert (
        raw_signatures(parsed)
        == raw_signatures(vaa)
        == [(3 * i, bytes([i]) * 65) for i in range(3)]
    )
    assert parsed.guardian_indices == (0, 3, 6)


def test_identifiers():
    vaa = _vaa()
    emitter = "000000000000000000000000000102030405060708090a0b0c0d0e0f10111213"
    assert vaa.emitter_hex == emitter
    assert vaa.message_id == f"2/{emitter}/123456789012345678"
    # 18 digits: longer than the 16-digit padding, so written in full (the documented caveat)
    assert vaa.row_key == f"2:{emitter}:123456789012345678"
    short = dataclasses.replace(vaa, sequence=77)
    assert short.row_key == f"2:{emitter}:0000000000000077"
    assert short.digest_hex.startswith("0x")
    assert len(short.digest_hex) == 66
    assert short.digest != vaa.digest


def test_replace_of_a_parsed_vaa_re_encodes_its_new_fields():
    parsed = parse_vaa(_vaa().to_bytes())
    changed = dataclasses.replace(parsed, payload=b"other")
    assert changed.to_bytes().endswith(b"other")
    assert parse_vaa(changed.to_bytes()) == changed
    assert changed.digest != parsed.digest


def test_empty_payload_and_no_signatures_are_legal():
    vaa = _vaa(signature_count=0, payload=b"")
    raw = vaa.to_bytes()
    assert len(raw) == 57
    assert parse_vaa(raw) == vaa


def test_frozen():
    vaa = _vaa()
    with pytest.raises(dataclasses.FrozenInstanceError):
        vaa.sequence = 1  # type: ignore[misc]


def test_error_tree():
    assert issubclass(VAAParseError, WormholeError)
    assert issubclass(WormholeError, ChainloomError)


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (0, "truncated at byte 0: header needs bytes 0..5"),
        (5, "truncated at byte 5: header needs bytes 0..5"),
        (6, "truncated at byte 6: signature 0 of 2 needs bytes 6..71"),
        (100, "truncated at byte 100: signature 1 of 2 needs bytes 72..137"),
        (138, "truncated at byte 138: body needs bytes 138..188"),
        (188, "truncated at byte 188: body needs bytes 138..188"),
    ],
)
def test_truncation_names_the_byte(cut, message):
    raw = _vaa().to_bytes()
    with pytest.raises(TruncatedVAAError) as caught:
        parse_vaa(raw[:cut])
    assert str(caught.value) == message
    assert caught.value.offset == cut


def test_shortest_legal_cut_parses():
    raw = _vaa(payload=b"").to_bytes()
    assert parse_vaa(raw).payload == b""


@pytest.mark.parametrize("version", [0, 2, 255])
def test_unsupported_version(version):
    raw = bytearray(_vaa().to_bytes())
    raw[0] = version
    with pytest.raises(UnsupportedVersionError, match=f"unsupported version {version}"):
        parse_vaa(bytes(raw))
    with pytest.raises(UnsupportedVersionError):
        parse_vaa(bytes(raw[:3]))


@pytest.mark.parametrize("second_index", [0, 1, 2])
def test_indices_must_be_strictly_ascending(second_index):
    vaa = _vaa(signature_count=3)  # indices 0, 3, 6
    raw = bytearray(vaa.to_bytes())
    raw[6 + 66 * 2] = second_index  # third signature now <= the second (3)
    with pytest.raises(SignatureOrderError, match="index out of order: signature 2") as caught:
        parse_vaa(bytes(raw))
    assert caught.value.offset == 6 + 66 * 2


def test_huge_declared_count_is_refused_without_allocating():
    # 255 signatures declared, 20 bytes given: refused from the length, not by reading.
    raw = bytes([1, 0, 0, 0, 0, 255]) + bytes(14)
    with pytest.raises(TruncatedVAAError, match="signature 0 of 255"):
        parse_vaa(raw)


def test_text_forms():
    raw = _vaa().to_bytes()
    import base64

    assert parse_vaa_text(raw.hex()).to_bytes() == raw
    assert parse_vaa_text("  0X" + raw.hex().upper() + "\n").to_bytes() == raw
    assert parse_vaa_text(base64.b64encode(raw).decode()).to_bytes() == raw
    urlsafe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert parse_vaa_text(urlsafe).to_bytes() == raw


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty input"),
        ("0x", "no digits after 0x"),
        ("0xabc", "odd number of hex digits"),
        ("0x01zz", "bad hex: 'z' at position 2"),
        ("hello", "bad hex: 'h' at position 0"),
        ("01 00", "bad hex: ' ' at position 2"),
        ("0x" + "ab" * 1000 + "\n" + "cd", "bad hex: '\\\\n' at position 2000"),
        ("0X" + "ab" * 1000 + "\u00e9", "bad hex: '\u00e9' at position 2000"),
        ("AQ!!", "neither hex nor base64"),
    ],
)
def test_bad_text(text, message):
    with pytest.raises(VAAEncodingError, match=message):
        parse_vaa_text(text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("emitter_address", b"\x00" * 31),
        ("version", 2),
        ("sequence", 2**64),
        ("emitter_chain", 65536),
        ("timestamp", -1),
        ("nonce", 2**32),
        ("guardian_set_index", 1.5),
        ("consistency_level", 256),
    ],
)
def test_constructor_validates(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(_vaa(), **{field: value})


def test_signature_validates():
    with pytest.raises(ValueError, match="65 bytes"):
        Signature(guardian_index=0, signature=b"\x00" * 64)
    with pytest.raises(ValueError, match="uint8"):
        Signature(guardian_index=256, signature=b"\x00" * 65)


def test_bytearray_and_memoryview_inputs():
    raw = _vaa().to_bytes()
    assert parse_vaa(bytearray(raw)) == parse_vaa(memoryview(raw)) == parse_vaa(raw)


def test_pickle_and_copy_keep_the_received_bytes():
    """Spark ships VAAs between processes by pickling them."""
    import copy
    import pickle

    parsed = parse_vaa(_vaa(signature_count=3).to_bytes())
    for clone in (pickle.loads(pickle.dumps(parsed)), copy.deepcopy(parsed)):
        assert clone == parsed
        assert clone.to_bytes() == parsed.to_bytes()
        assert clone.digest == parsed.digest
        assert clone.signatures == parsed.signatures
