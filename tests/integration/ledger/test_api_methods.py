"""The account, NFT-offer, book and server methods, driven with xrpl-py's request models over
SQLite and Cassandra loaded with the same history (ledger 38129's real state from the shared
vectors plus generated ledgers of payments, offers, trust lines and NFTs).

Expected values are computed here from the stored objects, decoded with xrpl-py's own codec
(``binarycodec.decode``), never from the API's code: trust lines from the RippleStates, owned
objects from the fields that name their owner, NFTs from the NFTokenPages.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.currencies import XRP, IssuedCurrency
from xrpl.models.requests import (
    AccountChannels,
    AccountCurrencies,
    AccountInfo,
    AccountLines,
    AccountNFTs,
    AccountObjects,
    AccountObjectType,
    AccountOffers,
    AMMInfo,
    DepositAuthorized,
    Feature,
    GatewayBalances,
    GenericRequest,
    NFTBuyOffers,
    NFTSellOffers,
    NoRippleCheck,
    NoRippleCheckRole,
    Ping,
    Random,
    TransactionEntry,
)
from xrpl.models.response import Response

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.xrpl.hashing import transaction_id
from chainloom.settings import CassandraSettings
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
from tests.unit.ledger.xrpl.test_jsonform import normalize_decoded

FIRST = 38129
LEDGERS = 8
UNKNOWN = "rDsbeomae4FXwgQTJp9Rs64Qg9vDiTCdBv"  # a valid address with no AccountRoot

LSF_LOW_NO_RIPPLE, LSF_HIGH_NO_RIPPLE = 0x00100000, 0x00200000
LSF_DEFAULT_RIPPLE = 0x00800000


# ------------------------------------------------------------------------ the stored history


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=23, txs_per_ledger=60)
    path = tmp_path_factory.mktemp("methods") / "ledgers.jsonl"
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
    return path


@dataclass
class State:
    """The newest ledger's objects, decoded by xrpl-py: the model the answers are checked
    against."""

    objects: dict[str, dict[str, Any]]
    """Every object by its key (upper-case hex)."""
    blobs: dict[str, str] = field(default_factory=dict)
    """Every object's blob (upper-case hex)."""

    def of_type(self, entry_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.objects.items() if v["LedgerEntryType"] == entry_type}

    def accounts(self) -> list[str]:
        return sorted(v["Account"] for v in self.of_type("AccountRoot").values())

    def lines_of(self, account: str) -> list[dict[str, Any]]:
        """The account's trust lines from its side, as the rippled docs define them."""
        found = []
        for line in self.of_type("RippleState").values():
            low, high = line["LowLimit"], line["HighLimit"]
            if account not in (low["issuer"], high["issuer"]):
                continue
            is_low = low["issuer"] == account
            own, other = (low, high) if is_low else (high, low)
            balance = Decimal(line["Balance"]["value"])
            found.append(
                {
                    "account": other["issuer"],
                    "currency": line["Balance"]["currency"],
                    "balance": balance if is_low else -balance,
                    "limit": Decimal(own["value"]),
                    "limit_peer": Decimal(other["value"]),
                    "no_ripple": bool(
                        line["Flags"] & (LSF_LOW_NO_RIPPLE if is_low else LSF_HIGH_NO_RIPPLE)
                    ),
                }
            )
        return found

    def owned(self, account: str) -> set[str]:
        """Keys of the objects the account owns (what its owner directory lists)."""
        keys = set()
        for key, value in self.objects.items():
            kind = value["LedgerEntryType"]
            if kind == "RippleState":
                sides = (value["LowLimit"]["issuer"], value["HighLimit"]["issuer"])
                if account in sides:
                    keys.add(key)
            elif kind in ("Offer", "PayChannel", "Check", "Escrow", "SignerList", "Ticket"):
                if value.get("Account") == account:
                    keys.add(key)
            elif kind == "NFTokenOffer" and value.get("Owner") == account:
                keys.add(key)
        return keys

    def nft_pages(self, account_id: bytes) -> list[str]:
        prefix = account_id.hex().upper()
        return sorted(k for k in self.of_type("NFTokenPage") if k.startswith(prefix))


