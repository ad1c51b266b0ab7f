"""One conformance suite for every ledger backend: real Cassandra and SQLite answer alike.

Each test runs twice, against a fresh Cassandra keyspace (the ``cassandra_keyspace`` fixture)
and against a SQLite file in ``tmp_path``. Expected values come from the reference's rules and
from brute-force models built in the test, never from the backend under test.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.mpt import holder_rows
from chainloom.ledger.service import make_backend
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.types import (
    FIRST_KEY,
    AccountTransactionsData,
    LedgerHeader,
    LedgerObject,
    LedgerRange,
    NFTsData,
    NFTTransactionsData,
    TransactionAndMetadata,
    TransactionsAndCursor,
    TransactionsCursor,
)
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.hashing import sha512_half
from chainloom.ledger.xrpl.parse import book_base
from chainloom.settings import CassandraSettings
from tests.conftest import REPO_ROOT

# --------------------------------------------------------------------------------------------
# Stores and ledgers


@dataclass
class Store:
    """One fresh database; ``open()`` gives as many backends on it as a test needs."""

    kind: str
    config: DatabaseSettings
    opened: list[BackendInterface] = field(default_factory=list)

    def open(self) -> BackendInterface:
        backend = make_backend(self.config)
        self.opened.append(backend)
        return backend

    def config_json(self) -> str:
        return json.dumps({"database": self.config.model_dump(mode="json")})


@pytest.fixture(params=["sqlite", "cassandra"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[Store]:
    if request.param == "sqlite":
        config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(tmp_path / "l.db")))
    else:
        host, port = request.getfixturevalue("cassandra_address")
        keyspace = request.getfixturevalue("cassandra_keyspace")
        config = DatabaseSettings(
            type="cassandra",
            cassandra=CassandraSettings(
                hosts=(host,), port=port, keyspace=keyspace, replication_factor=1
            ),
        )
    result = Store(request.param, config)
    yield result
    for backend in result.opened:
        backend.close()


@pytest.fixture
def backend(store: Store) -> BackendInterface:
    return store.open()


def make_header(sequence: int, salt: bytes = b"") -> LedgerHeader:
    header = LedgerHeader(
        sequence=sequence,
        total_drops=10**17 - sequence,
        parent_hash=sha512_half(b"parent" + salt + sequence.to_bytes(4, "big")),
        transaction_hash=sha512_half(b"tx" + salt + sequence.to_bytes(4, "big")),
        account_hash=sha512_half(b"state" + salt + sequence.to_bytes(4, "big")),
        parent_close_time=700_000_000 + 3 * sequence,
        close_time=700_000_003 + 3 * sequence,
        close_time_resolution=10,
        close_flags=0,
        hash=b"",
    )
    return dataclasses.replace(header, hash=header.compute_hash())


@dataclass(frozen=True)
class Tx:
    """A transaction of a test ledger with the rows it indexes."""

    index: int
    accounts: frozenset[bytes] = frozenset()
    nft: bytes | None = None

    def hash_in(self, sequence: int) -> bytes:
        return sha512_half(b"txn" + sequence.to_bytes(4, "big") + self.index.to_bytes(4, "big"))

    def blob(self, sequence: int) -> bytes:
        return b"tx-" + self.hash_in(sequence)

    def meta(self, sequence: int) -> bytes:
        return b"meta-" + self.index.to_bytes(4, "big")


def write_ledger(
    backend: BackendInterface,
    tracker: SuccessorTracker,
    sequence: int,
    changes: Mapping[bytes, bytes],
    *,
    txs: Sequence[Tx] = (),
    nfts: Sequence[NFTsData] = (),
    initial: bool = False,
    book_bases: Sequence[bytes] = (),
    finish: bool = True,
    holders: bool = True,
) -> bool | None:
    """Write one ledger in Clio's order: header, successor rows, objects, transactions (and
    the ``mp_token_holders`` rows the ETL writes, unless ``holders`` is false)."""
    header = make_header(sequence)
    backend.start_writes()
    backend.write_ledger(header, header.serialize(include_hash=True))
    if initial:
        rows = tracker.initial_load([k for k, blob in changes.items() if blob], book_bases)
    else:
        created = [k for k, blob in changes.items() if blob and k not in tracker]
        deleted = [k for k, blob in changes.items() if not blob]
        rows = tracker.apply(created, deleted, book_bases_created=book_bases)
    for key, next_key in rows:
        backend.write_successor(key, sequence, next_key)
    for key, blob in changes.items():
        backend.write_ledger_object(key, sequence, blob)
    for tx in txs:
        backend.write_transaction(
            tx.hash_in(sequence), sequence, header.close_time, tx.blob(sequence), tx.meta(sequence)
        )
    backend.write_account_transactions(
        [
            AccountTransactionsData(tx.accounts, sequence, tx.index, tx.hash_in(sequence))
            for tx in txs
            if tx.accounts
        ]
    )
    backend.write_nfts(list(nfts))
    backend.write_nft_transactions(
        [
            NFTTransactionsData(tx.nft, sequence, tx.index, tx.hash_in(sequence))
            for tx in txs
            if tx.nft
        ]
    )
    if holders:
        backend.write_mpt_holders(holder_rows(LedgerObject(k, b) for k, b in changes.items()))
    if not finish:
        return None
    return backend.finish_writes(sequence)


def key(number: int) -> bytes:
    return sha512_half(b"key" + number.to_bytes(4, "big"))


def walk(backend: BackendInterface, sequence: int, limit: int) -> tuple[list[LedgerObject], int]:
    """Every object at ``sequence`` by pages of ``limit``; also how many calls it took."""
    objects: list[LedgerObject] = []
    cursor = None
    calls = 0
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, limit)
        calls += 1
        assert len(page.objects) <= limit
        objects.extend(page.objects)
        if page.cursor is None:
            return objects, calls
        assert page.cursor == page.objects[-1].key
        cursor = page.cursor


# --------------------------------------------------------------------------------------------
# Range and headers


def test_an_empty_store_has_no_range_and_shows_nothing(backend: BackendInterface):
    assert backend.fetch_ledger_range() is None
    assert backend.hard_fetch_ledger_range() is None
    assert backend.fetch_latest_ledger_sequence() is None
    assert backend.fetch_ledger_by_sequence(1) is None
    assert backend.fetch_ledger_object(key(1), 1) is None
    assert backend.fetch_ledger_page(None, 1, 10).objects == ()
    assert backend.fetch_account_transactions(bytes(20), 10, False).transactions == ()


def test_headers_range_and_lookup_by_hash(store: Store, xrpl_vectors):
    backend = store.open()
    stored = next(
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_header"
        and v["expected"]["ledger_index"] == 38129
        and len(v["hex"]) == 300
    )
    blob = bytes.fromhex(stored["hex"])
    first = LedgerHeader.parse(blob)
    backend.write_ledger(first, blob)
    assert backend.finish_writes(38129) is True
    assert backend.fetch_ledger_range() == LedgerRange(38129, 38129)
    tracker = SuccessorTracker()
    tracker.initial_load([])
    for sequence in (38130, 38131):
        assert write_ledger(backend, tracker, sequence, {}) is True
    assert backend.fetch_ledger_range() == LedgerRange(38129, 38131)
    assert backend.fetch_ledger_by_sequence(38129) == first
    assert backend.fetch_ledger_by_hash(first.hash) == first
    assert backend.fetch_ledger_by_sequence(38131) == make_header(38131)
    assert backend.fetch_ledger_by_hash(make_header(38130).hash) == make_header(38130)
    assert backend.fetch_ledger_by_sequence(38128) is None
    assert backend.fetch_ledger_by_sequence(38132) is None
    assert backend.fetch_ledger_by_hash(bytes(32)) is None
    assert backend.fetch_latest_ledger_sequence() == 38131
    reader = store.open()
    assert reader.fetch_ledger_range() == LedgerRange(38129, 38131)
    assert reader.fetch_ledger_by_hash(first.hash) == first
    # A ledger out of order does not move the range.
    header = make_header(38140)
    backend.write_ledger(header, header.serialize())
    assert backend.finish_writes(38140) is False
    assert reader.hard_fetch_ledger_range() == LedgerRange(38129, 38131)


def test_malformed_writes_are_refused(backend: BackendInterface):
    header = make_header(5)
    with pytest.raises(LedgerInputError, match="not the header given"):
        backend.write_ledger(header, make_header(6).serialize())
    with pytest.raises(LedgerInputError, match="key must be 32 bytes"):
        backend.write_ledger_object(b"\x01" * 31, 5, b"x")
    with pytest.raises(LedgerInputError, match="account must be 20 bytes"):
        backend.write_account_transactions(
            [AccountTransactionsData(frozenset([b"a"]), 5, 0, key(1))]
        )
    with pytest.raises(LedgerInputError, match="limit"):
        backend.fetch_ledger_page(None, 5, 0)


# --------------------------------------------------------------------------------------------
# State: objects, diffs, pages


def test_objects_versions_deletes_and_diffs(backend: BackendInterface):
    tracker = SuccessorTracker()
    a, b, c = key(1), key(2), key(3)
    assert write_ledger(backend, tracker, 10, {a: b"a1", b: b"b1"}, initial=True)
    assert write_ledger(backend, tracker, 11, {a: b"a2", c: b"c1"})
    assert write_ledger(backend, tracker, 12, {b: b""})
    assert write_ledger(backend, tracker, 13, {})
    assert backend.fetch_ledger_object(a, 10) == b"a1"
    assert backend.fetch_ledger_object(a, 11) == b"a2"
    assert backend.fetch_ledger_object(a, 13) == b"a2"
    assert backend.fetch_ledger_object(b, 11) == b"b1"
    assert backend.fetch_ledger_object(b, 12) is None
    assert backend.fetch_ledger_object(c, 10) is None
    assert backend.fetch_ledger_object(c, 14) is None  # beyond the range
    assert backend.fetch_ledger_objects([c, b, a, key(9)], 11) == [b"c1", b"b1", b"a2", b""]
    assert backend.fetch_ledger_objects([c, b, a], 12) == [b"c1", b"", b"a2"]
    assert backend.fetch_ledger_diff(10) == []  # the initial load writes no diff
    assert backend.fetch_ledger_diff(11) == sorted(
        [LedgerObject(a, b"a2"), LedgerObject(c, b"c1")], key=lambda o: o.key
    )
    assert backend.fetch_ledger_diff(12) == [LedgerObject(b, b"")]
    assert backend.fetch_ledger_diff(13) == []
    assert backend.fetch_successor_key(FIRST_KEY, 10) == min(a, b)
    successor = backend.fetch_successor_object(FIRST_KEY, 12)
    assert successor == LedgerObject(min(a, c), {a: b"a2", c: b"c1"}[min(a, c)])
    assert backend.fetch_successor_key(max(a, b, c), 11) is None


@pytest.mark.slow
def test_random_history_page_walks_match_a_brute_force_model(backend: BackendInterface):
    rng = random.Random(7)
    universe = [key(n) for n in range(400)]
    state = {k: rng.randbytes(rng.randrange(1, 40)) for k in rng.sample(universe, 60)}
    tracker = SuccessorTracker()
    assert write_ledger(backend, tracker, 500, state, initial=True)
    history = {500: dict(state)}
    for sequence in range(501, 509):
        changes: dict[bytes, bytes] = {}
        for k in rng.sample(sorted(state), 6):
            changes[k] = b""  # deleted
        for k in rng.sample(sorted(set(state) - set(changes)), 6):
            changes[k] = rng.randbytes(20)  # modified
        for k in rng.sample(sorted(set(universe) - set(state)), 8):
            changes[k] = rng.randbytes(20)  # created
        assert write_ledger(backend, tracker, sequence, changes)
        for k, blob in changes.items():
            if blob:
                state[k] = blob
            else:
                del state[k]
        history[sequence] = dict(state)
    for sequence, expected in history.items():
        model = [LedgerObject(k, expected[k]) for k in sorted(expected)]
        for limit in (7, len(model), 1000):
            objects, calls = walk(backend, sequence, limit)
            assert objects == model, f"walk at {sequence} with limit {limit}"
            assert calls == len(model) // limit + 1
    # A walk at the newest ledger "out of order" still returns the newest objects.
    out_of_order = backend.fetch_ledger_page(None, 508, 1000, out_of_order=True)
    assert [o.key for o in out_of_order.objects] == sorted(history[508])


def test_an_exactly_full_last_page_is_followed_by_one_empty_page(backend: BackendInterface):
    tracker = SuccessorTracker()
    state = {key(n): bytes([n + 1]) for n in range(6)}
    assert write_ledger(backend, tracker, 3, state, initial=True)
    ordered = sorted(state)
    first = backend.fetch_ledger_page(None, 3, 3)
    assert [o.key for o in first.objects] == ordered[:3]
    assert first.cursor == ordered[2]
    second = backend.fetch_ledger_page(first.cursor, 3, 3)
    assert [o.key for o in second.objects] == ordered[3:]
    assert second.cursor == ordered[5]
    third = backend.fetch_ledger_page(second.cursor, 3, 3)
    assert third.objects == ()
    assert third.cursor is None
    short = backend.fetch_ledger_page(ordered[3], 3, 5)
    assert [o.key for o in short.objects] == ordered[4:]
    assert short.cursor is None


# --------------------------------------------------------------------------------------------
# Transactions


ALICE = b"\xa1" * 20
BOB = b"\xb0" * 20


def test_transactions_by_hash_and_by_ledger(backend: BackendInterface):
    tracker = SuccessorTracker()
    txs = [Tx(0, frozenset([ALICE])), Tx(1, frozenset([ALICE, BOB])), Tx(2)]
    assert write_ledger(backend, tracker, 20, {}, initial=True, txs=txs)
    close_time = make_header(20).close_time
    for tx in txs:
        assert backend.fetch_transaction(tx.hash_in(20)) == TransactionAndMetadata(
            tx.blob(20), tx.meta(20), 20, close_time
        )
    assert backend.fetch_transaction(key(99)) is None
    hashes = [tx.hash_in(20) for tx in txs]
    assert backend.fetch_all_transaction_hashes_in_ledger(20) == sorted(hashes)
    assert backend.fetch_all_transaction_hashes_in_ledger(21) == []
    found = backend.fetch_transactions([hashes[2], key(99), hashes[0]])
    assert found[0] is not None
    assert found[0].transaction == txs[2].blob(20)
    assert found[1] is None
    assert found[2] is not None
    assert found[2].transaction == txs[0].blob(20)
    every = backend.fetch_all_transactions_in_ledger(20)
    assert sorted(t.transaction for t in every) == sorted(tx.blob(20) for tx in txs)


def _account_history(backend: BackendInterface) -> list[tuple[int, int]]:
    """Writes Alice's history; returns its (ledger, index) pairs oldest first."""
    tracker = SuccessorTracker()
    layout = {101: [0, 1], 102: [0], 103: [2, 5], 104: [1]}
    assert write_ledger(backend, tracker, 100, {}, initial=True)
    for sequence, indexes in layout.items():
        txs = [Tx(i, frozenset([ALICE])) for i in indexes] + [Tx(9, frozenset([BOB]))]
        assert write_ledger(backend, tracker, sequence, {}, txs=txs)
    return [(s, i) for s, indexes in layout.items() for i in indexes]


