"""``subscribe`` / ``unsubscribe`` parameters and the publisher's routing, without a server.

Parsing is pure (rippled's ``doSubscribe`` checks and errors); the publisher's subscriber index
and bounded outboxes are exercised with built messages (the store is not touched: reading
ledgers is the integration tests' part).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterable
from typing import Any

import pytest

from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.publisher import Publisher, Subscriber
from chainloom.ledger.api.streams import XRP_ISSUE, LedgerMessages, TransactionMessages
from chainloom.ledger.api.subscribe import parse_stream_request
from chainloom.ledger.xrpl.address import decode_account

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
ISSUER = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"
USD = {"currency": "USD", "issuer": ISSUER}
USD_ISSUE = (bytes(12) + b"USD" + bytes(5), decode_account(ISSUER))


def test_a_request_names_streams_accounts_and_books() -> None:
    request = parse_stream_request(
        {
            "streams": ["ledger", "transactions", "book_changes"],
            "accounts": [ACCOUNT, ACCOUNT],
            "books": [{"taker_pays": USD, "taker_gets": {"currency": "XRP"}, "both": True,
                       "snapshot": True, "taker": ACCOUNT}],
        }
    )  # fmt: skip
    assert request.streams == {"ledger", "transactions", "book_changes"}
    assert request.accounts == {decode_account(ACCOUNT)}
    (book,) = request.books
    assert book.book == (USD_ISSUE, XRP_ISSUE)  # in = taker_pays, out = taker_gets
    assert book.books() == ((USD_ISSUE, XRP_ISSUE), (XRP_ISSUE, USD_ISSUE))
    assert book.snapshot


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"streams": "ledger"}, "invalidParams"),
        ({"streams": [1]}, "malformedStream"),
        ({"streams": ["ledgers"]}, "malformedStream"),
        ({"streams": ["server"]}, "notSupported"),
        ({"streams": ["transactions_proposed"]}, "notSupported"),
        ({"accounts": ACCOUNT}, "invalidParams"),
        ({"accounts": []}, "actMalformed"),
        ({"accounts": [ACCOUNT, "rNotAnAddress"]}, "actMalformed"),
        ({"accounts_proposed": [ACCOUNT]}, "notSupported"),
        ({"url": "http://example.com/"}, "noPermission"),
        ({"books": {}}, "invalidParams"),
        ({"books": [{"taker_pays": USD}]}, "invalidParams"),
        ({"books": [{"taker_pays": "XRP", "taker_gets": USD}]}, "invalidParams"),
        ({"books": [{"taker_pays": {"currency": "US"}, "taker_gets": USD}]}, "srcCurMalformed"),
        ({"books": [{"taker_pays": {"currency": "USD"}, "taker_gets": {"currency": "XRP"}}]},
         "srcIsrMalformed"),
        ({"books": [{"taker_pays": {"currency": "XRP", "issuer": ISSUER}, "taker_gets": USD}]},
         "srcIsrMalformed"),
        ({"books": [{"taker_pays": USD, "taker_gets": {}}]}, "dstAmtMalformed"),
        ({"books": [{"taker_pays": {"currency": "XRP"}, "taker_gets": {"currency": "USD",
                                                                        "issuer": "x"}}]},
         "dstIsrMalformed"),
        ({"books": [{"taker_pays": USD, "taker_gets": USD}]}, "badMarket"),
        ({"books": [{"taker_pays": USD, "taker_gets": {"currency": "XRP"}, "taker": 5}]},
         "badIssuer"),
        ({"books": [{"taker_pays": USD, "taker_gets": {"currency": "XRP"}, "both": "yes"}]},
         "invalidParams"),
    ],
)  # fmt: skip
def test_refusals_are_rippleds(params: dict[str, Any], error: str) -> None:
    with pytest.raises(RpcError) as refused:
        parse_stream_request(params)
    assert refused.value.token == error


def _ledger(sequence: int, transactions: list[TransactionMessages]) -> LedgerMessages:
    return LedgerMessages(
        sequence=sequence,
        ledger_now={"ledger_index": sequence},
        ledger_closed=f"ledger {sequence}",
        book_changes=f"changes {sequence}",
        transactions=transactions,
    )


def _tx(name: str, accounts: set[bytes], books: Iterable[Any] = ()) -> TransactionMessages:
    return TransactionMessages(
        by_version={1: f"{name} v1", 2: f"{name} v2"},
        accounts=frozenset(accounts),
        books=frozenset(books),
    )


def _drain(subscriber: Subscriber) -> list[str]:
    found = []
    while not subscriber.outbox.empty():
        found.append(subscriber.outbox.get_nowait())
    return found


def test_the_publisher_routes_each_message_once_per_subscription_group() -> None:
    async def scenario() -> None:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            publisher = Publisher(None, pool)  # type: ignore[arg-type]  # never reads here
            alice, bob = decode_account(ACCOUNT), decode_account(ISSUER)
            everything, accounts, books, ledgers = (Subscriber(100) for _ in range(4))
            publisher.subscribe(everything, parse_stream_request({"streams": ["transactions"]}), 2)
            publisher.subscribe(accounts, parse_stream_request({"accounts": [ACCOUNT, ISSUER]}), 1)
            publisher.subscribe(
                books,
                parse_stream_request(
                    {"books": [{"taker_pays": USD, "taker_gets": {"currency": "XRP"}}]}
                ),
                2,
            )
            publisher.subscribe(ledgers, parse_stream_request(
                {"streams": ["ledger", "book_changes"]}), 2)  # fmt: skip
            await publisher.publish_messages(
                _ledger(5, [_tx("a", {alice, bob}, {(USD_ISSUE, XRP_ISSUE)}), _tx("b", set())])
            )
            assert _drain(everything) == ["a v2", "b v2"]
            assert _drain(accounts) == ["a v1"]  # once, though both its accounts match
            assert _drain(books) == ["a v2"]
            assert _drain(ledgers) == ["ledger 5", "changes 5"]
            assert publisher.newest == {"ledger_index": 5}

            publisher.unsubscribe(accounts, parse_stream_request({"accounts": [ACCOUNT]}))
            publisher.remove(books)
            await publisher.publish_messages(_ledger(6, [_tx("c", {alice}), _tx("d", {bob})]))
            assert _drain(accounts) == ["d v1"]
            assert _drain(books) == []

    asyncio.run(scenario())


def test_a_full_outbox_drops_its_subscriber_and_only_it() -> None:
    async def scenario() -> None:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            publisher = Publisher(None, pool)  # type: ignore[arg-type]
            slow, fast = Subscriber(3), Subscriber(100)
            for subscriber in (slow, fast):
                publisher.subscribe(subscriber, parse_stream_request({"streams": ["ledger"]}), 1)
            for sequence in range(1, 6):
                await publisher.publish_messages(_ledger(sequence, []))
            assert slow.dropped.is_set()
            assert slow.outbox.empty()
            assert publisher.dropped == 1
            assert _drain(fast) == [f"ledger {n}" for n in range(1, 6)]
            assert not slow.offer("more")  # a dropped subscriber takes nothing more

    asyncio.run(scenario())