def _load(config: DatabaseSettings, dump: Path) -> None:
    backend = make_backend(config)
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run()
    finally:
        backend.close()
        source.close()


@dataclass
class Served:
    kind: str
    backend: BackendInterface
    client: JsonRpcClient
    state: State

    @property
    def last(self) -> int:
        found = self.backend.fetch_ledger_range()
        assert found is not None
        return found.max_sequence

    def call(self, request: Any) -> Response:
        return self.client.request(request)

    def ok(self, request: Any) -> dict[str, Any]:
        response = self.call(request)
        assert response.is_successful(), response.result
        return response.result

    def error(self, request: Any) -> str:
        response = self.call(request)
        assert not response.is_successful(), response.result
        return str(response.result["error"])


def _state(backend: BackendInterface, sequence: int) -> State:
    state = State({})
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, 2048)
        for item in page.objects:
            key = item.key.hex().upper()
            state.blobs[key] = item.blob.hex().upper()
            state.objects[key] = binarycodec.decode(state.blobs[key])
        if page.cursor is None:
            return state
        cursor = page.cursor


@pytest.fixture(scope="module", params=["sqlite", "cassandra"])
def served(
    request: pytest.FixtureRequest, dump: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    keyspace = None
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "ledger.db"
        config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(path)))
    else:
        host, port = request.getfixturevalue("cassandra_address")
        keyspace = f"t_{uuid.uuid4().hex[:12]}"
        config = DatabaseSettings(
            type="cassandra",
            cassandra=CassandraSettings(
                hosts=(host,), port=port, keyspace=keyspace, replication_factor=1
            ),
        )
    _load(config, dump)
    backend = make_backend(config.model_copy(update={"read_only": True}))
    server = ServerThread(backend)
    port_number = server.start()
    found = backend.fetch_ledger_range()
    assert found is not None
    try:
        yield Served(
            request.param,
            backend,
            JsonRpcClient(f"http://127.0.0.1:{port_number}/"),
            _state(backend, found.max_sequence),
        )
    finally:
        server.stop()
        backend.close()
        if keyspace is not None:
            _drop_keyspace(request.getfixturevalue("cassandra_address"), keyspace)