def _pages(
    backend: BackendInterface,
    account: bytes,
    limit: int,
    forward: bool,
    cursor: TransactionsCursor | None = None,
) -> list[list[tuple[int, int]]]:
    pages = []
    while True:
        page = backend.fetch_account_transactions(account, limit, forward, cursor)
        pages.append(
            [(t.ledger_sequence, int.from_bytes(t.metadata[-4:], "big")) for t in page.transactions]
        )
        if page.cursor is None:
            return pages
        cursor = page.cursor


def test_account_transactions_page_both_ways_with_an_extra_empty_page(backend: BackendInterface):
    history = _account_history(backend)
    newest_first = list(reversed(history))
    assert _pages(backend, ALICE, 3, False) == [newest_first[:3], newest_first[3:], []]
    assert _pages(backend, ALICE, 4, False) == [newest_first[:4], newest_first[4:]]
    assert _pages(backend, ALICE, 3, True) == [history[:3], history[3:], []]
    assert _pages(backend, ALICE, 100, True) == [history]
    first = backend.fetch_account_transactions(ALICE, 2, False)
    assert first.cursor == TransactionsCursor(103, 5)
    forward = backend.fetch_account_transactions(ALICE, 2, True)
    assert forward.cursor == TransactionsCursor(101, 1)
    # Explicit cursors, as the account_tx handler passes them.
    assert _pages(backend, ALICE, 10, False, TransactionsCursor(103, 2**31 - 1)) == [
        [(103, 5), (103, 2), (102, 0), (101, 1), (101, 0)]
    ]
    assert _pages(backend, ALICE, 10, True, TransactionsCursor(102, 2**31 - 1)) == [
        [(103, 2), (103, 5), (104, 1)]
    ]
    assert _pages(backend, BOB, 10, False) == [[(s, 9) for s in (104, 103, 102, 101)]]
    assert _pages(backend, b"\x01" * 20, 10, True) == [[]]


