"""Request parsing is pure: every malformed request is refused here, before any backend."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from chainloom.ledger.api import readers
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.errors import MalformedRequestError, RpcError
from chainloom.ledger.types import TransactionsCursor
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.address import decode_account

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
OTHER = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"
HASH = "AB" * 32


def _call(method: str, **params: Any) -> rq.Call:
    return rq.parse_call(orjson.dumps({"method": method, "params": [params]}))


def _params(method: str, **params: Any) -> rq.Params:
    return rq.parse_params(_call(method, **params))


def _refused(method: str, **params: Any) -> RpcError:
    with pytest.raises(RpcError) as refused:
        _params(method, **params)
    return refused.value


@pytest.mark.parametrize(
    ("body", "message", "status"),
    [
        (b"{nope", "Unable to parse request", 400),
        (b"[1, 2]", "Unable to parse request", 400),
        (b'{"params": [{}]}', "Null method", 400),
        (b'{"method": 7}', "method is not string", 400),
        (b'{"method": ""}', "method is empty", 400),
        (b'{"method": "ledger", "params": {"a": 1}}', "params unparseable", 400),
        (b'{"method": "ledger", "params": [{}, {}]}', "params unparseable", 400),
        (b'{"method": "ledger", "params": ["x"]}', "params unparseable", 400),
        (b'{"method": "x", "p": "' + b"a" * rq.MAX_BODY_BYTES + b'"}', "over", 413),
    ],
)
def test_envelopes_that_are_not_json_rpc(body: bytes, message: str, status: int) -> None:
    with pytest.raises(MalformedRequestError, match=message) as refused:
        rq.parse_call(body)
    assert refused.value.http_status == status


def test_the_envelope_and_api_versions() -> None:
    call = rq.parse_call(b'{"method": "server_info"}')
    assert (call.method, dict(call.params), call.api_version) == ("server_info", {}, 1)
    assert _call("ledger", api_version=2).api_version == 2
    assert _call("ledger", api_version=3).api_version == 3
    with pytest.raises(RpcError, match="API version"):
        rq.parse_params(_call("ledger", api_version=4))
    assert _refused_unknown().token == "unknownCmd"


def _refused_unknown() -> RpcError:
    with pytest.raises(RpcError) as refused:
        rq.parse_params(_call("submit"))
    return refused.value


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, readers.LedgerSelector()),
        ({"ledger_index": "validated"}, readers.LedgerSelector()),
        ({"ledger_index": "current"}, readers.LedgerSelector()),
        ({"ledger_index": 38129}, readers.LedgerSelector(sequence=38129)),
        ({"ledger_index": "38129"}, readers.LedgerSelector(sequence=38129)),
        ({"ledger_hash": HASH}, readers.LedgerSelector(ledger_hash=bytes.fromhex(HASH))),
    ],
)
def test_ledger_selectors(given: dict[str, Any], expected: readers.LedgerSelector) -> None:
    assert readers.parse_ledger_selector(given) == expected


@pytest.mark.parametrize(
    "given",
    [
        {"ledger_index": -1},
        {"ledger_index": 2**32},
        {"ledger_index": "latest"},
        {"ledger_index": True},
        {"ledger_hash": "AB"},
        {"ledger_hash": "ZZ" * 32},
        {"ledger_index": "\u0663\u0668\u0661\u0664\u0661"},  # Arabic-Indic 38141
        {"ledger_index": "\uff13\uff18\uff11\uff14\uff11"},  # fullwidth 38141
        {"ledger_index": " 38141"},
    ],
)
def test_malformed_ledger_selectors(given: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as refused:
        readers.parse_ledger_selector(given)
    assert refused.value.token == "invalidParams"


def test_ledger_data_limits_are_clamped_per_form() -> None:
    assert _params("ledger_data") == rq.LedgerDataParams(readers.LedgerSelector(), None, 256, False)
    parsed = _params("ledger_data", limit=10_000, binary=True, marker=HASH)
    assert parsed == rq.LedgerDataParams(readers.LedgerSelector(), bytes.fromhex(HASH), 2048, True)
    assert _refused("ledger_data", limit=0).token == "invalidParams"
    assert _refused("ledger_data", marker="XYZ").token == "invalidParams"
    assert _refused("ledger_data", binary="yes").token == "invalidParams"


def test_ledger_entry_typed_forms_become_keys() -> None:
    account = decode_account(ACCOUNT)
    other = decode_account(OTHER)

    def key(**params: Any) -> bytes:
        parsed = _params("ledger_entry", **params)
        assert isinstance(parsed, rq.LedgerEntryParams)
        return parsed.key

    assert key(index=HASH) == bytes.fromhex(HASH)
    assert key(account_root=ACCOUNT) == keylets.account_root(account)
    assert key(offer={"account": ACCOUNT, "seq": 5}) == keylets.offer(account, 5)
    assert key(offer=HASH) == bytes.fromhex(HASH)
    usd = bytes(12) + b"USD" + bytes(5)
    assert key(ripple_state={"accounts": [OTHER, ACCOUNT], "currency": "USD"}) == (
        keylets.ripple_state(account, other, usd)
    )
    root = keylets.owner_directory(account)
    assert key(directory={"owner": ACCOUNT}) == root
    assert key(directory={"owner": ACCOUNT, "dir_root": root.hex()}) == root
    assert key(directory=root.hex()) == root
    assert key(directory={"dir_root": root.hex(), "sub_index": 2}) != root
    assert key(nft_page=HASH) == bytes.fromhex(HASH)


@pytest.mark.parametrize(
    ("params", "token"),
    [
        ({}, "invalidParams"),
        ({"account_root": "rNotAnAccount"}, "actMalformed"),
        ({"account_root": 5}, "actMalformed"),
        ({"offer": {"account": ACCOUNT}}, "invalidParams"),
        ({"offer": 12}, "invalidParams"),
        ({"ripple_state": {"accounts": [ACCOUNT], "currency": "USD"}}, "invalidParams"),
        ({"ripple_state": {"accounts": [ACCOUNT, ACCOUNT], "currency": "USD"}}, "invalidParams"),
        ({"ripple_state": {"accounts": [ACCOUNT, OTHER], "currency": "XRP"}}, "invalidParams"),
        ({"ripple_state": {"accounts": [ACCOUNT, OTHER], "currency": "TOOLONG"}}, "invalidParams"),
        ({"directory": {"sub_index": 1}}, "invalidParams"),
        ({"directory": {"owner": ACCOUNT, "dir_root": HASH}}, "invalidParams"),
        ({"index": "AB"}, "invalidParams"),
    ],
)
def test_malformed_ledger_entry_requests(params: dict[str, Any], token: str) -> None:
    assert _refused("ledger_entry", **params).token == token


@pytest.mark.parametrize("bound", ["ledger_index_min", "ledger_index_max"])
def test_history_bounds_are_ascii_digits_only(bound: str) -> None:
    params = {"account": "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh", bound: "\u0663\u0668\u0661"}
    with pytest.raises(RpcError) as refused:
        rq.parse_account_tx(params)
    assert refused.value.token == "invalidParams"


def test_account_tx_paging_parameters() -> None:
    parsed = _params(
        "account_tx",
        account=ACCOUNT,
        ledger_index_min=-1,
        ledger_index_max=40000,
        limit=5000,
        forward=True,
        marker={"ledger": 38130, "seq": 4},
    )
    assert isinstance(parsed, rq.HistoryParams)
    assert (parsed.ledger_min, parsed.ledger_max, parsed.limit) == (None, 40000, 1000)
    assert parsed.marker == TransactionsCursor(38130, 4)
    assert parsed.forward
    default = _params("account_tx", account=ACCOUNT)
    assert isinstance(default, rq.HistoryParams)
    assert default.limit == 200
    assert _refused("account_tx").token == "invalidParams"
    assert _refused("account_tx", account="rBad").token == "actMalformed"
    assert _refused("account_tx", account=ACCOUNT, marker="x").token == "invalidParams"
    assert _refused("account_tx", account=ACCOUNT, marker={"ledger": 1}).token == "invalidParams"
    refused = _refused("account_tx", account=ACCOUNT, ledger_index_min=9, ledger_index_max=3)
    assert refused.token == "lgrIdxsInvalid"
    refused = _refused("account_tx", account=ACCOUNT, ledger_index=5, ledger_index_min=3)
    assert refused.token == "invalidParams"


def test_tx_nft_and_book_parameters() -> None:
    assert _params("tx", transaction=HASH) == rq.TxParams(bytes.fromhex(HASH), False, None, None)
    assert _refused("tx").token == "invalidParams"
    assert _refused("tx", transaction=HASH, min_ledger=5).token == "invalidParams"
    assert _refused("tx", transaction=HASH, min_ledger=5, max_ledger=4).token == "lgrIdxsInvalid"
    assert _refused("nft_info").token == "invalidParams"
    history = _params("nft_history", nft_id=HASH)
    assert isinstance(history, rq.HistoryParams)
    assert history.limit == 50
    listing = _params("nfts_by_issuer", issuer=ACCOUNT, nft_taxon=3, limit=500)
    assert isinstance(listing, rq.NftsByIssuerParams)
    assert (listing.taxon, listing.limit) == (3, 100)
    book = _params(
        "book_offers",
        taker_gets={"currency": "XRP"},
        taker_pays={"currency": "USD", "issuer": OTHER},
    )
    assert isinstance(book, rq.BookOffersParams)
    assert book.limit == 60
    usd = bytes(12) + b"USD" + bytes(5)
    assert book.book == keylets.book(usd, decode_account(OTHER), bytes(20), bytes(20))
    same = {"currency": "XRP"}
    assert _refused("book_offers", taker_gets=same, taker_pays=same).token == "invalidParams"
    assert _refused("book_offers", taker_gets=same).token == "invalidParams"
    bad_issuer = {"currency": "USD", "issuer": "rBad"}
    assert _refused("book_offers", taker_gets=same, taker_pays=bad_issuer).token == "invalidParams"


def test_websocket_messages() -> None:
    request_id, call = rq.parse_websocket_call('{"id": 7, "command": "tx", "transaction": "AB"}')
    assert request_id == 7
    assert (call.method, dict(call.params)) == ("tx", {"transaction": "AB"})
    for bad in ("[1]", "{nope", '{"id": 1}', '{"command": ""}'):
        with pytest.raises(MalformedRequestError):
            rq.parse_websocket_call(bad)
