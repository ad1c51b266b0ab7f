"""The ledger-wide and server methods through xrpl-py's request models, and the refusals of every
method added (wrong types, forged markers, unknown accounts), over SQLite and Cassandra loaded
with the same history (``history`` in this package's conftest); the cache answers like the
database.
"""

from __future__ import annotations

from typing import Any

import pytest
from xrpl.core import binarycodec
from xrpl.models.currencies import XRP, IssuedCurrency
from xrpl.models.requests import (
    AMMInfo,
    Feature,
    GenericRequest,
    Ping,
    Random,
    TransactionEntry,
)

from chainloom.ledger.xrpl.hashing import transaction_id
from tests.ledger_api_support import (
    FIRST,
    UNKNOWN,
    Served,
    busiest,
    post,
)
from tests.unit.ledger.xrpl.test_jsonform import normalize_decoded

# ------------------------------------------------------------------------ ledger-wide methods


def test_transaction_entry_finds_a_transaction_only_in_its_ledger(history: Served) -> None:
    sequence = FIRST + 3
    txs = history.backend.fetch_all_transactions_in_ledger(sequence)
    assert txs
    for tx in txs[:5]:
        tx_hash = transaction_id(tx.transaction).hex().upper()
        result = history.ok(TransactionEntry(tx_hash=tx_hash, ledger_index=sequence))
        body = dict(result["tx_json"])
        assert result["hash"] == tx_hash
        assert normalize_decoded(body, ours=True) == normalize_decoded(
            binarycodec.decode(tx.transaction.hex())
        )
        assert (
            result["metadata"]["TransactionResult"]
            == binarycodec.decode(tx.metadata.hex())["TransactionResult"]
        )
        v1 = history.ok(TransactionEntry(tx_hash=tx_hash, ledger_index=sequence, api_version=1))
        assert v1["tx_json"]["hash"] == tx_hash
        assert "hash" not in v1
        wrong = TransactionEntry(tx_hash=tx_hash, ledger_index=sequence + 1)
        assert history.error(wrong) == "txnNotFound"


def test_ledger_index_finds_the_ledger_closed_by_a_date(history: Served) -> None:
    from chainloom.ledger.api.shapes import close_time_iso

    newest = history.ok(GenericRequest(method="ledger_index"))
    assert newest["ledger_index"] == history.last
    for sequence in (FIRST, FIRST + 4, history.last):
        header = history.backend.fetch_ledger_by_sequence(sequence)
        assert header is not None
        result = history.ok(
            GenericRequest(method="ledger_index", date=close_time_iso(header.close_time))
        )
        later = history.backend.fetch_ledger_by_sequence(result["ledger_index"] + 1)
        assert result["ledger_index"] >= sequence
        assert later is None or later.close_time > header.close_time
    assert (
        history.error(GenericRequest(method="ledger_index", date="2000-01-01T00:00:00Z"))
        == "lgrNotFound"
    )
    assert history.error(GenericRequest(method="ledger_index", date="yesterday")) == "invalidParams"


def test_server_methods(history: Served) -> None:
    assert history.call(Ping()).is_successful()
    first, second = history.ok(Random())["random"], history.ok(Random())["random"]
    assert len(first) == 64
    assert first != second
    version = history.ok(GenericRequest(method="version"))["version"]
    assert (version["first"], version["last"]) == (1, 3)
    features = history.ok(Feature())
    amendments_key = next(iter(history.state.of_type("Amendments")), None)
    if amendments_key is None:
        assert features["features"] == {}
    else:
        enabled = history.state.objects[amendments_key].get("Amendments", [])
        assert {k for k, v in features["features"].items() if v["enabled"]} == set(enabled)
    assert history.error(Feature(feature="NoSuchAmendment")) == "badFeature"


def test_amm_info_of_pools_that_do_not_exist(history: Served) -> None:
    gateway = busiest(history, 1)[0]
    usd = IssuedCurrency(currency="USD", issuer=gateway)
    assert not history.state.of_type("AMM")
    assert history.error(AMMInfo(asset=XRP(), asset2=usd)) == "actNotFound"
    assert history.error(AMMInfo(amm_account=gateway, api_version=2)) == "actMalformed"
    assert history.error(AMMInfo(amm_account=gateway, api_version=3)) == "actNotFound"
    assert history.error(AMMInfo(amm_account=UNKNOWN)) == "actNotFound"