# --------------------------------------------------------------------------------------------
# Books


def directory_blob(root: bytes, indexes: Sequence[bytes], index_next: int, rate: int) -> bytes:
    from xrpl.core.binarycodec import encode

    fields: dict[str, Any] = {
        "LedgerEntryType": "DirectoryNode",
        "Flags": 0,
        "RootIndex": root.hex().upper(),
        "Indexes": [i.hex().upper() for i in indexes],
        "TakerPaysCurrency": "00" * 20,
        "TakerPaysIssuer": "00" * 20,
        "TakerGetsCurrency": "0000000000000000000000005553440000000000",
        "TakerGetsIssuer": "AA" * 20,
        "ExchangeRate": rate.to_bytes(8, "big").hex().upper(),
    }
    if index_next:
        fields["IndexNext"] = f"{index_next:X}"
    return bytes.fromhex(encode(fields))


def test_book_offers_walk_directory_pages_and_qualities(backend: BackendInterface):
    base = bytes([0x42]) * 24 + bytes(8)
    best, worse = base[:24] + (10).to_bytes(8, "big"), base[:24] + (20).to_bytes(8, "big")
    offers = [key(1000 + n) for n in range(7)]
    page_1 = keylets.directory_page(best, 1)
    state = {
        best: directory_blob(best, offers[:2], 1, 10),
        page_1: directory_blob(best, offers[2:4], 0, 10),
        worse: directory_blob(worse, offers[4:7], 0, 20),
        key(1): b"unrelated",
    }
    for n, offer in enumerate(offers):
        state[offer] = b"offer-%d" % n
    tracker = SuccessorTracker()
    assert write_ledger(backend, tracker, 30, state, initial=True, book_bases=[book_base(best)])
    page = backend.fetch_book_offers(base, 30, 100)
    assert [o.key for o in page.offers] == offers
    assert [o.blob for o in page.offers] == [b"offer-%d" % n for n in range(7)]
    assert page.cursor is None
    assert [o.key for o in backend.fetch_book_offers(base, 30, 3).offers] == offers[:3]
    assert [o.key for o in backend.fetch_book_offers(base, 30, 5).offers] == offers[:5]
    # The best directory is consumed: the book base follows to the next quality.
    changes = {
        best: b"",
        page_1: b"",
        offers[0]: b"",
        offers[1]: b"",
        offers[2]: b"",
        offers[3]: b"",
    }
    assert write_ledger(backend, tracker, 31, changes, book_bases=[base])
    assert [o.key for o in backend.fetch_book_offers(base, 31, 100).offers] == offers[4:]
    assert [o.key for o in backend.fetch_book_offers(base, 30, 100).offers] == offers
    other_book = bytes([0x43]) * 24 + bytes(8)
    assert backend.fetch_book_offers(other_book, 31, 10).offers == ()