def _drop_keyspace(address: tuple[str, int], keyspace: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([address[0]], port=address[1], protocol_version=5)
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    finally:
        cluster.shutdown()


def _pages(served: Served, make: Any, rows: str) -> list[dict[str, Any]]:
    """Every row of a paged listing, following markers; each page within its limit."""
    seen: list[dict[str, Any]] = []
    marker = None
    for _ in range(1000):
        result = served.ok(make(marker))
        assert len(result[rows]) <= result["limit"]
        seen.extend(result[rows])
        marker = result.get("marker")
        if marker is None:
            return seen
    raise AssertionError("the listing never ended")


def _busiest(served: Served, count: int) -> list[str]:
    by_lines = sorted(served.state.accounts(), key=lambda a: -len(served.state.owned(a)))
    return by_lines[:count]


# ------------------------------------------------------------------------------ account_info


def test_account_info_of_every_account_equals_its_account_root(served: Served) -> None:
    roots = served.state.of_type("AccountRoot")
    assert len(roots) > 20
    for key, root in roots.items():
        result = served.ok(AccountInfo(account=root["Account"], ledger_index="validated"))
        data = dict(result["account_data"])
        assert data.pop("index") == key
        assert normalize_decoded(data, ours=True) == normalize_decoded(root)
        assert result["ledger_index"] == served.last
        assert result["validated"] is True
        flags = result["account_flags"]
        assert flags["defaultRipple"] == bool(root["Flags"] & LSF_DEFAULT_RIPPLE)
        assert flags["requireDestinationTag"] == bool(root["Flags"] & 0x00020000)


def test_account_info_signer_lists_move_to_the_root_from_version_2(served: Served) -> None:
    account = served.state.accounts()[0]
    v1 = served.ok(AccountInfo(account=account, signer_lists=True, api_version=1))
    assert v1["account_data"]["signer_lists"] == []
    assert "signer_lists" not in v1
    v2 = served.ok(AccountInfo(account=account, signer_lists=True, api_version=2))
    assert v2["signer_lists"] == []
    assert "signer_lists" not in v2["account_data"]


def test_account_info_at_an_older_ledger_sees_that_ledger(served: Served) -> None:
    older = _state(served.backend, FIRST + 2)
    root = next(iter(older.of_type("AccountRoot").values()))
    result = served.ok(AccountInfo(account=root["Account"], ledger_index=FIRST + 2))
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


def test_account_lines_pages_hold_every_line_once(served: Served) -> None:
    checked = 0
    for account in _busiest(served, 4):
        expected = sorted(_line_key(line) for line in served.state.lines_of(account))
        rows = _pages(
            served, lambda m, a=account: AccountLines(account=a, limit=10, marker=m), "lines"
        )
        assert sorted(_line_key(row) for row in rows) == expected
        checked += len(expected)
        if expected:
            peer = expected[0][0]
            only = served.ok(AccountLines(account=account, peer=peer, limit=400))
            assert {row["account"] for row in only["lines"]} == {peer}
            assert only["peer"] == peer
    assert checked > 10


def test_account_currencies_follow_balances_and_limits(served: Served) -> None:
    for account in _busiest(served, 4):
        receive, send = set(), set()
        for line in served.state.lines_of(account):
            if line["balance"] < line["limit"]:
                receive.add(line["currency"])
            if -line["balance"] < line["limit_peer"]:
                send.add(line["currency"])
        result = served.ok(AccountCurrencies(account=account))
        assert set(result["receive_currencies"]) == receive
        assert set(result["send_currencies"]) == send


# --------------------------------------------------------------------------- account_objects


def test_account_objects_pages_list_the_owner_directory_and_nft_pages(served: Served) -> None:
    from chainloom.ledger.xrpl.address import decode_account

    for account in _busiest(served, 4):
        expected = served.state.owned(account) | set(
            served.state.nft_pages(decode_account(account))
        )
        rows = _pages(
            served,
            lambda m, a=account: AccountObjects(account=a, limit=10, marker=m),
            "account_objects",
        )
        keys = [row["index"] for row in rows]
        assert len(keys) == len(set(keys))
        assert set(keys) == expected
        for row in rows:
            stored = dict(row)
            del stored["index"]
            decoded = served.state.objects[row["index"]]
            assert normalize_decoded(stored, ours=True) == normalize_decoded(decoded)
        only = _pages(
            served,
            lambda m, a=account: AccountObjects(
                account=a, type=AccountObjectType.STATE, limit=10, marker=m
            ),
            "account_objects",
        )
        assert {row["index"] for row in only} == {
            k for k in expected if served.state.objects[k]["LedgerEntryType"] == "RippleState"
        }


def _canon(amount: Any, *, ours: bool = False) -> str:
    return json.dumps(normalize_decoded(amount, ours=ours), sort_keys=True, default=str)


def test_account_offers_are_the_offers_the_account_created(served: Served) -> None:
    offers = served.state.of_type("Offer")
    owners = sorted({offer["Account"] for offer in offers.values()})
    assert owners
    for account in owners[:5]:
        expected = sorted(
            (o["Sequence"], _canon(o["TakerGets"]), _canon(o["TakerPays"]))
            for o in offers.values()
            if o["Account"] == account
        )
        rows = _pages(
            served, lambda m, a=account: AccountOffers(account=a, limit=10, marker=m), "offers"
        )
        got = sorted(
            (row["seq"], _canon(row["taker_gets"], ours=True), _canon(row["taker_pays"], ours=True))
            for row in rows
        )
        assert got == expected
        assert all(Decimal(row["quality"]) > 0 for row in rows)


def test_account_channels_list_the_pay_channels_the_account_opened(served: Served) -> None:
    channels = served.state.of_type("PayChannel")
    for account in _busiest(served, 3):
        result = served.ok(AccountChannels(account=account))
        assert {c["channel_id"] for c in result["channels"]} == {
            k for k, c in channels.items() if c["Account"] == account
        }


# ------------------------------------------------------------------------------------- NFTs


def test_account_nfts_pages_hold_every_token_of_the_pages(served: Served) -> None:
    from chainloom.ledger.xrpl.address import decode_account

    holders = sorted({key[:40] for key in served.state.of_type("NFTokenPage")})
    assert holders, "the generated history mints NFTs"
    from chainloom.ledger.xrpl.address import encode_account

    for prefix in holders[:4]:
        account = encode_account(bytes.fromhex(prefix))
        expected = [
            token["NFToken"]["NFTokenID"]
            for key in served.state.nft_pages(decode_account(account))
            for token in served.state.objects[key]["NFTokens"]
        ]
        rows = _pages(
            served, lambda m, a=account: AccountNFTs(account=a, limit=20, marker=m), "account_nfts"
        )
        assert [row["NFTokenID"] for row in rows] == expected
        for row in rows:
            token = bytes.fromhex(row["NFTokenID"])
            assert row["Issuer"] == encode_account(token[4:24])
            assert row["nft_serial"] == int.from_bytes(token[28:32], "big")


def test_nft_offers_are_the_offers_of_the_token(served: Served) -> None:
    checked = 0
    for sequence in range(served.last, FIRST, -1):
        state = _state(served.backend, sequence) if sequence != served.last else served.state
        offers = state.of_type("NFTokenOffer")
        by_token: dict[tuple[str, bool], set[str]] = defaultdict(set)
        for key, offer in offers.items():
            by_token[(offer["NFTokenID"], bool(offer["Flags"] & 1))].add(key)
        for (token, sell), keys in list(by_token.items())[:4]:
            model: Any = NFTSellOffers if sell else NFTBuyOffers
            result = served.ok(model(nft_id=token, ledger_index=sequence))
            assert "marker" not in result
            rows = result["offers"]
            assert {row["nft_offer_index"] for row in rows} == keys
            for row in rows:
                assert row["owner"] == offers[row["nft_offer_index"]]["Owner"]
                assert row["amount"] == offers[row["nft_offer_index"]]["Amount"]
            other: Any = NFTBuyOffers if sell else NFTSellOffers
            if (token, not sell) not in by_token:
                assert served.error(other(nft_id=token, ledger_index=sequence)) == "objectNotFound"
            checked += 1
        if checked >= 4:
            break
    assert checked > 0, "the generated history creates NFT sell offers"


# ---------------------------------------------------------------------------- issuer methods


def test_gateway_balances_sum_what_the_gateway_issued(served: Served) -> None:
    for account in _busiest(served, 3):
        obligations: dict[str, Decimal] = defaultdict(Decimal)
        assets: dict[str, set[str]] = defaultdict(set)
        for line in served.state.lines_of(account):
            if line["balance"] < 0:
                obligations[line["currency"]] += -line["balance"]
            elif line["balance"] > 0:
                assets[line["account"]].add(line["currency"])
        result = served.ok(GatewayBalances(account=account))
        got = {c: Decimal(v) for c, v in result.get("obligations", {}).items()}
        assert got == dict(obligations)
        assert {
            p: {a["currency"] for a in rows} for p, rows in result.get("assets", {}).items()
        } == dict(assets)


def test_noripple_check_names_every_line_to_fix(served: Served) -> None:
    for account in _busiest(served, 3):
        lines = served.state.lines_of(account)
        root = next(
            r for r in served.state.of_type("AccountRoot").values() if r["Account"] == account
        )
        default_ripple = bool(root["Flags"] & LSF_DEFAULT_RIPPLE)
        gateway = served.ok(
            NoRippleCheck(
                account=account, role=NoRippleCheckRole.GATEWAY, transactions=True, limit=500
            )
        )
        to_clear = [line for line in lines if line["no_ripple"]]
        assert len(gateway["problems"]) == len(to_clear) + (0 if default_ripple else 1)
        assert len(gateway["transactions"]) == len(gateway["problems"])
        sequences = [tx["Sequence"] for tx in gateway["transactions"]]
        assert sequences == list(range(root["Sequence"], root["Sequence"] + len(sequences)))
        user = served.ok(NoRippleCheck(account=account, role=NoRippleCheckRole.USER, limit=500))
        to_set = [line for line in lines if not line["no_ripple"]]
        assert len(user["problems"]) == len(to_set) + (1 if default_ripple else 0)


def test_deposit_authorized_between_accounts(served: Served) -> None:
    accounts = served.state.accounts()
    result = served.ok(
        DepositAuthorized(source_account=accounts[0], destination_account=accounts[1])
    )
    roots = {r["Account"]: r for r in served.state.of_type("AccountRoot").values()}
    assert result["deposit_authorized"] == (not roots[accounts[1]]["Flags"] & 0x01000000)
    assert (
        served.error(DepositAuthorized(source_account=UNKNOWN, destination_account=accounts[1]))
        == "srcActNotFound"
    )
    assert (
        served.error(DepositAuthorized(source_account=accounts[0], destination_account=UNKNOWN))
        == "dstActNotFound"
    )


# ------------------------------------------------------------------------ ledger-wide methods


def test_transaction_entry_finds_a_transaction_only_in_its_ledger(served: Served) -> None:
    sequence = FIRST + 3
    txs = served.backend.fetch_all_transactions_in_ledger(sequence)
    assert txs
    for tx in txs[:5]:
        tx_hash = transaction_id(tx.transaction).hex().upper()
        result = served.ok(TransactionEntry(tx_hash=tx_hash, ledger_index=sequence))
        body = dict(result["tx_json"])
        assert result["hash"] == tx_hash
        assert normalize_decoded(body, ours=True) == normalize_decoded(
            binarycodec.decode(tx.transaction.hex())
        )
        assert (
            result["metadata"]["TransactionResult"]
            == binarycodec.decode(tx.metadata.hex())["TransactionResult"]
        )
        v1 = served.ok(TransactionEntry(tx_hash=tx_hash, ledger_index=sequence, api_version=1))
        assert v1["tx_json"]["hash"] == tx_hash
        assert "hash" not in v1
        wrong = TransactionEntry(tx_hash=tx_hash, ledger_index=sequence + 1)
        assert served.error(wrong) == "txnNotFound"


def test_ledger_index_finds_the_ledger_closed_by_a_date(served: Served) -> None:
    from chainloom.ledger.api.shapes import close_time_iso

    newest = served.ok(GenericRequest(method="ledger_index"))
    assert newest["ledger_index"] == served.last
    for sequence in (FIRST, FIRST + 4, served.last):
        header = served.backend.fetch_ledger_by_sequence(sequence)
        assert header is not None
        result = served.ok(
            GenericRequest(method="ledger_index", date=close_time_iso(header.close_time))
        )
        later = served.backend.fetch_ledger_by_sequence(result["ledger_index"] + 1)
        assert result["ledger_index"] >= sequence
        assert later is None or later.close_time > header.close_time
    assert (
        served.error(GenericRequest(method="ledger_index", date="2000-01-01T00:00:00Z"))
        == "lgrNotFound"
    )
    assert served.error(GenericRequest(method="ledger_index", date="yesterday")) == "invalidParams"


def test_server_methods(served: Served) -> None:
    assert served.call(Ping()).is_successful()
    first, second = served.ok(Random())["random"], served.ok(Random())["random"]
    assert len(first) == 64
    assert first != second
    version = served.ok(GenericRequest(method="version"))["version"]
    assert (version["first"], version["last"]) == (1, 3)
    features = served.ok(Feature())
    amendments_key = next(iter(served.state.of_type("Amendments")), None)
    if amendments_key is None:
        assert features["features"] == {}
    else:
        enabled = served.state.objects[amendments_key].get("Amendments", [])
        assert {k for k, v in features["features"].items() if v["enabled"]} == set(enabled)
    assert served.error(Feature(feature="NoSuchAmendment")) == "badFeature"


def test_amm_info_of_pools_that_do_not_exist(served: Served) -> None:
    gateway = _busiest(served, 1)[0]
    usd = IssuedCurrency(currency="USD", issuer=gateway)
    assert not served.state.of_type("AMM")
    assert served.error(AMMInfo(asset=XRP(), asset2=usd)) == "actNotFound"
    assert served.error(AMMInfo(amm_account=gateway, api_version=2)) == "actMalformed"
    assert served.error(AMMInfo(amm_account=gateway, api_version=3)) == "actNotFound"
    assert served.error(AMMInfo(amm_account=UNKNOWN)) == "actNotFound"


# -------------------------------------------------------------------------------- refusals


def _post(served: Served, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    import urllib.error
    import urllib.request

    import orjson

    body = orjson.dumps({"method": method, "params": [params]})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(served.client.url, data=body, method="POST")
    try:
        with opener.open(request, timeout=60) as reply:
            return reply.status, orjson.loads(reply.read())["result"]
    except urllib.error.HTTPError as refused:
        return refused.code, orjson.loads(refused.read())["result"]


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


def _filled(served: Served, params: dict[str, Any]) -> dict[str, Any]:
    a, b = _busiest(served, 2)
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
    assert set(METHODS) == set(rq.PARSERS)


def test_each_well_formed_call_succeeds(served: Served) -> None:
    for method, params in CALLS.items():
        status, result = _post(served, method, _filled(served, params))
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
    served: Served, api_version: int
) -> None:
    wrong_values: list[Any] = [17, -1, "not-a-value", ["x"], {"x": 1}, True, None, 1.5]
    checked = 0
    for method, params in CALLS.items():
        filled = _filled(served, params)
        _, well_formed = _post(served, method, {**filled, "api_version": api_version})
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
                status, result = _post(served, method, call)
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


def test_forged_markers_are_invalid_params(served: Served) -> None:
    account = _busiest(served, 1)[0]
    state_key = next(iter(served.state.of_type("RippleState")))
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
            status, result = _post(served, method, {"account": account, "marker": marker})
            assert status == 400, (method, marker, result)
            assert result["error"] == "invalidParams", (method, marker, result)
    for method, params in (
        ("account_nfts", {"account": account}),
        ("nft_sell_offers", {"nft_id": NFT_ID}),
    ):
        for marker in ("AB" * 32, "short", 7):
            status, result = _post(served, method, {**params, "marker": marker})
            assert status < 500, (method, marker, result)
            assert result["error"] in ("invalidParams", "objectNotFound"), (method, result)


def test_unknown_accounts_are_act_not_found(served: Served) -> None:
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
        status, result = _post(served, method, {"account": UNKNOWN})
        assert (status, result["error"]) == (200, "actNotFound"), (method, result)
    status, result = _post(served, "noripple_check", {"account": UNKNOWN, "role": "user"})
    assert result["error"] == "actNotFound"


# ------------------------------------------------------------------------------------ cache


def test_the_cache_answers_like_the_database(served: Served) -> None:
    from chainloom.ledger.api import params as pm
    from chainloom.ledger.api.methods import Context, answer
    from chainloom.ledger.cache import LedgerCache

    cache = LedgerCache()
    cache.update(served.backend)
    assert cache.sequence == served.last
    keys = [bytes.fromhex(k) for k in served.state.objects]
    assert cache.read(keys, served.last) == [
        bytes.fromhex(served.state.blobs[k.hex().upper()]) for k in keys
    ]
    assert cache.read(keys, served.last - 1) is None
    cached = Context(backend=served.backend, cache=cache)
    bare = Context(backend=served.backend, cache=None)
    for account in _busiest(served, 3):
        call = pm.parse_directory_listing({"account": account})
        assert answer(cached, "account_lines", call, 2) == answer(bare, "account_lines", call, 2)
        info = pm.parse_account_info({"account": account})
        assert answer(cached, "account_info", info, 2) == answer(bare, "account_info", info, 2)
    cache.close()