# -------------------------------------------------------------------------------- refusals


NFT_ID = "00080000B4F4AFC5FBCBD76873F18006173D2193467D3EE70000099B00000000"

CALLS: dict[str, dict[str, Any]] = {
    "account_info": {"account": "A", "signer_lists": True},
    "account_lines": {"account": "A", "peer": "B", "limit": 10},
    "account_objects": {
        "account": "A",
        "type": "state",
        "limit": 10,
        "deletion_blockers_only": False,
    },
    "account_offers": {"account": "A", "limit": 10},
    "account_channels": {"account": "A", "destination_account": "B", "limit": 10},
    "account_currencies": {"account": "A"},
    "account_nfts": {"account": "A", "limit": 20},
    "gateway_balances": {"account": "A", "hotwallet": ["B"]},
    "noripple_check": {"account": "A", "role": "gateway", "transactions": True, "limit": 5},
    "deposit_authorized": {"source_account": "A", "destination_account": "B"},
    "nft_buy_offers": {"nft_id": NFT_ID, "limit": 50},
    "nft_sell_offers": {"nft_id": NFT_ID, "limit": 50},
    "book_changes": {},
    "transaction_entry": {"tx_hash": "AB" * 32},
    "ledger_index": {"date": "2026-01-01T00:00:00Z"},
    "feature": {"feature": "AMM"},
    "amm_info": {"asset": {"currency": "XRP"}, "asset2": {"currency": "USD", "issuer": "B"}},
    "get_aggregate_price": {
        "base_asset": "XRP",
        "quote_asset": "USD",
        "oracles": [{"account": "A", "oracle_document_id": 1}],
        "trim": 10,
    },
    "mpt_holders": {"mpt_issuance_id": "00" * 24, "limit": 10},
    "version": {},
    "ping": {},
    "random": {},
}
"""One well-formed call of each method added here (``A`` and ``B`` become real accounts)."""

ACCOUNT_FIELDS = {"account", "peer", "destination_account", "source_account"}
BOOL_FIELDS = {"signer_lists", "transactions", "deletion_blockers_only"}


def _filled(history: Served, params: dict[str, Any]) -> dict[str, Any]:
    a, b = busiest(history, 2)
    swap = {"A": a, "B": b}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return swap.get(value, value)
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    return {name: fill(value) for name, value in params.items()}


def test_every_method_added_is_registered_and_covered() -> None:
    from chainloom.ledger.api import requests as rq
    from chainloom.ledger.api.methods import METHODS

    assert set(CALLS) <= set(METHODS)
    # subscribe / unsubscribe are parsed like the others but answered by the WebSocket
    # connection itself (tests/integration/ledger/test_api_subscriptions.py).
    assert set(METHODS) | set(rq.WEBSOCKET_ONLY) == set(rq.PARSERS)
    assert not set(METHODS) & set(rq.WEBSOCKET_ONLY)


def test_each_well_formed_call_succeeds(history: Served) -> None:
    for method, params in CALLS.items():
        status, result = post(history, method, _filled(history, params))
        if method in (
            "mpt_holders",
            "get_aggregate_price",
            "transaction_entry",
            "amm_info",
            "feature",
            "nft_buy_offers",
            "nft_sell_offers",
        ):
            assert result["status"] == "error", (method, result)  # nothing of that name stored
            assert status < 500, (method, result)
            continue
        assert (status, result["status"]) == (200, "success"), (method, result)