# --------------------------------------------------------------------------------------------
# NFTs


ISSUER = b"\x15" * 20
OTHER_ISSUER = b"\x16" * 20
OWNER = b"\x0e" * 20


def token(issuer: bytes, taxon: int, serial: int) -> bytes:
    scrambled = taxon ^ ((384160001 * serial + 2459) & 0xFFFFFFFF)
    return b"\x00\x08\x00\x00" + issuer + scrambled.to_bytes(4, "big") + serial.to_bytes(4, "big")


def test_nft_state_uris_and_issuer_listing(backend: BackendInterface):
    t1, t2, t3 = token(ISSUER, 1, 5), token(ISSUER, 0, 6), token(ISSUER, 1, 7)
    t4 = token(OTHER_ISSUER, 1, 1)
    tracker = SuccessorTracker()
    assert write_ledger(backend, tracker, 50, {}, initial=True)
    assert write_ledger(
        backend,
        tracker,
        51,
        {},
        nfts=[
            NFTsData(t1, 51, ISSUER, False, b"ipfs://one"),
            NFTsData(t2, 51, ISSUER, False, b""),
            NFTsData(t4, 51, OTHER_ISSUER, False, b"x"),
        ],
    )
    assert write_ledger(backend, tracker, 52, {}, nfts=[NFTsData(t1, 52, OWNER, False, None)])
    assert write_ledger(
        backend,
        tracker,
        53,
        {},
        nfts=[
            NFTsData(t1, 53, OWNER, True, None),
            NFTsData(t3, 53, ISSUER, False, b"ipfs://three"),
            NFTsData(t2, 53, ISSUER, False, b"ipfs://new", only_uri_changed=True),
        ],
    )
    one_at = {s: backend.fetch_nft(t1, s) for s in (50, 51, 52, 53)}
    assert one_at[50] is None
    assert one_at[51] is not None
    assert (one_at[51].owner, one_at[51].uri, one_at[51].is_burned) == (
        ISSUER,
        b"ipfs://one",
        False,
    )
    assert one_at[52] is not None
    assert (one_at[52].owner, one_at[52].ledger_sequence, one_at[52].is_burned) == (
        OWNER,
        52,
        False,
    )
    assert one_at[53] is not None
    assert (one_at[53].owner, one_at[53].is_burned, one_at[53].uri) == (OWNER, True, b"ipfs://one")
    two = backend.fetch_nft(t2, 53)
    assert two is not None
    assert (two.uri, two.ledger_sequence) == (b"ipfs://new", 51)
    two_before = backend.fetch_nft(t2, 52)
    assert two_before is not None
    assert two_before.uri == b""

    expected_order = [t2, *sorted([t1, t3])]
    listing = backend.fetch_nfts_by_issuer(ISSUER, None, 53, 10)
    assert [n.token_id for n in listing.nfts] == expected_order
    assert listing.cursor is None
    first = backend.fetch_nfts_by_issuer(ISSUER, None, 53, 2)
    assert [n.token_id for n in first.nfts] == expected_order[:2]
    assert first.cursor == expected_order[1]
    rest = backend.fetch_nfts_by_issuer(ISSUER, None, 53, 2, first.cursor)
    assert [n.token_id for n in rest.nfts] == expected_order[2:]
    assert rest.cursor is None
    burned = next(n for n in listing.nfts if n.token_id == t1)
    assert burned.is_burned
    taxon_one = backend.fetch_nfts_by_issuer(ISSUER, 1, 53, 10)
    assert [n.token_id for n in taxon_one.nfts] == sorted([t1, t3])
    # At 52, t3 does not exist yet: skipped, but it still counts for the cursor.
    early = backend.fetch_nfts_by_issuer(ISSUER, 1, 52, 2)
    assert [n.token_id for n in early.nfts] == [t1]
    assert early.cursor == max(t1, t3)
    assert [n.token_id for n in backend.fetch_nfts_by_issuer(OTHER_ISSUER, None, 53, 5).nfts] == [
        t4
    ]
    assert backend.fetch_nfts_by_issuer(ISSUER, 2, 53, 5).nfts == ()


