"""Subscriptions of ``chainloom ledger api``, fed by the ETL as it commits each ledger.

A store holds ledger 38129's real state; the API serves it and clients subscribe through
xrpl-py's ``WebsocketClient`` and typed ``Subscribe`` requests; then the ETL loads the generated
ledgers after it (the package's shared history) and announces each one, in process or through
Redis from another process (the stack's, and a private one asking for TLS and an ACL login).
Every subscriber must receive every ledger and every transaction exactly once, in ledger and
``TransactionIndex`` order, as the dump holds them (:mod:`tests.ledger_stream_support` reads
the expectation from the dump with xrpl-py).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import SecretStr
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from xrpl.core import binarycodec
from xrpl.models.currencies import XRP, IssuedCurrency
from xrpl.models.requests import StreamParameter, Unsubscribe
from xrpl.models.requests.subscribe import SubscribeBook

from chainloom.ledger.api.server import ApiOptions, ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, LedgerSettings, SqliteSettings
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.feed import LedgerFeed, LocalFeed
from chainloom.ledger.feed_redis import RedisFeed, feed_from
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.xrpl import keylets
from chainloom.settings import CassandraSettings, RedisSettings, load_settings
from tests.ledger_api_support import FIRST, LEDGERS
from tests.ledger_stream_support import (
    Collector,
    ExpectedHistory,
    collectors,
    expected_history,
    got_ledger,
)
from tests.secured_support import PrivateStack
from tests.unit.ledger.xrpl.test_jsonform import normalize_decoded

LAST = FIRST + LEDGERS
LEDGER_AND_TRANSACTIONS = [StreamParameter.LEDGER, StreamParameter.TRANSACTIONS]


@pytest.fixture(scope="module")
def expected(history_dump: Path) -> ExpectedHistory:
    return expected_history(history_dump)


@dataclass
class Stage:
    """A store with the first ledger, served; :meth:`load` runs the ETL in this process."""

    dump: Path
    config: DatabaseSettings
    backend: BackendInterface
    url: str
    feed: LedgerFeed

    def load(self, stop: int | None = None) -> None:
        backend = make_backend(self.config)
        source = FileLedgerSource(self.dump)
        try:
            LedgerEtl(backend, source, feed=self.feed).run(stop=stop)
        finally:
            backend.close()
            source.close()


def _store(dump: Path, directory: Path, config: DatabaseSettings | None = None) -> DatabaseSettings:
    """A store holding the dump's first ledger (SQLite in ``directory`` unless ``config``)."""
    if config is None:
        config = DatabaseSettings(
            type="sqlite", sqlite=SqliteSettings(path=str(directory / "ledger.db"))
        )
    backend = make_backend(config)
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run(stop=FIRST)
    finally:
        backend.close()
        source.close()
    return config


def _serve(
    dump: Path, config: DatabaseSettings, feed: LedgerFeed, options: ApiOptions | None = None
) -> Iterator[Stage]:
    backend = make_backend(config.model_copy(update={"read_only": True}))
    server = ServerThread(backend, options, feed=feed)
    port = server.start()
    try:
        yield Stage(dump, config, backend, f"ws://127.0.0.1:{port}/", feed)
    finally:
        server.stop()
        backend.close()


@pytest.fixture
def stage(history_dump: Path, tmp_path: Path) -> Iterator[Stage]:
    """The API and the ETL in one process, the ETL announcing through a :class:`LocalFeed`."""
    yield from _serve(history_dump, _store(history_dump, tmp_path), LocalFeed())


def _ledgers(collector: Collector) -> list[tuple[int, str, int]]:
    return [
        (message["ledger_index"], message["ledger_hash"], message["txn_count"])
        for message in collector.of_type("ledgerClosed")
    ]


def _transactions(collector: Collector) -> list[tuple[int, str]]:
    return [
        (message["ledger_index"], message.get("hash") or message["transaction"]["hash"])
        for message in collector.of_type("transaction")
    ]


