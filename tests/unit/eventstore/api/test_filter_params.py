"""The filtered lists' parameters and cursors: pure."""

from __future__ import annotations

import pytest

from chainloom.eventstore.api import filter_params as fp
from chainloom.eventstore.api.errors import BadParameterError
from chainloom.eventstore.filter_index import Filters

KEY = b"k" * 32


def test_filters_are_parsed_in_their_keyed_forms() -> None:
    filters = fp.parse_list_filters(
        {
            "sourceChain": "ethereum",
            "targetChain": "1",
            "payloadType": "3, 1",
            "tokenChain": "2",
            "tokenAddress": "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
            "sender": "0x" + "AB" * 20,
            "txHash": "0x" + "CD" * 32,
            "from": "2023-11-14",
            "to": "2023-11-14T23:00:00+01:00",
        }
    )
    assert filters == Filters(
        source_chain=2,
        target_chain=1,
        payload_types=frozenset({1, 3}),
        token="2/" + "0" * 24 + "c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2",
        sender=(2, "0x" + "ab" * 20),
        tx_hash="0x" + "cd" * 32,
        start=1_699_920_000,
        end=1_699_999_200,  # 22:00Z
    )


@pytest.mark.parametrize(
    ("values", "parameter"),
    [
        ({"sourceChain": "nowhere"}, "sourceChain"),
        ({"payloadType": "256"}, "payloadType"),
        ({"payloadType": ""}, "payloadType"),
        ({"tokenAddress": "ab"}, "tokenChain"),
        ({"tokenChain": "2", "tokenAddress": "xyz"}, "tokenAddress"),
        ({"recipient": "abc"}, "recipient"),
        ({"txHash": ""}, "txHash"),
        ({"from": "2023-11-14T10:00:00"}, "from"),  # no zone
        ({"from": "2023-11-14", "to": "2023-11-14"}, "to"),
        ({"emitter": "0xzz"}, "emitter"),
    ],
)
def test_a_bad_filter_names_its_parameter(values: dict[str, str], parameter: str) -> None:
    with pytest.raises(BadParameterError) as refused:
        fp.parse_list_filters(values)
    assert refused.value.parameter == parameter


def test_a_cursor_is_bound_to_its_filters_order_and_key() -> None:
    filters = Filters(source_chain=2)
    suffix = "1700000000:2:" + "0" * 64 + ":0000000000000001"
    cursor = fp.encode_cursor("asc", filters, suffix, KEY)
    asked = fp.parse_list_query({"order": "asc", "cursor": cursor}, filters, 50, 100, KEY)
    assert (asked.after, asked.order, asked.size) == (suffix, "asc", 50)
    assert fp.parse_list_query({}, filters, 50, 100, KEY).order == "desc"
    for values, other_filters, key in (
        ({"cursor": cursor}, filters, KEY),  # desc
        ({"order": "asc", "cursor": cursor}, Filters(source_chain=4), KEY),
        ({"order": "asc", "cursor": cursor}, filters, b"o" * 32),
        ({"order": "asc", "cursor": cursor[:-2]}, filters, KEY),
    ):
        with pytest.raises(BadParameterError) as refused:
            fp.parse_list_query(values, other_filters, 50, 100, key)
        assert refused.value.parameter == "cursor"
