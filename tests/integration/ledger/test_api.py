"""``chainloom ledger api`` answered to xrpl-py's JsonRpcClient on a generated history.

The history is ledger 38129's real state (the shared vectors) plus generated ledgers with
payments, offers, trust lines and NFTs, loaded by the ETL into SQLite (and once into
Cassandra). Every method goes through xrpl-py's request models and client; every value is
compared with what the backend returns to direct calls, and decoded objects with xrpl-py's own
decoder of the same blob.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.currencies import XRP, IssuedCurrency
from xrpl.models.requests import (
    AccountTx,
    BookOffers,
    GenericRequest,
    Ledger,
    LedgerData,
    LedgerEntry,
    NFTHistory,
    NFTInfo,
    NFTsByIssuer,
    ServerInfo,
    Tx,
)
from xrpl.models.requests.ledger_entry import Directory, Offer, RippleState
from xrpl.models.response import Response

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.types import UINT32_MAX, LedgerObject
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.hashing import transaction_id
from chainloom.ledger.xrpl.parse import parse_metadata
from chainloom.settings import CassandraSettings
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
from tests.ledger_api_support import load
from tests.unit.ledger.xrpl.test_jsonform import normalize_decoded

FIRST = 38129
LEDGERS = 8


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=11, txs_per_ledger=40)
    path = tmp_path_factory.mktemp("api") / "ledgers.jsonl"
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
    return path


@dataclass
class Served:
    backend: BackendInterface
    client: JsonRpcClient
    url: str

    @property
    def last(self) -> int:
        found = self.backend.fetch_ledger_range()
        assert found is not None
        return found.max_sequence

    def ok(self, request: Any) -> dict[str, Any]:
        response: Response = self.client.request(request)
        assert response.is_successful(), response.result
        return response.result

    def error(self, request: Any) -> dict[str, Any]:
        response: Response = self.client.request(request)
        assert not response.is_successful(), response.result
        return response.result

    def post(self, body: bytes) -> tuple[int, bytes]:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        request = urllib.request.Request(self.url, data=body, method="POST")
        try:
            with opener.open(request, timeout=60) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read()


def _serve(config: DatabaseSettings) -> Iterator[Served]:
    backend = make_backend(config.model_copy(update={"read_only": True}))
    server = ServerThread(backend)
    port = server.start()
    url = f"http://127.0.0.1:{port}/"
    try:
        yield Served(backend, JsonRpcClient(url), url)
    finally:
        server.stop()
        backend.close()


@pytest.fixture(scope="module")
def served(dump: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    path = tmp_path_factory.mktemp("sqlite") / "ledger.db"
    config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(path)))
    load(config, dump)
    yield from _serve(config)


def _same(ours: Any, blob: bytes) -> None:
    """A decoded object equals xrpl-py's decoding of the same blob."""
    theirs = binarycodec.decode(blob.hex().upper())
    assert normalize_decoded(ours, ours=True) == normalize_decoded(theirs)


def _without(mapping: dict[str, Any], *names: str) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key not in names}


# ------------------------------------------------------------------------------------ server


def test_readiness_reads_the_range_from_the_store(served: Served) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(served.url + "readyz", timeout=30) as reply:
        assert reply.status == 200
        assert json.loads(reply.read()) == {
            "status": "ready",
            "complete_ledgers": f"{FIRST}-{FIRST + LEDGERS}",
        }
    with opener.open(served.url + "healthz", timeout=30) as reply:
        assert json.loads(reply.read()) == {"status": "ok"}


def test_server_info_and_ledger_range_show_the_stored_range(served: Served) -> None:
    info = served.ok(ServerInfo())["info"]
    assert info["complete_ledgers"] == f"{FIRST}-{FIRST + LEDGERS}"
    assert info["validated_ledger"]["seq"] == FIRST + LEDGERS
    header = served.backend.fetch_ledger_by_sequence(FIRST + LEDGERS)
    assert header is not None
    assert info["validated_ledger"]["hash"] == header.hash.hex().upper()
    result = served.ok(GenericRequest(method="ledger_range"))
    assert (result["ledger_index_min"], result["ledger_index_max"]) == (FIRST, FIRST + LEDGERS)


