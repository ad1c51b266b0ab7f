"""Parameters of the account, NFT-offer and server methods (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import decode_account

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
PEER = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"
KEY = "AB" * 32


def _refused(method: str, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as refused:
        rq.parse_params(rq.Call(method=method, params=params, api_version=2))
    return refused.value


def test_listings_take_an_account_a_peer_a_clamped_limit_and_a_cursor() -> None:
    parsed = pm.parse_directory_listing(
        {"account": ACCOUNT, "peer": PEER, "limit": 3, "marker": f"{KEY},2"}
    )
    assert (parsed.account, parsed.peer) == (decode_account(ACCOUNT), decode_account(PEER))
    assert parsed.limit == 10  # clamped up to rippled's smallest
    assert parsed.marker is not None
    assert (parsed.marker.entry, parsed.marker.page) == (bytes.fromhex(KEY), 2)
    assert pm.parse_directory_listing({"account": ACCOUNT, "limit": 10**6}).limit == 400
    assert pm.parse_directory_listing({"account": ACCOUNT}).limit == 200


def test_account_objects_types_are_rippled_short_names() -> None:
    parsed = pm.parse_account_objects({"account": ACCOUNT, "type": "state"})
    assert parsed.entry_type == sf.RIPPLE_STATE
    assert pm.parse_account_objects({"account": ACCOUNT, "type": "NFT_Page"}).entry_type == (
        sf.NFTOKEN_PAGE
    )
    assert _refused("account_objects", {"account": ACCOUNT, "type": "nope"}).token == (
        "invalidParams"
    )


@pytest.mark.parametrize(
    ("method", "params", "token"),
    [
        ("account_info", {}, "invalidParams"),
        ("account_info", {"account": 5}, "actMalformed"),
        ("account_info", {"account": "rNotAnAddress"}, "actMalformed"),
        ("account_info", {"account": ACCOUNT, "signer_lists": "yes"}, "invalidParams"),
        ("account_lines", {"account": ACCOUNT, "peer": 1}, "actMalformed"),
        ("account_lines", {"account": ACCOUNT, "limit": "10"}, "invalidParams"),
        ("account_lines", {"account": ACCOUNT, "limit": 0}, "invalidParams"),
        ("account_lines", {"account": ACCOUNT, "marker": "x"}, "invalidParams"),
        ("account_lines", {"account": ACCOUNT, "ledger_index": "x"}, "invalidParams"),
        ("account_nfts", {"account": ACCOUNT, "marker": "x"}, "invalidParams"),
        ("gateway_balances", {"account": ACCOUNT, "hotwallet": 5}, "invalidHotWallet"),
        ("noripple_check", {"account": ACCOUNT}, "invalidParams"),
        ("noripple_check", {"account": ACCOUNT, "role": "admin"}, "invalidParams"),
        ("deposit_authorized", {"source_account": ACCOUNT}, "invalidParams"),
        ("nft_sell_offers", {"nft_id": "00"}, "invalidParams"),
        ("nft_buy_offers", {}, "invalidParams"),
        ("transaction_entry", {"tx_hash": 5}, "invalidParams"),
        ("ledger_index", {"date": "2026-01-01T00:00:00"}, "invalidParams"),
        ("feature", {"feature": 7}, "invalidParams"),
        ("feature", {"feature": "AMM", "vetoed": True}, "invalidParams"),
        ("amm_info", {}, "invalidParams"),
        ("mpt_holders", {}, "invalidParams"),
        ("mpt_holders", {"mpt_issuance_id": "AB" * 32}, "invalidParams"),
        ("mpt_holders", {"mpt_issuance_id": "AB" * 24, "marker": 3}, "invalidParams"),
        ("get_aggregate_price", {"base_asset": "XRP", "quote_asset": "USD"}, "invalidParams"),
        (
            "get_aggregate_price",
            {"base_asset": "XRP", "quote_asset": "USD", "oracles": []},
            "oracleMalformed",
        ),
        (
            "get_aggregate_price",
            {
                "base_asset": "XRP",
                "quote_asset": "USD",
                "trim": 30,
                "oracles": [{"account": ACCOUNT, "oracle_document_id": 1}],
            },
            "invalidParams",
        ),
        ("amm_info", {"asset": {"currency": "XRP"}}, "invalidParams"),
        ("amm_info", {"amm_account": ACCOUNT, "asset": {"currency": "XRP"}}, "invalidParams"),
    ],
)
def test_refusals_are_rippled_errors(method: str, params: dict[str, Any], token: str) -> None:
    assert _refused(method, params).token == token


def test_every_method_has_a_parser_and_a_method() -> None:
    from chainloom.ledger.api.methods import METHODS

    assert set(METHODS) == set(rq.PARSERS) - set(rq.WEBSOCKET_ONLY)