def _in_order(expected: ExpectedHistory) -> list[tuple[int, str]]:
    return [(tx.ledger_index, tx.hash) for tx in expected.transactions]


# ------------------------------------------------------------------------ every ledger, once


def test_every_ledger_and_transaction_reaches_every_subscriber_once_in_order(
    stage: Stage, expected: ExpectedHistory
) -> None:
    with collectors(stage.url, 2) as (first, second):
        answer = first.subscribe(streams=LEDGER_AND_TRANSACTIONS)
        assert answer["ledger_index"] == FIRST  # the newest stored ledger when subscribing
        assert answer["validated_ledgers"] == f"{FIRST}-{FIRST}"
        second.subscribe(streams=LEDGER_AND_TRANSACTIONS, api_version=1)
        stage.load()
        for collector in (first, second):
            collector.wait_for(got_ledger(LAST, len(expected.transactions)))
            assert _ledgers(collector) == expected.ledgers
            assert _transactions(collector) == _in_order(expected)

        by_hash = {tx.hash: tx for tx in expected.transactions}
        for message in first.of_type("transaction"):  # api_version 2: tx_json beside hash
            tx = by_hash[message["hash"]]
            assert message["validated"] is True
            assert message["status"] == "closed"
            assert message["engine_result"] == tx.result
            assert message["meta"]["TransactionIndex"] == tx.index
            body = {k: v for k, v in message["tx_json"].items() if k != "date"}
            assert normalize_decoded(body, ours=True) == normalize_decoded(tx.tx)
        for message in second.of_type("transaction"):  # api_version 1: transaction with hash
            assert "tx_json" not in message
            assert by_hash[message["transaction"]["hash"]].result == message["engine_result"]
        success = first.of_type("transaction")[0]
        assert success["engine_result_code"] == 0 or success["engine_result"] != "tesSUCCESS"
        closed = first.of_type("ledgerClosed")[-1]
        header = stage.backend.fetch_ledger_by_sequence(LAST)
        assert header is not None
        assert closed["ledger_time"] == header.close_time
        assert closed["validated_ledgers"] == f"{FIRST}-{LAST}"
        fee_settings = stage.backend.fetch_ledger_object(keylets.fee_settings(), LAST)
        if fee_settings is None:  # ledger 38129's era: no FeeSettings object yet
            assert "fee_base" not in closed
        else:
            fees = binarycodec.decode(fee_settings.hex())
            assert closed["fee_base"] == int(fees.get("BaseFeeDrops") or fees["BaseFee"], 16)


def test_book_changes_stream_sends_one_message_per_ledger(
    stage: Stage, expected: ExpectedHistory
) -> None:
    # xrpl-py 4 has no book_changes stream parameter: a plain WebSocket client subscribes.
    with connect(stage.url, max_size=None) as client:
        answer = _call(client, {"command": "subscribe", "streams": ["book_changes"]})
        assert answer["status"] == "success"
        stage.load()
        changes = [orjson.loads(client.recv(timeout=30)) for _ in range(LEDGERS)]
    assert [(m["type"], m["ledger_index"], m["ledger_hash"]) for m in changes] == [
        ("bookChanges", sequence, ledger_hash) for sequence, ledger_hash, _ in expected.ledgers
    ]
    assert all(isinstance(m["changes"], list) for m in changes)