# ------------------------------------------------------------------------------------ ledger


def test_ledger_headers_and_transactions_equal_the_backend(served: Served) -> None:
    for sequence in range(FIRST, FIRST + LEDGERS + 1):
        header = served.backend.fetch_ledger_by_sequence(sequence)
        assert header is not None
        result = served.ok(Ledger(ledger_index=sequence, transactions=True, expand=True))
        assert result["ledger_index"] == sequence
        assert result["validated"] is True
        body = result["ledger"]
        assert body["ledger_hash"] == result["ledger_hash"] == header.hash.hex().upper()
        assert body["parent_hash"] == header.parent_hash.hex().upper()
        assert body["account_hash"] == header.account_hash.hex().upper()
        assert body["transaction_hash"] == header.transaction_hash.hex().upper()
        assert body["total_coins"] == str(header.total_drops)
        assert body["close_time"] == header.close_time
        hashes = served.backend.fetch_all_transaction_hashes_in_ledger(sequence)
        assert [tx["hash"] for tx in body["transactions"]] == [h.hex().upper() for h in hashes]
        for entry, stored in zip(
            body["transactions"], served.backend.fetch_transactions(hashes), strict=True
        ):
            assert stored is not None
            _same(entry["tx_json"], stored.transaction)
            _same(_without(entry["meta"], "delivered_amount"), stored.metadata)
        by_hash = served.ok(Ledger(ledger_hash=header.hash.hex(), transactions=True))
        assert by_hash["ledger"]["transactions"] == [h.hex().upper() for h in hashes]


def test_the_newest_ledger_is_what_xrpl_py_calls_validated(served: Served) -> None:
    from xrpl.ledger import get_latest_validated_ledger_sequence

    assert get_latest_validated_ledger_sequence(served.client) == served.last


def test_ledger_data_pages_walk_the_whole_state_in_both_forms(served: Served) -> None:
    sequence = FIRST + 3
    expected: list[LedgerObject] = []
    cursor = None
    while True:
        page = served.backend.fetch_ledger_page(cursor, sequence, 256)
        expected.extend(page.objects)
        if page.cursor is None:
            break
        cursor = page.cursor
    for binary_form, limit in ((False, 100), (True, 150)):
        seen: list[dict[str, Any]] = []
        marker = None
        pages = 0
        while True:
            result = served.ok(
                LedgerData(ledger_index=sequence, binary=binary_form, limit=limit, marker=marker)
            )
            assert result["ledger_index"] == sequence
            seen.extend(result["state"])
            pages += 1
            marker = result.get("marker")
            if marker is None:
                break
        assert pages > 1
        assert [entry["index"] for entry in seen] == [obj.key.hex().upper() for obj in expected]
        for entry, obj in zip(seen, expected, strict=True):
            if binary_form:
                assert entry["data"] == obj.blob.hex().upper()
            else:
                _same(_without(entry, "index"), obj.blob)


# ------------------------------------------------------------------------------------ entries


def _state(served: Served, sequence: int) -> list[LedgerObject]:
    found: list[LedgerObject] = []
    cursor = None
    while True:
        page = served.backend.fetch_ledger_page(cursor, sequence, 256)
        found.extend(page.objects)
        if page.cursor is None:
            return found
        cursor = page.cursor


def _of_type(objects: list[LedgerObject], entry_type: int) -> list[tuple[bytes, binary.STObject]]:
    out = []
    for obj in objects:
        decoded = binary.decode(obj.blob)
        if int.from_bytes(decoded[sf.LEDGER_ENTRY_TYPE], "big") == entry_type:  # type: ignore[arg-type]
            out.append((obj.key, decoded))
    return out


