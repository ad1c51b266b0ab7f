"""Row keys, sequence ranges, value encodings and amount arithmetic (pure)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chainloom.eventstore import encoding as enc
from chainloom.eventstore.enrichment import notional_usd
from chainloom.eventstore.keys import MessageKey, normalize_tx_id, sequence_key_ranges
from chainloom.wormhole import format_amount
from chainloom.wormhole.errors import MessageKeyError

EMITTER = "0000000000000000000000000290fb167208af455bb137780163b7b7a9a10c16"


def test_message_key_forms_round_trip() -> None:
    key = MessageKey.parse(f"2/{EMITTER}/22")
    assert key.row_key == f"2:{EMITTER}:0000000000000022"
    assert MessageKey.parse(key.row_key) == key
    assert MessageKey.parse("2/0x0290fb167208af455bb137780163b7b7a9a10c16/22") == key
    long = MessageKey(1, EMITTER, 15670011184149708652)
    assert long.row_key.endswith(":15670011184149708652")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("2/abc", "CHAIN/EMITTER/SEQUENCE"),
        ("x/00/1", "chain 'x'"),
        ("2/zz/1", "not a hex address"),
        ("2/00/-1", "sequence '-1'"),
        ("70000/00/1", "uint16"),
        (f"2/{EMITTER}/{2**64}", "uint64"),
    ],
)
def test_bad_message_ids_name_the_problem(text: str, reason: str) -> None:
    with pytest.raises(MessageKeyError, match=reason):
        MessageKey.parse(text)


def test_sequence_ranges_follow_key_widths() -> None:
    ranges = sequence_key_ranges(2, EMITTER, 5, 10**17 + 3)
    widths = [len(start.rsplit(":", 1)[1]) for start, _ in ranges]
    assert widths == [16, 17, 18]
    assert ranges[0][0].endswith(":0000000000000005")
    assert ranges[0][1].endswith(":9999999999999999")
    assert ranges[1] == (f"2:{EMITTER}:10000000000000000", f"2:{EMITTER}:99999999999999999")
    assert ranges[2][1].endswith(":100000000000000003")
    assert sequence_key_ranges(2, EMITTER, 9, 3) == []


def test_tx_ids_normalize_hex_but_keep_base58() -> None:
    assert normalize_tx_id("0xABcd") == "0xabcd"
    assert normalize_tx_id("AB" * 32) == "0x" + "ab" * 32
    signature = (
        "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"
    )
    assert normalize_tx_id(signature) == signature


def test_encodings_sort_and_round_trip() -> None:
    assert enc.encode_sequence(22) == b"00000000000000000022"
    assert enc.encode_sequence(9) < enc.encode_sequence(10) < enc.encode_sequence(2**64 - 1)
    assert enc.encode_timestamp(1649962537) == b"2022-04-14T18:55:37Z"
    assert enc.decode_timestamp(b"2022-04-14T18:55:37Z") == 1649962537
    assert enc.encode_timestamp(5) < enc.encode_timestamp(1649962537)
    entries = [(7, b"\x02" * 65), (1, b"\x01" * 65)]
    raw = enc.encode_signature_list(entries)
    assert raw.startswith(b"1:0101")
    assert enc.decode_signature_list(raw) == sorted(entries)
    assert enc.decode_value("Signatures", "0xAbC", b"zz") == b"zz"  # not hex: raw bytes back


def test_amounts_scale_to_at_most_eight_decimals() -> None:
    assert format_amount(40006106, 6) == "40.006106"
    assert format_amount(100, 18) == "0.00000100"
    assert format_amount(5, 0) == "5"
    assert notional_usd(150_000_000, 18, Decimal("2100.25")) == Decimal("3150.375000")
    assert notional_usd(1, 8, Decimal("0.3333333")) == Decimal("0.000000")