def _call(client: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One request on a plain WebSocket client and its answer."""
    client.send(orjson.dumps({"id": 1, **request}).decode())
    answer: dict[str, Any] = orjson.loads(client.recv(timeout=30))
    return answer


def test_without_a_feed_the_range_refresh_publishes_every_ledger(
    history_dump: Path, tmp_path: Path, expected: ExpectedHistory
) -> None:
    config = _store(history_dump, tmp_path)
    silent = LocalFeed()  # the API listens to it; the ETL below announces nothing
    for stage in _serve(history_dump, config, silent):
        with collectors(stage.url, 1) as (collector,):
            collector.subscribe(streams=LEDGER_AND_TRANSACTIONS)
            backend = make_backend(config)
            source = FileLedgerSource(history_dump)
            try:
                LedgerEtl(backend, source).run()
            finally:
                backend.close()
                source.close()
            collector.wait_for(got_ledger(LAST, len(expected.transactions)))
            assert _ledgers(collector) == expected.ledgers
            assert _transactions(collector) == _in_order(expected)


# ------------------------------------------------------------------------ filters


def test_accounts_stream_sends_only_the_transactions_affecting_the_accounts(
    stage: Stage, expected: ExpectedHistory
) -> None:
    counts: dict[str, int] = {}
    for tx in expected.transactions:
        for account in tx.accounts:
            counts[account] = counts.get(account, 0) + 1
    busiest = sorted(counts, key=lambda account: (-counts[account], account))
    watched = busiest[3:5]  # active accounts, but not in every transaction
    wanted = [
        (tx.ledger_index, tx.hash) for tx in expected.transactions if tx.accounts & set(watched)
    ]
    assert 0 < len(wanted) < len(expected.transactions)
    with collectors(stage.url, 1) as (collector,):
        collector.subscribe(accounts=watched)
        stage.load()
        collector.wait_for(lambda c: len(c.of_type("transaction")) >= len(wanted))
        assert _transactions(collector) == wanted  # once each, even when both accounts match


def test_books_stream_sends_the_transactions_touching_the_book(
    stage: Stage, expected: ExpectedHistory
) -> None:
    books: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for tx in expected.transactions:
        for pays, gets in tx.books:
            books.setdefault((pays, gets), []).append((tx.ledger_index, tx.hash))
    (pays, gets), wanted = max(books.items(), key=lambda item: len(item[1]))
    wanted = sorted(set(wanted), key=wanted.index)
    with collectors(stage.url, 1) as (collector,):
        answer = collector.subscribe(
            books=[
                SubscribeBook(
                    taker_pays=_currency(pays), taker_gets=_currency(gets),
                    taker=_any_account(expected), snapshot=True,
                )
            ]
        )  # fmt: skip
        assert isinstance(answer["offers"], list)
        stage.load()
        collector.wait_for(lambda c: len(c.of_type("transaction")) >= len(wanted))
        assert _transactions(collector) == wanted


def _currency(asset: str) -> XRP | IssuedCurrency:
    if asset == "XRP":
        return XRP()
    issuer, currency = asset.split("/")
    return IssuedCurrency(currency=currency, issuer=issuer)


def _any_account(expected: ExpectedHistory) -> str:
    return sorted(expected.transactions[0].accounts)[0]


def test_unsubscribe_stops_delivery(stage: Stage, expected: ExpectedHistory) -> None:
    middle = FIRST + 3
    with collectors(stage.url, 2) as (leaving, staying):
        for collector in (leaving, staying):
            collector.subscribe(streams=[StreamParameter.LEDGER])
        stage.load(stop=middle)
        leaving.wait_for(got_ledger(middle, 0))
        leaving.request(Unsubscribe(streams=[StreamParameter.LEDGER]))
        stage.load()
        staying.wait_for(got_ledger(LAST, 0))
        assert [m[0] for m in _ledgers(staying)] == list(range(FIRST + 1, LAST + 1))
        assert [m[0] for m in _ledgers(leaving)] == list(range(FIRST + 1, middle + 1))


# ------------------------------------------------------------------------ a slow client


def _slow_socket(port: int) -> socket.socket:
    """A client socket that takes little at a time: small receive buffer and segments, so the
    server's kernel buffers fill after a few messages."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    sock.connect(("127.0.0.1", port))
    return sock


def test_a_slow_client_is_dropped_and_the_others_get_everything(
    history_dump: Path, tmp_path: Path, expected: ExpectedHistory
) -> None:
    config = _store(history_dump, tmp_path)
    options = ApiOptions(ws_queue_limit=8)
    for stage in _serve(history_dump, config, LocalFeed(), options):
        port = int(stage.url.rsplit(":", 1)[1].strip("/"))
        with connect(stage.url, sock=_slow_socket(port), max_size=None) as slow:
            slow.send('{"id": 1, "command": "subscribe", "streams": ["transactions"]}')
            assert '"status":"success"' in str(slow.recv(timeout=10))
            with collectors(stage.url, 1) as (fast,):
                fast.subscribe(streams=LEDGER_AND_TRANSACTIONS)
                stage.load()  # the slow client reads nothing meanwhile
                fast.wait_for(got_ledger(LAST, len(expected.transactions)))
                assert _transactions(fast) == _in_order(expected)
            received, closed = _read_until_closed(slow)
            assert closed.rcvd is not None
            assert closed.rcvd.code == 1008
            assert closed.rcvd.reason == "Policy error: client is too slow."
            assert received < len(expected.transactions)


def _read_until_closed(client: Any) -> tuple[int, ConnectionClosed]:
    """Messages read before the server closed the connection, and how it closed it."""
    received = 0
    while True:
        try:
            client.recv(timeout=30)
        except ConnectionClosed as closed:
            return received, closed
        received += 1


# ------------------------------------------------------------------------ over Cassandra


def test_over_cassandra_every_ledger_and_transaction_arrives_once_in_order(
    history_dump: Path,
    tmp_path: Path,
    expected: ExpectedHistory,
    cassandra_address: tuple[str, int],
    cassandra_keyspace: str,
) -> None:
    host, port = cassandra_address
    cassandra = DatabaseSettings(
        type="cassandra",
        cassandra=CassandraSettings(
            hosts=(host,), port=port, keyspace=cassandra_keyspace, replication_factor=1
        ),
    )
    config = _store(history_dump, tmp_path, cassandra)
    for stage in _serve(history_dump, config, LocalFeed()):
        with collectors(stage.url, 2) as subscribers:
            for collector in subscribers:
                collector.subscribe(streams=LEDGER_AND_TRANSACTIONS)
            stage.load()
            for collector in subscribers:
                collector.wait_for(got_ledger(LAST, len(expected.transactions)), timeout=180)
                assert _ledgers(collector) == expected.ledgers
                assert _transactions(collector) == _in_order(expected)


# ------------------------------------------------------------------------ through Redis


def test_through_redis_the_etl_in_another_process_reaches_every_subscriber(
    history_dump: Path, tmp_path: Path, expected: ExpectedHistory, redis_url: str
) -> None:
    config = _store(history_dump, tmp_path)
    channel = f"test:{uuid.uuid4().hex}"
    feed = RedisFeed(RedisSettings(url=SecretStr(redis_url)), channel)
    options = ApiOptions(range_refresh_seconds=3600.0)  # only the feed announces ledgers
    for stage in _serve(history_dump, config, feed, options):
        with collectors(stage.url, 2) as subscribers:
            for collector in subscribers:
                collector.subscribe(streams=LEDGER_AND_TRANSACTIONS)
            loaded = subprocess.run(
                [
                    sys.executable, "-m", "chainloom", "ledger", "load", str(history_dump),
                    "--sqlite-path", config.sqlite.path, "--quiet",
                    "--feed-redis", redis_url, "--feed-channel", channel,
                ],
                capture_output=True, text=True, timeout=300, env=os.environ.copy(),
                check=False,
            )  # fmt: skip
            assert loaded.returncode == 0, loaded.stderr
            for collector in subscribers:
                collector.wait_for(got_ledger(LAST, len(expected.transactions)))
                assert _ledgers(collector) == expected.ledgers
                assert _transactions(collector) == _in_order(expected)


def test_through_a_secured_redis_tls_and_an_acl_user_the_feed_still_delivers(
    history_dump: Path,
    tmp_path: Path,
    expected: ExpectedHistory,
    secured_redis: PrivateStack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The feed set by ``CHAINLOOM_FEED__REDIS__...`` alone (no flags): rediss:// with the test
    CA and a client certificate, the ACL user's password from its file."""
    extra = secured_redis.extra("redis")
    host, _ = secured_redis.address("redis")
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    for name, value in {
        "URL": f"rediss://{host}:{extra['tls_port']}/0",
        "USERNAME": extra["acl_user"],
        "PASSWORD_FILE": extra["password_file"],
        "TLS__CA_FILE": extra["ca_file"],
        "TLS__CERT_FILE": extra["client_cert"],
        "TLS__KEY_FILE": extra["client_key"],
        "KEY_PREFIX": prefix,
    }.items():
        monkeypatch.setenv(f"CHAINLOOM_FEED__REDIS__{name}", value)
    feed = feed_from(load_settings(LedgerSettings).feed)
    assert feed is not None
    assert feed.redis.uses_tls
    assert feed.channel == f"{prefix}:ledger:committed"
    config = _store(history_dump, tmp_path)
    options = ApiOptions(range_refresh_seconds=3600.0)  # only the feed announces ledgers
    for stage in _serve(history_dump, config, feed, options):
        with collectors(stage.url, 2) as subscribers:
            for collector in subscribers:
                collector.subscribe(streams=LEDGER_AND_TRANSACTIONS)
            loaded = subprocess.run(
                [
                    sys.executable, "-m", "chainloom", "ledger", "load", str(history_dump),
                    "--sqlite-path", config.sqlite.path, "--quiet",
                ],
                capture_output=True, text=True, timeout=300, env=os.environ.copy(),
                check=False,
            )  # fmt: skip
            assert loaded.returncode == 0, loaded.stderr
            assert "ledger feed" not in loaded.stderr  # every announcement was taken
            for collector in subscribers:
                collector.wait_for(got_ledger(LAST, len(expected.transactions)))
                assert _ledgers(collector) == expected.ledgers
                assert _transactions(collector) == _in_order(expected)


# ------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"streams": ["ledger", "nonsense"]}, "malformedStream"),
        ({"streams": [7]}, "malformedStream"),
        ({"streams": "ledger"}, "invalidParams"),
        ({"streams": ["validations"]}, "notSupported"),
        ({"accounts": ["not an address"]}, "actMalformed"),
        ({"accounts": []}, "actMalformed"),
        ({"books": [{"taker_pays": {"currency": "XRP"}, "taker_gets": {"currency": "XRP"}}]},
         "badMarket"),
        ({"books": [{"taker_pays": {"currency": "XRPX"}, "taker_gets": {"currency": "XRP"}}]},
         "srcCurMalformed"),
        ({"books": [{"taker_pays": {"currency": "USD"}, "taker_gets": {"currency": "XRP"}}]},
         "srcIsrMalformed"),
        ({"books": [{"taker_pays": {"currency": "XRP"}, "taker_gets": {"currency": 5}}]},
         "dstAmtMalformed"),
        ({"books": [{"taker_pays": {"currency": "XRP"}}]}, "invalidParams"),
    ],
)  # fmt: skip
def test_malformed_subscriptions_get_rippleds_errors(
    stage: Stage, fields: dict[str, Any], error: str
) -> None:
    with connect(stage.url) as client:
        answer = _call(client, {"command": "subscribe", **fields})
        assert answer["status"] == "error"
        assert answer["error"] == error
        assert answer["type"] == "response"
        assert _call(client, {"command": "ping"})["status"] == "success"


def test_subscribe_over_http_needs_a_websocket(stage: Stage) -> None:
    body = orjson.dumps({"method": "subscribe", "params": [{"streams": ["ledger"]}]})
    http_url = stage.url.replace("ws://", "http://")
    request = urllib.request.Request(http_url, body, {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert orjson.loads(refused.value.read())["result"]["error"] == "invalidParams"