def test_ledger_entry_by_index_and_by_each_typed_form(served: Served) -> None:
    sequence = served.last
    state = _state(served, sequence)
    blobs = {obj.key: obj.blob for obj in state}

    def check(request: LedgerEntry, key: bytes) -> None:
        result = served.ok(request)
        assert result["index"] == key.hex().upper()
        assert result["ledger_index"] == sequence
        _same(result["node"], blobs[key])
        binary_result = served.ok(LedgerEntry(index=key.hex(), ledger_index=sequence, binary=True))
        assert binary_result["node_binary"] == blobs[key].hex().upper()

    for key in list(blobs)[:: max(1, len(blobs) // 25)]:
        check(LedgerEntry(index=key.hex().upper(), ledger_index=sequence), key)
    key, root = _of_type(state, sf.ACCOUNT_ROOT)[0]
    address = encode_account(root[sf.ACCOUNT])  # type: ignore[arg-type]
    check(LedgerEntry(account_root=address, ledger_index=sequence), key)
    offers = _of_type(state, sf.OFFER)
    assert offers, "the generated history has offers"
    key, offer = offers[0]
    owner = encode_account(offer[sf.ACCOUNT])  # type: ignore[arg-type]
    seq = int.from_bytes(offer[sf.SEQUENCE], "big")  # type: ignore[arg-type]
    check(LedgerEntry(offer=Offer(account=owner, seq=seq), ledger_index=sequence), key)
    check(LedgerEntry(offer=key.hex().upper(), ledger_index=sequence), key)
    lines = _of_type(state, sf.RIPPLE_STATE)
    assert lines, "the generated history has trust lines"
    key, line = lines[0]
    low, high = line[sf.LOW_LIMIT], line[sf.HIGH_LIMIT]
    assert isinstance(low, bytes)
    assert isinstance(high, bytes)
    code = low[8:28]
    currency_text = code[12:15].decode() if not any(code[:12]) else code.hex().upper()
    check(
        LedgerEntry(
            ripple_state=RippleState(
                accounts=[encode_account(low[28:48]), encode_account(high[28:48])],
                currency=currency_text,
            ),
            ledger_index=sequence,
        ),
        key,
    )
    owners = [
        (key, obj)
        for key, obj in _of_type(state, sf.DIRECTORY_NODE)
        if sf.OWNER in obj and key == keylets.owner_directory(obj[sf.OWNER])  # type: ignore[arg-type]
    ]
    assert owners
    key, directory = owners[0]
    owner = encode_account(directory[sf.OWNER])  # type: ignore[arg-type]
    check(
        LedgerEntry(
            directory=Directory(owner=owner, dir_root=key.hex().upper()), ledger_index=sequence
        ),
        key,
    )
    for form in ({"owner": owner}, {"dir_root": key.hex()}):  # what rippled itself accepts
        status, body = served.post(
            orjson.dumps({"method": "ledger_entry", "params": [{"directory": form}]})
        )
        assert status == 200
        assert orjson.loads(body)["result"]["index"] == key.hex().upper()
    pages = _of_type(state, sf.NFTOKEN_PAGE)
    assert pages, "the generated history has NFT pages"
    # xrpl-py's model does not count nft_page as a way to name an entry: sent as plain JSON.
    status, body = served.post(
        orjson.dumps({"method": "ledger_entry", "params": [{"nft_page": pages[0][0].hex()}]})
    )
    assert status == 200
    _same(orjson.loads(body)["result"]["node"], blobs[pages[0][0]])


def test_ledger_entry_not_in_the_ledger_is_entry_not_found(served: Served) -> None:
    result = served.error(LedgerEntry(index="AB" * 32, ledger_index=served.last))
    assert result["error"] == "entryNotFound"


# ------------------------------------------------------------------------------------ tx


def test_tx_returns_each_transaction_as_stored(served: Served) -> None:
    sequence = FIRST + 2
    header = served.backend.fetch_ledger_by_sequence(sequence)
    assert header is not None
    hashes = served.backend.fetch_all_transaction_hashes_in_ledger(sequence)
    assert hashes
    for tx_hash in hashes[:15]:
        stored = served.backend.fetch_transaction(tx_hash)
        assert stored is not None
        result = served.ok(Tx(transaction=tx_hash.hex().upper()))
        assert result["hash"] == tx_hash.hex().upper()
        assert result["ledger_index"] == sequence
        assert result["ledger_hash"] == header.hash.hex().upper()
        assert result["validated"] is True
        _same(result["tx_json"], stored.transaction)
        meta = parse_metadata(stored.metadata)
        assert result["meta"]["TransactionResult"] == meta.result_name
        assert result["meta"]["TransactionIndex"] == meta.transaction_index
        _same(_without(result["meta"], "delivered_amount"), stored.metadata)
        raw = served.ok(Tx(transaction=tx_hash.hex(), binary=True))
        assert raw["tx_blob"] == stored.transaction.hex().upper()
        assert raw["meta_blob"] == stored.metadata.hex().upper()
        v1 = served.ok(Tx(transaction=tx_hash.hex(), api_version=1))
        assert v1["hash"] == tx_hash.hex().upper()
        assert v1["TransactionType"] == result["tx_json"]["TransactionType"]


def test_unknown_transaction_is_txn_not_found(served: Served) -> None:
    result = served.error(Tx(transaction="CD" * 32, min_ledger=FIRST, max_ledger=served.last))
    assert result["error"] == "txnNotFound"
    assert result["error_code"] == 29
    assert result["searched_all"] is True


# ------------------------------------------------------------------------------------ account_tx


def _busiest_accounts(served: Served, count: int) -> list[bytes]:
    touched: Counter[bytes] = Counter()
    for sequence in range(FIRST + 1, served.last + 1):
        for tx in served.backend.fetch_all_transactions_in_ledger(sequence):
            touched.update(parse_metadata(tx.metadata).affected_accounts)
    return [account for account, _ in touched.most_common(count)]


def test_account_tx_pages_return_every_transaction_exactly_once(served: Served) -> None:
    for account in _busiest_accounts(served, 3):
        address = encode_account(account)
        direct = served.backend.fetch_account_transactions(account, 10_000, forward=False)
        expected = [transaction_id(tx.transaction).hex().upper() for tx in direct.transactions]
        assert len(expected) > 7
        for forward in (False, True):
            seen: list[str] = []
            marker = None
            while True:
                result = served.ok(
                    AccountTx(account=address, limit=3, forward=forward, marker=marker)
                )
                assert result["account"] == address
                assert len(result["transactions"]) <= 3
                for entry in result["transactions"]:
                    seen.append(entry["hash"])
                    assert entry["validated"] is True
                marker = result.get("marker")
                if marker is None:
                    break
            assert len(seen) == len(set(seen))
            assert seen == (list(reversed(expected)) if forward else expected)


def test_account_tx_respects_ledger_bounds_and_binary(served: Served) -> None:
    account = _busiest_accounts(served, 1)[0]
    low, high = FIRST + 2, FIRST + 5
    result = served.ok(
        AccountTx(
            account=encode_account(account),
            ledger_index_min=low,
            ledger_index_max=high,
            binary=True,
            limit=400,
        )
    )
    assert (result["ledger_index_min"], result["ledger_index_max"]) == (low, high)
    direct = served.backend.fetch_account_transactions(account, 10_000, forward=False)
    expected = [tx for tx in direct.transactions if low <= tx.ledger_sequence <= high]
    assert [entry["tx_blob"] for entry in result["transactions"]] == [
        tx.transaction.hex().upper() for tx in expected
    ]
    assert [entry["ledger_index"] for entry in result["transactions"]] == [
        tx.ledger_sequence for tx in expected
    ]


def test_account_tx_of_an_account_that_does_not_exist(served: Served) -> None:
    result = served.error(AccountTx(account=encode_account(b"\x42" * 20)))
    assert result["error"] == "actNotFound"
    result = served.error(AccountTx(account="rNotAnAddress"))
    assert result["error"] == "actMalformed"


# ------------------------------------------------------------------------------------ NFTs


def _nfts(served: Served) -> list[bytes]:
    tokens: list[bytes] = []
    for key, page in _of_type(_state(served, served.last), sf.NFTOKEN_PAGE):
        del key
        listed = page.get(sf.NFTOKENS, [])
        assert isinstance(listed, list)
        for _, token in listed:
            token_id = token[sf.NFTOKEN_ID]
            assert isinstance(token_id, bytes)
            tokens.append(token_id)
    return tokens


def test_nft_info_history_and_issuer_listing(served: Served) -> None:
    tokens = _nfts(served)
    assert tokens, "the generated history has NFTs"
    for token in tokens[:5]:
        stored = served.backend.fetch_nft(token, served.last)
        assert stored is not None
        info = served.ok(NFTInfo(nft_id=token.hex()))
        assert info["nft_id"] == token.hex().upper()
        assert info["owner"] == encode_account(stored.owner)
        assert info["is_burned"] is stored.is_burned
        assert info["issuer"] == encode_account(token[4:24])
        direct = served.backend.fetch_nft_transactions(token, 1000, forward=True)
        seen: list[str] = []
        marker = None
        while True:
            result = served.ok(NFTHistory(nft_id=token.hex(), forward=True, limit=1, marker=marker))
            seen.extend(entry["hash"] for entry in result["transactions"])
            marker = result.get("marker")
            if marker is None:
                break
        assert seen == [transaction_id(tx.transaction).hex().upper() for tx in direct.transactions]
    issuer = tokens[0][4:24]
    direct_page = served.backend.fetch_nfts_by_issuer(issuer, None, served.last, 100)
    listed: list[str] = []
    marker = None
    while True:
        result = served.ok(NFTsByIssuer(issuer=encode_account(issuer), limit=2, marker=marker))
        listed.extend(nft["nft_id"] for nft in result["nfts"])
        marker = result.get("marker")
        if marker is None:
            break
    assert listed == [nft.token_id.hex().upper() for nft in direct_page.nfts]
    missing = served.error(NFTInfo(nft_id="00" * 32))
    assert missing["error"] == "objectNotFound"


# ------------------------------------------------------------------------------------ books


def test_book_offers_equal_the_backend_walk(served: Served) -> None:
    offers = _of_type(_state(served, served.last), sf.OFFER)
    assert offers
    _, offer = offers[0]

    def asset(value: bytes) -> Any:
        if len(value) == 8:
            return XRP()
        code = value[8:28]
        text = code[12:15].decode() if not any(code[:12]) else code.hex().upper()
        return IssuedCurrency(currency=text, issuer=encode_account(value[28:48]))

    gets, pays = offer[sf.TAKER_GETS], offer[sf.TAKER_PAYS]
    assert isinstance(gets, bytes)
    assert isinstance(pays, bytes)
    result = served.ok(BookOffers(taker_gets=asset(gets), taker_pays=asset(pays), limit=50))
    book = keylets.book(
        b"\x00" * 20 if len(pays) == 8 else pays[8:28],
        b"\x00" * 20 if len(pays) == 8 else pays[28:48],
        b"\x00" * 20 if len(gets) == 8 else gets[8:28],
        b"\x00" * 20 if len(gets) == 8 else gets[28:48],
    )
    direct = served.backend.fetch_book_offers(book, served.last, 50)
    assert direct.offers
    assert [entry["index"] for entry in result["offers"]] == [
        obj.key.hex().upper() for obj in direct.offers
    ]
    for entry, obj in zip(result["offers"], direct.offers, strict=True):
        _same(_without(entry, "index", "quality"), obj.blob)
        assert float(entry["quality"]) > 0


# ------------------------------------------------------------------------------------ errors


def test_errors_are_rippled_error_objects_with_rippled_statuses(served: Served) -> None:
    result = served.error(Ledger(ledger_index=FIRST - 1))
    assert (result["error"], result["error_code"]) == ("lgrNotFound", 21)
    assert result["request"]["command"] == "ledger"
    status, body = served.post(b'{"method": "ledger", "params": [{"ledger_index": 5}]}')
    assert status == 404
    assert b'"lgrNotFound"' in body
    status, body = served.post(b'{"method": "path_find", "params": [{}]}')
    assert status == 405
    assert b'"unknownCmd"' in body
    status, body = served.post(b'{"method": "submit", "params": [{}]}')  # no rippled
    assert status == 501
    assert b'"notEnabled"' in body
    status, body = served.post(
        b'{"method": "ledger_data", "params": [{"marker": "not hex", "ledger_index": 38130}]}'
    )
    assert status == 400
    assert b'"invalidParams"' in body
    status, body = served.post(
        b'{"method": "tx", "params": [{"transaction": "' + b"AB" * 32 + b'"}]}'
    )
    assert status == 404
    assert b'"txnNotFound"' in body
    status, body = served.post(b"{not json")
    assert status == 400
    assert body.startswith(b"Unable to parse request")
    status, body = served.post(b'{"method": "ledger", "params": {"ledger_index": 1}}')
    assert (status, body) == (400, b"params unparseable\n")
    status, _ = served.post(b'{"method": "ledger", "pad": "' + b"x" * 100_000 + b'"}')
    assert status == 413
    result = served.error(LedgerData(ledger_index=served.last, marker="EE" * 32))
    assert result["error"] == "invalidParams"
    assert UINT32_MAX  # the bound every index parameter is checked against


# ------------------------------------------------------------------------------------ WebSocket


def test_the_websocket_api_answers_xrpl_py_like_json_rpc(served: Served) -> None:
    from xrpl.clients import WebsocketClient

    with WebsocketClient(served.url.replace("http://", "ws://")) as client:
        for request in (
            Ledger(ledger_index=FIRST + 1, transactions=True, expand=True),
            LedgerData(ledger_index=FIRST + 1, limit=20),
            AccountTx(account=encode_account(_busiest_accounts(served, 1)[0]), limit=5),
        ):
            response = client.request(request)
            assert response.is_successful(), response.result
            assert response.result == served.ok(request)
        refused = client.request(Tx(transaction="CD" * 32))
        assert not refused.is_successful()
        assert refused.result["error"] == "txnNotFound"


# ------------------------------------------------------------------------------------ Cassandra


def test_the_same_answers_from_cassandra(
    dump: Path, served: Served, cassandra_address: tuple[str, int], cassandra_keyspace: str
) -> None:
    host, port = cassandra_address
    config = DatabaseSettings(
        type="cassandra",
        cassandra=CassandraSettings(
            hosts=(host,), port=port, keyspace=cassandra_keyspace, replication_factor=1
        ),
    )
    load(config, dump)
    for on_cassandra in _serve(config):
        account = encode_account(_busiest_accounts(served, 1)[0])
        for request in (
            ServerInfo(),
            Ledger(ledger_index=FIRST + 4, transactions=True, expand=True),
            LedgerData(ledger_index=FIRST + 4, limit=50),
            AccountTx(account=account, limit=5),
            AccountTx(account=account, limit=5, forward=True),
        ):
            ours = on_cassandra.ok(request)
            reference = served.ok(request)
            for volatile in ("info",):
                if volatile in ours:
                    ours[volatile].pop("uptime")
                    reference[volatile].pop("uptime")
                    ours[volatile]["validated_ledger"].pop("age")
                    reference[volatile]["validated_ledger"].pop("age")
            assert ours == reference
