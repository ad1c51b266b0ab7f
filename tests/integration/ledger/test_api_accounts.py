"""The ``account_*``, NFT-offer and issuer methods through xrpl-py's request models, over SQLite and
Cassandra loaded with the same history (``history`` in this package's conftest), checked against
the model of the newest ledger (``tests.ledger_api_support.State``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from typing import Any

from xrpl.models.requests import (
    AccountChannels,
    AccountCurrencies,
    AccountInfo,
    AccountLines,
    AccountNFTs,
    AccountObjects,
    AccountObjectType,
    AccountOffers,
    DepositAuthorized,
    GatewayBalances,
    NFTBuyOffers,
    NFTSellOffers,
    NoRippleCheck,
    NoRippleCheckRole,
)

from tests.ledger_api_support import (
    FIRST,
    LSF_DEFAULT_RIPPLE,
    UNKNOWN,
    Served,
    busiest,
    pages,
    state_at,
)
from tests.unit.ledger.xrpl.test_jsonform import normalize_decoded

# ------------------------------------------------------------------------------ account_info


def test_account_info_of_every_account_equals_its_account_root(history: Served) -> None:
    roots = history.state.of_type("AccountRoot")
    assert len(roots) > 20
    for key, root in roots.items():
        result = history.ok(AccountInfo(account=root["Account"], ledger_index="validated"))
        data = dict(result["account_data"])
        assert data.pop("index") == key
        assert normalize_decoded(data, ours=True) == normalize_decoded(root)
        assert result["ledger_index"] == history.last
        assert result["validated"] is True
        flags = result["account_flags"]
        assert flags["defaultRipple"] == bool(root["Flags"] & LSF_DEFAULT_RIPPLE)
        assert flags["requireDestinationTag"] == bool(root["Flags"] & 0x00020000)


def test_account_info_signer_lists_move_to_the_root_from_version_2(history: Served) -> None:
    account = history.state.accounts()[0]
    v1 = history.ok(AccountInfo(account=account, signer_lists=True, api_version=1))
    assert v1["account_data"]["signer_lists"] == []
    assert "signer_lists" not in v1
    v2 = history.ok(AccountInfo(account=account, signer_lists=True, api_version=2))
    assert v2["signer_lists"] == []
    assert "signer_lists" not in v2["account_data"]


def test_account_info_at_an_older_ledger_sees_that_ledger(history: Served) -> None:
    older = state_at(history.backend, FIRST + 2)
    root = next(iter(older.of_type("AccountRoot").values()))
    result = history.ok(AccountInfo(account=root["Account"], ledger_index=FIRST + 2))
    assert result["ledger_index"] == FIRST + 2
    assert result["account_data"]["Balance"] == root["Balance"]


# ----------------------------------------------------------------------------- account_lines


def _line_key(line: dict[str, Any]) -> tuple[Any, ...]:
    return (
        line["account"],
        line["currency"],
        Decimal(str(line["balance"])),
        Decimal(str(line["limit"])),
        Decimal(str(line["limit_peer"])),
        line["no_ripple"],
    )


def test_account_lines_pages_hold_every_line_once(history: Served) -> None:
    checked = 0
    for account in busiest(history, 4):
        expected = sorted(_line_key(line) for line in history.state.lines_of(account))
        rows = pages(
            history, lambda m, a=account: AccountLines(account=a, limit=10, marker=m), "lines"
        )
        assert sorted(_line_key(row) for row in rows) == expected
        checked += len(expected)
        if expected:
            peer = expected[0][0]
            only = history.ok(AccountLines(account=account, peer=peer, limit=400))
            assert {row["account"] for row in only["lines"]} == {peer}
            assert only["peer"] == peer
    assert checked > 10


def test_account_currencies_follow_balances_and_limits(history: Served) -> None:
    for account in busiest(history, 4):
        receive, send = set(), set()
        for line in history.state.lines_of(account):
            if line["balance"] < line["limit"]:
                receive.add(line["currency"])
            if -line["balance"] < line["limit_peer"]:
                send.add(line["currency"])
        result = history.ok(AccountCurrencies(account=account))
        assert set(result["receive_currencies"]) == receive
        assert set(result["send_currencies"]) == send


# --------------------------------------------------------------------------- account_objects


def test_account_objects_pages_list_the_owner_directory_and_nft_pages(history: Served) -> None:
    from chainloom.ledger.xrpl.address import decode_account

    for account in busiest(history, 4):
        expected = history.state.owned(account) | set(
            history.state.nft_pages(decode_account(account))
        )
        rows = pages(
            history,
            lambda m, a=account: AccountObjects(account=a, limit=10, marker=m),
            "account_objects",
        )
        keys = [row["index"] for row in rows]
        assert len(keys) == len(set(keys))
        assert set(keys) == expected
        for row in rows:
            stored = dict(row)
            del stored["index"]
            decoded = history.state.objects[row["index"]]
            assert normalize_decoded(stored, ours=True) == normalize_decoded(decoded)
        only = pages(
            history,
            lambda m, a=account: AccountObjects(
                account=a, type=AccountObjectType.STATE, limit=10, marker=m
            ),
            "account_objects",
        )
        assert {row["index"] for row in only} == {
            k for k in expected if history.state.objects[k]["LedgerEntryType"] == "RippleState"
        }


def _canon(amount: Any, *, ours: bool = False) -> str:
    return json.dumps(normalize_decoded(amount, ours=ours), sort_keys=True, default=str)


def test_account_offers_are_the_offers_the_account_created(history: Served) -> None:
    offers = history.state.of_type("Offer")
    owners = sorted({offer["Account"] for offer in offers.values()})
    assert owners
    for account in owners[:5]:
        expected = sorted(
            (o["Sequence"], _canon(o["TakerGets"]), _canon(o["TakerPays"]))
            for o in offers.values()
            if o["Account"] == account
        )
        rows = pages(
            history, lambda m, a=account: AccountOffers(account=a, limit=10, marker=m), "offers"
        )
        got = sorted(
            (row["seq"], _canon(row["taker_gets"], ours=True), _canon(row["taker_pays"], ours=True))
            for row in rows
        )
        assert got == expected
        assert all(Decimal(row["quality"]) > 0 for row in rows)


def test_account_channels_list_the_pay_channels_the_account_opened(history: Served) -> None:
    channels = history.state.of_type("PayChannel")
    for account in busiest(history, 3):
        result = history.ok(AccountChannels(account=account))
        assert {c["channel_id"] for c in result["channels"]} == {
            k for k, c in channels.items() if c["Account"] == account
        }


# ------------------------------------------------------------------------------------- NFTs


def test_account_nfts_pages_hold_every_token_of_the_pages(history: Served) -> None:
    from chainloom.ledger.xrpl.address import decode_account

    holders = sorted({key[:40] for key in history.state.of_type("NFTokenPage")})
    assert holders, "the generated history mints NFTs"
    from chainloom.ledger.xrpl.address import encode_account

    for prefix in holders[:4]:
        account = encode_account(bytes.fromhex(prefix))
        expected = [
            token["NFToken"]["NFTokenID"]
            for key in history.state.nft_pages(decode_account(account))
            for token in history.state.objects[key]["NFTokens"]
        ]
        rows = pages(
            history, lambda m, a=account: AccountNFTs(account=a, limit=20, marker=m), "account_nfts"
        )
        assert [row["NFTokenID"] for row in rows] == expected
        for row in rows:
            token = bytes.fromhex(row["NFTokenID"])
            assert row["Issuer"] == encode_account(token[4:24])
            assert row["nft_serial"] == int.from_bytes(token[28:32], "big")


def test_nft_offers_are_the_offers_of_the_token(history: Served) -> None:
    checked = 0
    for sequence in range(history.last, FIRST, -1):
        state = state_at(history.backend, sequence) if sequence != history.last else history.state
        offers = state.of_type("NFTokenOffer")
        by_token: dict[tuple[str, bool], set[str]] = defaultdict(set)
        for key, offer in offers.items():
            by_token[(offer["NFTokenID"], bool(offer["Flags"] & 1))].add(key)
        for (token, sell), keys in list(by_token.items())[:4]:
            model: Any = NFTSellOffers if sell else NFTBuyOffers
            result = history.ok(model(nft_id=token, ledger_index=sequence))
            assert "marker" not in result
            rows = result["offers"]
            assert {row["nft_offer_index"] for row in rows} == keys
            for row in rows:
                assert row["owner"] == offers[row["nft_offer_index"]]["Owner"]
                assert row["amount"] == offers[row["nft_offer_index"]]["Amount"]
            other: Any = NFTBuyOffers if sell else NFTSellOffers
            if (token, not sell) not in by_token:
                assert history.error(other(nft_id=token, ledger_index=sequence)) == "objectNotFound"
            checked += 1
        if checked >= 4:
            break
    assert checked > 0, "the generated history creates NFT sell offers"


# ---------------------------------------------------------------------------- issuer methods


def test_gateway_balances_sum_what_the_gateway_issued(history: Served) -> None:
    for account in busiest(history, 3):
        obligations: dict[str, Decimal] = defaultdict(Decimal)
        assets: dict[str, set[str]] = defaultdict(set)
        for line in history.state.lines_of(account):
            if line["balance"] < 0:
                obligations[line["currency"]] += -line["balance"]
            elif line["balance"] > 0:
                assets[line["account"]].add(line["currency"])
        result = history.ok(GatewayBalances(account=account))
        got = {c: Decimal(v) for c, v in result.get("obligations", {}).items()}
        assert got == dict(obligations)
        assert {
            p: {a["currency"] for a in rows} for p, rows in result.get("assets", {}).items()
        } == dict(assets)


def test_noripple_check_names_every_line_to_fix(history: Served) -> None:
    for account in busiest(history, 3):
        lines = history.state.lines_of(account)
        root = next(
            r for r in history.state.of_type("AccountRoot").values() if r["Account"] == account
        )
        default_ripple = bool(root["Flags"] & LSF_DEFAULT_RIPPLE)
        gateway = history.ok(
            NoRippleCheck(
                account=account, role=NoRippleCheckRole.GATEWAY, transactions=True, limit=500
            )
        )
        to_clear = [line for line in lines if line["no_ripple"]]
        assert len(gateway["problems"]) == len(to_clear) + (0 if default_ripple else 1)
        assert len(gateway["transactions"]) == len(gateway["problems"])
        sequences = [tx["Sequence"] for tx in gateway["transactions"]]
        assert sequences == list(range(root["Sequence"], root["Sequence"] + len(sequences)))
        user = history.ok(NoRippleCheck(account=account, role=NoRippleCheckRole.USER, limit=500))
        to_set = [line for line in lines if not line["no_ripple"]]
        assert len(user["problems"]) == len(to_set) + (1 if default_ripple else 0)


def test_deposit_authorized_between_accounts(history: Served) -> None:
    accounts = history.state.accounts()
    result = history.ok(
        DepositAuthorized(source_account=accounts[0], destination_account=accounts[1])
    )
    roots = {r["Account"]: r for r in history.state.of_type("AccountRoot").values()}
    assert result["deposit_authorized"] == (not roots[accounts[1]]["Flags"] & 0x01000000)
    assert (
        history.error(DepositAuthorized(source_account=UNKNOWN, destination_account=accounts[1]))
        == "srcActNotFound"
    )
    assert (
        history.error(DepositAuthorized(source_account=accounts[0], destination_account=UNKNOWN))
        == "dstActNotFound"
    )