def test_nft_transactions_forward_cursor_steps_past_the_last_row(backend: BackendInterface):
    t1 = token(ISSUER, 1, 5)
    tracker = SuccessorTracker()
    assert write_ledger(backend, tracker, 60, {}, initial=True)
    layout = {61: [0], 62: [3], 63: [1]}
    for sequence, indexes in layout.items():
        txs = [Tx(i, nft=t1) for i in indexes] + [Tx(7)]
        assert write_ledger(backend, tracker, sequence, {}, txs=txs)

    def rows(page: TransactionsAndCursor) -> list[tuple[int, int]]:
        return [
            (t.ledger_sequence, int.from_bytes(t.metadata[-4:], "big")) for t in page.transactions
        ]

    forward = backend.fetch_nft_transactions(t1, 2, True)
    assert rows(forward) == [(61, 0), (62, 3)]
    assert forward.cursor == TransactionsCursor(62, 4)
    following = backend.fetch_nft_transactions(t1, 2, True, forward.cursor)
    assert rows(following) == [(63, 1)]
    assert following.cursor is None
    full = backend.fetch_nft_transactions(t1, 3, True)
    assert full.cursor == TransactionsCursor(63, 2)
    assert backend.fetch_nft_transactions(t1, 3, True, full.cursor).transactions == ()
    backward = backend.fetch_nft_transactions(t1, 2, False)
    assert rows(backward) == [(63, 1), (62, 3)]
    assert backward.cursor == TransactionsCursor(62, 3)
    assert rows(backend.fetch_nft_transactions(t1, 2, False, backward.cursor)) == [(61, 0)]


