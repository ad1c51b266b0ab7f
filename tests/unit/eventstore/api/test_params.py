"""Parameter parsing and cursors: every refusal names its parameter."""

from __future__ import annotations

import datetime as dt

import pytest

from chainloom.eventstore.api import params
from chainloom.eventstore.api.errors import BadParameterError
from chainloom.wormhole.sequences import MAX_SEQUENCE

EMITTER = "0000000000000000000000003ee18b2214aff97000d974cf647e7c347e8fa585"


def _refused(parameter: str) -> pytest.RaisesExc[BadParameterError]:
    return pytest.raises(BadParameterError, match=f"^{parameter}: ")


def test_chains_by_id_or_name() -> None:
    assert params.parse_chain("2") == 2
    assert params.parse_chain("ethereum") == 2
    assert params.parse_chain("Solana") == 1
    for bad in ("65536", "-1", "nochain", ""):
        with _refused("chain") as caught:
            params.parse_chain(bad)
        assert caught.value.parameter == "chain"


def test_emitters_are_normalized_and_refused_when_not_hex() -> None:
    assert params.parse_emitter("0x3EE18B2214AFF97000D974CF647E7C347E8FA585") == EMITTER
    assert params.parse_emitter(EMITTER) == EMITTER
    for bad in ("zz", "0x", "1" * 65):
        with _refused("emitter"):
            params.parse_emitter(bad)


def test_sequences_are_decimal_uint64() -> None:
    assert params.parse_sequence("0") == 0
    assert params.parse_sequence(str(MAX_SEQUENCE)) == MAX_SEQUENCE
    for bad in (str(MAX_SEQUENCE + 1), "-1", "1e3", "", "٣"):
        with _refused("seq"):
            params.parse_sequence(bad)


def test_query_refuses_unknown_and_repeated_names() -> None:
    assert params.parse_query("/x?pageSize=5&cursor=abc", ("pageSize", "cursor")) == {
        "pageSize": "5",
        "cursor": "abc",
    }
    assert params.parse_query("/x", ("pageSize",)) == {}
    with _refused("pagesize") as caught:
        params.parse_query("/x?pagesize=5", ("pageSize", "cursor"))
    assert "cursor, pageSize" in caught.value.reason
    with _refused("pageSize"):
        params.parse_query("/x?pageSize=5&pageSize=6", ("pageSize",))
    with _refused("query"):
        params.parse_query("/x?pageSize=%ff", ("pageSize",))


def test_page_size_is_bounded() -> None:
    assert params.parse_page_size({}, 50, 1000) == 50
    assert params.parse_page_size({"pageSize": "1000"}, 50, 1000) == 1000
    for bad in ("0", "1001", "x", "", "-5"):
        with _refused("pageSize"):
            params.parse_page_size({"pageSize": bad}, 50, 1000)


def test_day_ranges() -> None:
    first, last = params.parse_day_range({"from": "2024-01-01", "to": "2024-01-31"}, 366)
    assert (first, last) == (dt.date(2024, 1, 1), dt.date(2024, 1, 31))
    with _refused("from"):
        params.parse_day_range({"to": "2024-01-31"}, 366)
    with _refused("from"):
        params.parse_day_range({"from": "2024-1-1", "to": "2024-01-31"}, 366)
    with _refused("to"):
        params.parse_day_range({"from": "2024-01-01", "to": "2024-02-30"}, 366)
    with _refused("to") as caught:
        params.parse_day_range({"from": "2024-02-01", "to": "2024-01-31"}, 366)
    assert "before" in caught.value.reason
    with _refused("to") as caught:
        params.parse_day_range({"from": "2024-01-01", "to": "2024-01-31"}, 30)
    assert "31 days (at most 30)" in caught.value.reason


KEY = b"k" * 32


def test_cursors_round_trip_and_are_bound_to_their_list() -> None:
    cursor = params.Cursor(2, EMITTER, MAX_SEQUENCE)
    text = params.encode_cursor(cursor, KEY)
    assert not set(text) & set("=/+")
    assert params.decode_cursor(text, 2, EMITTER, KEY) == cursor
    assert params.decode_cursor(text, 2, None, KEY) == cursor
    with pytest.raises(BadParameterError, match="another list"):
        params.decode_cursor(text, 4, None, KEY)
    with pytest.raises(BadParameterError, match="another list"):
        params.decode_cursor(text, 2, "00" * 32, KEY)
    body, _, mac = params.encode_cursor(params.Cursor(2, EMITTER, 1), KEY).partition(".")
    forged = [
        "",
        "!!!",
        params.encode_cursor(params.Cursor(2, EMITTER, 1), KEY).upper(),
        body,  # the signed text without its MAC
        f"{body}.{mac[:-1]}",
        params.encode_cursor(params.Cursor(2, EMITTER, 1), b"another key " * 2),
        "djI6MjpmZjox",  # v2:2:ff:1
        "djE6MjpmZjox",  # v1:2:ff:1 (the old, unsigned form)
    ]
    for bad in forged:
        with pytest.raises(BadParameterError) as caught:
            params.decode_cursor(bad, 2, None, KEY)
        assert caught.value.parameter == "cursor"