@pytest.mark.parametrize("api_version", [1, 2, 3])
def test_wrong_types_for_every_parameter_are_rippled_errors(
    history: Served, api_version: int
) -> None:
    wrong_values: list[Any] = [17, -1, "not-a-value", ["x"], {"x": 1}, True, None, 1.5]
    checked = 0
    for method, params in CALLS.items():
        filled = _filled(history, params)
        _, well_formed = post(history, method, {**filled, "api_version": api_version})
        baseline = well_formed.get("error")  # a call that is well formed but finds nothing
        for name in [*filled, "ledger_index", "ledger_hash"]:
            for wrong in wrong_values:
                if wrong is None or filled.get(name) == wrong:
                    continue
                if (
                    name == "limit"
                    and isinstance(wrong, int)
                    and not isinstance(wrong, bool)
                    and wrong > 0
                ):
                    continue  # any positive limit is clamped, not refused
                if name == "ledger_index" and wrong == -1:
                    continue
                call = {**filled, name: wrong, "api_version": api_version}
                status, result = post(history, method, call)
                assert status != 500, (method, name, wrong, result)
                if method == "ledger_index" and name != "date":
                    continue  # Clio's ledger_index takes only a date
                if method in ("ping", "random", "version"):
                    continue  # no parameters: anything given is ignored, as rippled does
                if method == "book_changes" and name not in (
                    "ledger_index",
                    "ledger_hash",
                ):
                    continue  # parameters these methods do not have are ignored, as rippled does
                if result["status"] == "success":
                    assert isinstance(wrong, bool), (method, name, wrong)  # a bool field, flipped
                    assert name in BOOL_FIELDS, (method, name, wrong)
                    continue
                error = result["error"]
                if baseline is not None and error == baseline and name in ("trim", "limit"):
                    continue  # a valid value of that field: the call finds nothing, as before
                if name in ACCOUNT_FIELDS:
                    assert error == "actMalformed", (method, name, wrong, result)
                elif name == "oracles":
                    assert error in ("oracleMalformed", "invalidParams"), (method, name, result)
                elif name == "feature":
                    assert error in ("badFeature", "invalidParams"), (method, name, wrong, result)
                elif name == "hotwallet":
                    assert error == "invalidHotWallet", (method, name, wrong, result)
                else:
                    assert error in ("invalidParams", "lgrNotFound"), (method, name, wrong, result)
                checked += 1
    assert checked > 200


def test_forged_markers_are_invalid_params(history: Served) -> None:
    account = busiest(history, 1)[0]
    state_key = next(iter(history.state.of_type("RippleState")))
    forged = [
        "",
        "nonsense",
        "AB" * 32,
        f"{'AB' * 32},0",
        f"{'AB' * 32},99",
        f"{state_key},7",
        f"{'ZZ' * 32},0",
        f"{state_key},-1",
        f"{state_key},{1 << 70}",
        12,
        {"ledger": 1},
    ]
    for method in ("account_lines", "account_objects", "account_offers", "account_channels"):
        for marker in forged:
            status, result = post(history, method, {"account": account, "marker": marker})
            assert status == 400, (method, marker, result)
            assert result["error"] == "invalidParams", (method, marker, result)
    for method, params in (
        ("account_nfts", {"account": account}),
        ("nft_sell_offers", {"nft_id": NFT_ID}),
    ):
        for marker in ("AB" * 32, "short", 7):
            status, result = post(history, method, {**params, "marker": marker})
            assert status < 500, (method, marker, result)
            assert result["error"] in ("invalidParams", "objectNotFound"), (method, result)


def test_unknown_accounts_are_act_not_found(history: Served) -> None:
    for method in (
        "account_info",
        "account_lines",
        "account_objects",
        "account_offers",
        "account_channels",
        "account_currencies",
        "account_nfts",
        "gateway_balances",
    ):
        status, result = post(history, method, {"account": UNKNOWN})
        assert (status, result["error"]) == (200, "actNotFound"), (method, result)
    status, result = post(history, "noripple_check", {"account": UNKNOWN, "role": "user"})
    assert result["error"] == "actNotFound"


# ------------------------------------------------------------------------------------ cache


def test_the_cache_answers_like_the_database(history: Served) -> None:
    from chainloom.ledger.api import params as pm
    from chainloom.ledger.api.methods import Context, answer
    from chainloom.ledger.cache import LedgerCache

    cache = LedgerCache()
    cache.update(history.backend)
    assert cache.sequence == history.last
    keys = [bytes.fromhex(k) for k in history.state.objects]
    assert cache.read(keys, history.last) == [
        bytes.fromhex(history.state.blobs[k.hex().upper()]) for k in keys
    ]
    assert cache.read(keys, history.last - 1) is None
    cached = Context(backend=history.backend, cache=cache)
    bare = Context(backend=history.backend, cache=None)
    for account in busiest(history, 3):
        call = pm.parse_directory_listing({"account": account})
        assert answer(cached, "account_lines", call, 2) == answer(bare, "account_lines", call, 2)
        info = pm.parse_account_info({"account": account})
        assert answer(cached, "account_info", info, 2) == answer(bare, "account_info", info, 2)
    cache.close()