# --------------------------------------------------------------------------------------------
# The fence: crashes and concurrent writers


CRASHING_WRITER = """
import json, os, sys
from chainloom.ledger.service import make_backend
from tests.integration.ledger.test_conformance import Tx, ALICE, key, make_header
backend = make_backend(json.loads(sys.argv[1]))
header = make_header(71)
backend.write_ledger(header, header.serialize())
backend.write_ledger_object(key(2), 71, b"new")
from chainloom.ledger.successor import SuccessorTracker
tracker = SuccessorTracker()
tracker.initial_load([key(1)])
for row_key, next_key in tracker.apply([key(2)], []):
    backend.write_successor(row_key, 71, next_key)
tx = Tx(0, frozenset([ALICE]))
backend.write_transaction(tx.hash_in(71), 71, 1, tx.blob(71), tx.meta(71))
from chainloom.ledger.types import AccountTransactionsData
backend.write_account_transactions([AccountTransactionsData(tx.accounts, 71, 0, tx.hash_in(71))])
if hasattr(backend, "wait_for_writes"):
    backend.wait_for_writes()  # every row is in the database; only the fence is missing
os._exit(3)
"""


def _ledger_71_is_visible(reader: BackendInterface) -> bool:
    tx_hash = Tx(0).hash_in(71)
    seen = [
        reader.fetch_ledger_by_sequence(71) is not None,
        reader.fetch_ledger_object(key(2), 71) is not None,
        reader.fetch_transaction(tx_hash) is not None,
        bool(reader.fetch_account_transactions(ALICE, 10, False).transactions),
        bool(reader.fetch_account_transactions(ALICE, 10, True).transactions),
        reader.fetch_ledger_by_hash(make_header(71).hash) is not None,
    ]
    assert len(set(seen)) == 1, f"ledger 71 half visible: {seen}"
    return seen[0]


def test_a_ledger_written_without_finish_writes_stays_invisible(store: Store):
    writer = store.open()
    tracker = SuccessorTracker()
    assert write_ledger(writer, tracker, 70, {key(1): b"one"}, initial=True)
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, store.config_json()],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert crashed.returncode == 3, crashed.stderr
    reader = store.open()
    assert reader.fetch_ledger_range() == LedgerRange(70, 70)
    assert not _ledger_71_is_visible(reader)
    assert [o.key for o in walk(reader, 70, 10)[0]] == [key(1)]
    # The restarted writer repeats ledger 71 and finishes it.
    restarted = store.open()
    assert write_ledger(restarted, tracker, 71, {key(2): b"new"}, txs=[Tx(0, frozenset([ALICE]))])
    assert reader.hard_fetch_ledger_range() == LedgerRange(70, 71)
    assert _ledger_71_is_visible(reader)
    assert [o.key for o in walk(reader, 71, 10)[0]] == sorted([key(1), key(2)])


@pytest.mark.parametrize("rounds", [3])
def test_of_two_writers_exactly_one_advances_the_range(store: Store, rounds: int):
    first, second = store.open(), store.open()
    tracker = SuccessorTracker()
    assert write_ledger(first, tracker, 80, {key(1): b"one"}, initial=True)
    assert second.hard_fetch_ledger_range() == LedgerRange(80, 80)
    for sequence in range(81, 81 + rounds):
        start = threading.Barrier(2)
        # SQLite serialises the two transactions, so only Cassandra races the LWTs themselves.
        before_finish = threading.Barrier(2) if store.kind == "cassandra" else None
        results: dict[str, bool | BaseException] = {}

        def run(
            name: str,
            backend: BackendInterface,
            seq: int = sequence,
            start: threading.Barrier = start,
            before_finish: threading.Barrier | None = before_finish,
            results: dict[str, bool | BaseException] = results,
        ) -> None:
            try:
                own = SuccessorTracker()
                own.initial_load([key(1)] + [key(s) for s in range(81, seq)])
                start.wait(timeout=30)
                write_ledger(backend, own, seq, {key(seq): b"x"}, finish=False)
                if before_finish:
                    before_finish.wait(timeout=30)
                results[name] = backend.finish_writes(seq)
            except BaseException as error:  # reported below
                results[name] = error

        threads = [
            threading.Thread(target=run, args=("first", first)),
            threading.Thread(target=run, args=("second", second)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sorted(map(repr, results.values())) == ["False", "True"], results
        winner = first if results["first"] is True else second
        loser = second if winner is first else first
        assert winner.fetch_ledger_range() == LedgerRange(80, sequence)
        assert loser.fetch_ledger_range() == LedgerRange(80, sequence - 1)
        assert loser.hard_fetch_ledger_range() == LedgerRange(80, sequence)
        assert loser.fetch_ledger_object(key(sequence), sequence) == b"x"


# --------------------------------------------------------------------------------------------
# Real data: ledger 38129


def test_ledger_38129_state_loads_and_walks_in_key_order(backend: BackendInterface, xrpl_vectors):
    vectors = [
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_object" and v["expected"].get("state_at_ledger") == 38129
    ]
    state = {bytes.fromhex(v["expected"]["key"]): bytes.fromhex(v["hex"]) for v in vectors}
    assert len(state) == 261
    bases = [
        bytes.fromhex(v["expected"]["book_base"])
        for v in vectors
        if v["expected"].get("is_book_dir")
    ]
    header_vector = next(
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_header"
        and v["expected"]["ledger_index"] == 38129
        and len(v["hex"]) == 300
    )
    blob = bytes.fromhex(header_vector["hex"])
    header = LedgerHeader.parse(blob)
    tracker = SuccessorTracker()
    backend.start_writes()
    backend.write_ledger(header, blob)
    rows = tracker.initial_load(state, bases)
    assert len(rows) == 266
    for row_key, next_key in rows:
        backend.write_successor(row_key, 38129, next_key)
    for object_key, object_blob in state.items():
        backend.write_ledger_object(object_key, 38129, object_blob)
    assert backend.finish_writes(38129) is True

    expected = [LedgerObject(k, state[k]) for k in sorted(state)]
    for limit in (50, 261, 2048):
        objects, calls = walk(backend, 38129, limit)
        assert objects == expected
        assert calls == 261 // limit + 1
    assert expected[0].key.hex().upper().startswith("02CE52E3")
    assert expected[-1].key.hex().upper().startswith("FFA9A0BE")
    # Book bases lead to their first directory, and root books list their offers.
    for vector in vectors:
        if not (vector["expected"].get("is_book_dir") and vector["expected"].get("is_root_page")):
            continue
        base = bytes.fromhex(vector["expected"]["book_base"])
        first_dir = backend.fetch_successor_key(base, 38129)
        assert first_dir is not None
        assert first_dir[:24] == base[:24]
        assert first_dir <= bytes.fromhex(vector["expected"]["key"])
        offers = backend.fetch_book_offers(base, 38129, 50).offers
        indexes = vector["expected"]["decoded"]["Indexes"]
        assert set(indexes) <= {o.key.hex().upper() for o in offers}
        for offer in offers:
            assert offer.blob == state[offer.key]


def test_a_concurrent_reader_never_sees_a_ledger_half_written(store: Store):
    """Every ledger rewrites all objects; a reader at the range's max must see only that
    ledger's versions, however the writer's rows interleave with the reader's polls."""
    writer, reader = store.open(), store.open()
    keys = [key(n) for n in range(120)]
    tracker = SuccessorTracker()
    assert write_ledger(writer, tracker, 200, dict.fromkeys(keys, b"v200"), initial=True)
    last = 212
    problems: list[str] = []
    checked: set[int] = set()

    def read_until_done() -> None:
        while True:
            current = reader.hard_fetch_ledger_range()
            assert current is not None
            sequence = current.max_sequence
            blobs = reader.fetch_ledger_objects(keys, sequence)
            wrong = {blob for blob in blobs if blob != b"v%d" % sequence}
            if wrong:
                problems.append(f"at {sequence} saw {sorted(wrong)[:3]}")
            checked.add(sequence)
            if sequence == last:
                return

    thread = threading.Thread(target=read_until_done)
    thread.start()
    for sequence in range(201, last + 1):
        assert write_ledger(writer, tracker, sequence, dict.fromkeys(keys, b"v%d" % sequence))
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert problems == []
    assert last in checked
    assert len(checked) >= 2


def test_an_abandoned_ledger_leaves_nothing_visible_and_the_next_attempt_succeeds(store: Store):
    backend = store.open()
    tracker = SuccessorTracker()
    assert write_ledger(backend, tracker, 90, {key(1): b"one"}, initial=True)
    header = make_header(91)
    backend.write_ledger(header, header.serialize())
    backend.write_ledger_object(key(1), 91, b"stray")
    if store.kind == "cassandra":
        backend.write_ledger_object(key(2), 91, b"x" * (5 * 1024 * 1024))  # rejected by the server
    backend.abandon_writes()
    assert backend.fetch_ledger_range() == LedgerRange(90, 90)
    assert write_ledger(backend, tracker, 91, {key(3): b"three"}) is True
    assert backend.fetch_ledger_object(key(3), 91) == b"three"
    expected_one = b"one" if store.kind == "sqlite" else b"stray"  # Cassandra cannot undo rows
    assert backend.fetch_ledger_object(key(1), 91) == expected_one
