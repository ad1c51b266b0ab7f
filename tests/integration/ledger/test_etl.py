"""The ETL against both real backends: initial load, following ledgers, resume, refusals,
write conflicts. Each test runs on SQLite and on a fresh Cassandra keyspace."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.errors import LedgerIntegrityError
from chainloom.ledger.etl import LedgerEtl, Progress
from chainloom.ledger.nft import nfts_from_object
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.types import LedgerHeader, LedgerObject
from chainloom.ledger.xrpl.parse import parse_metadata, parse_transaction
from chainloom.settings import CassandraSettings
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger

FIRST = 38129
LEDGERS = 8


@dataclass
class Dump:
    path: Path
    initial: SourceLedger
    records: dict[int, SourceLedger]
    states: dict[int, dict[bytes, bytes]] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return max(self.records)


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Dump:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=5, txs_per_ledger=40)
    path = tmp_path_factory.mktemp("dump") / "ledgers.jsonl"
    result = Dump(path, initial, {FIRST: initial})
    state = {o.key: o.blob for o in initial.objects}
    result.states[FIRST] = dict(state)
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
            result.records[sequence] = ledger
            for obj in ledger.objects:
                if obj.blob:
                    state[obj.key] = obj.blob
                else:
                    del state[obj.key]
            result.states[sequence] = dict(state)
    return result


@dataclass
class Store:
    config: DatabaseSettings
    opened: list[BackendInterface] = field(default_factory=list)

    def open(self) -> BackendInterface:
        backend = make_backend(self.config)
        self.opened.append(backend)
        return backend


@pytest.fixture(params=["sqlite", "cassandra"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
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
    result = Store(config)
    yield result
    for backend in result.opened:
        backend.close()


class ListSource:
    """A source over records in memory (to hand the ETL deliberately broken input)."""

    def __init__(self, records: dict[int, SourceLedger], first: int) -> None:
        self.records = records
        self.first = first

    def first_sequence(self) -> int:
        return self.first

    def latest_sequence(self) -> int | None:
        return max(self.records)

    def fetch_full(self, sequence: int) -> SourceLedger:
        return self.records[sequence]

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        return self.records.get(sequence)

    def close(self) -> None:
        pass


_ROWS_AT = (
    ("objects", "sequence"),
    ("successor", "seq"),
    ("diff", "seq"),
    ("ledgers", "sequence"),
    ("ledger_transactions", "ledger_sequence"),
    ("transactions", "ledger_sequence"),
    ("nf_tokens", "sequence"),
)


def raw_rows_at(store: Store, sequence: int) -> int:
    """Rows written for ``sequence`` in the main tables, read straight from the database."""
    total = 0
    if store.config.type == "sqlite":
        import sqlite3

        db = sqlite3.connect(store.config.sqlite.path)
        try:
            for table, column in _ROWS_AT:
                query = f"SELECT COUNT(*) FROM {table} WHERE {column} = ?"
                total += db.execute(query, (sequence,)).fetchone()[0]
        finally:
            db.close()
        return total
    from cassandra.cluster import Cluster

    settings = store.config.cassandra
    cluster = Cluster(list(settings.hosts), port=settings.port, protocol_version=5)
    session = cluster.connect(settings.keyspace)
    try:
        for table, column in _ROWS_AT:
            query = f"SELECT COUNT(*) FROM {table} WHERE {column} = %s ALLOW FILTERING"
            total += session.execute(query, (sequence,)).one()[0]
    finally:
        cluster.shutdown()
    return total


def walk(backend: BackendInterface, sequence: int, limit: int = 100) -> list[LedgerObject]:
    objects: list[LedgerObject] = []
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, limit)
        objects.extend(page.objects)
        if page.cursor is None:
            return objects
        cursor = page.cursor


def test_initial_load_of_38129_walks_its_261_objects(store: Store, dump: Dump) -> None:
    backend = store.open()
    reports: list[Progress] = []
    summary = LedgerEtl(backend, FileLedgerSource(dump.path), on_progress=reports.append).run(
        stop=FIRST
    )
    assert summary.ledgers == 1
    assert summary.stopped_because == "reached stop"
    assert [r.sequence for r in reports] == [FIRST]
    assert reports[0].lag == LEDGERS
    objects = walk(backend, FIRST)
    assert len(objects) == 261
    assert objects == sorted(dump.initial.objects, key=lambda o: o.key)
    range_ = backend.hard_fetch_ledger_range()
    assert range_ is not None
    assert (range_.min_sequence, range_.max_sequence) == (FIRST, FIRST)
    header = backend.fetch_ledger_by_sequence(FIRST)
    assert header == LedgerHeader.parse(dump.initial.header)
    assert backend.fetch_ledger_diff(FIRST) == []
    ((transaction, metadata),) = dump.initial.transactions
    tx = parse_transaction(transaction)
    stored = backend.fetch_transaction(tx.hash)
    assert stored is not None
    assert (stored.transaction, stored.metadata, stored.ledger_sequence) == (
        transaction,
        metadata,
        FIRST,
    )
    for account in parse_metadata(metadata).affected_accounts:
        page = backend.fetch_account_transactions(account, 10, forward=False)
        assert [t.transaction for t in page.transactions] == [transaction]


def test_following_ledgers_stores_every_state_diff_and_history(store: Store, dump: Dump) -> None:
    backend = store.open()
    summary = LedgerEtl(backend, FileLedgerSource(dump.path), verify_state=True).run()
    assert summary.stopped_because == "source exhausted"
    assert summary.last_committed == dump.last
    assert summary.ledgers == LEDGERS + 1
    for sequence in (FIRST, FIRST + 1, FIRST + LEDGERS // 2, dump.last):
        expected = dump.states[sequence]
        assert {o.key: o.blob for o in walk(backend, sequence, limit=500)} == expected
        got = backend.fetch_ledger_objects(sorted(expected)[:5], sequence)
        assert got == [expected[k] for k in sorted(expected)[:5]]
    for sequence in range(FIRST + 1, dump.last + 1):
        record = dump.records[sequence]
        diff = {o.key: o.blob for o in backend.fetch_ledger_diff(sequence)}
        assert diff == {o.key: o.blob for o in record.objects}
        hashes = {parse_transaction(t).hash for t, _ in record.transactions}
        assert set(backend.fetch_all_transaction_hashes_in_ledger(sequence)) == hashes
    # One account's history, newest first, is what the metadata says.
    expected_rows: dict[bytes, list[tuple[int, int]]] = {}
    for sequence, record in sorted(dump.records.items()):
        for _, metadata in record.transactions:
            meta = parse_metadata(metadata)
            for account in meta.affected_accounts:
                expected_rows.setdefault(account, []).append((sequence, meta.transaction_index))
    busiest = max(expected_rows, key=lambda a: len(expected_rows[a]))
    page = backend.fetch_account_transactions(busiest, 1000, forward=False)
    got_rows = [
        (t.ledger_sequence, parse_metadata(t.metadata).transaction_index) for t in page.transactions
    ]
    assert got_rows == sorted(expected_rows[busiest], reverse=True)
    # Every NFT in a page at the end is owned by that page's account, not burned.
    final = dump.states[dump.last]
    checked = 0
    for key, blob in final.items():
        for token in nfts_from_object(key, blob, dump.last):
            nft = backend.fetch_nft(token.token_id, dump.last)
            assert nft is not None
            assert nft.owner == key[:20]
            assert not nft.is_burned
            checked += 1
    assert checked > 0


def test_a_second_run_resumes_after_the_stored_range(store: Store, dump: Dump) -> None:
    first = LedgerEtl(store.open(), FileLedgerSource(dump.path)).run(stop=FIRST + 3)
    assert first.last_committed == FIRST + 3
    backend = store.open()
    second = LedgerEtl(backend, FileLedgerSource(dump.path), verify_state=True).run()
    assert second.resumed_from == FIRST + 3
    assert second.first_committed == FIRST + 4
    assert second.last_committed == dump.last
    assert {o.key: o.blob for o in walk(backend, dump.last, 500)} == dump.states[dump.last]
    again = LedgerEtl(backend, FileLedgerSource(dump.path)).run()
    assert again.ledgers == 0


def _broken(dump: Dump, how: str) -> tuple[SourceLedger, str]:
    sequence = FIRST + 3
    record = dump.records[sequence]
    if how == "delete-missing":
        ghost = LedgerObject(b"\x42" * 32, b"")
        return replace(record, objects=(*record.objects, ghost)), "which does not exist"
    if how == "out-of-order":
        return dump.records[sequence + 1], "arrived out of order"
    if how == "bad-hash":
        return replace(record, header=record.header[:-1] + bytes([record.header[-1] ^ 1])), (
            "does not match"
        )
    if how == "bad-parent":
        header = LedgerHeader.parse(record.header)
        forged = replace(header, parent_hash=b"\x01" * 32)
        forged = replace(forged, hash=forged.compute_hash())
        return replace(record, header=forged.serialize(include_hash=True)), "parent hash"
    if how == "tampered-tx":
        (tx, meta), *rest = record.transactions
        return replace(record, transactions=((tx, meta[:-1]), *rest)), "transactions hash"
    raise AssertionError(how)


def test_corrupt_input_is_refused_and_nothing_stored_changes(store: Store, dump: Dump) -> None:
    backend = store.open()
    good_until = FIRST + 2
    LedgerEtl(backend, FileLedgerSource(dump.path)).run(stop=good_until)
    before = walk(backend, good_until, 500)
    reader = store.open()
    for how in ("delete-missing", "out-of-order", "bad-hash", "bad-parent", "tampered-tx"):
        bad, message = _broken(dump, how)
        records = {s: r for s, r in dump.records.items() if s <= good_until}
        records[good_until + 1] = bad
        with pytest.raises(LedgerIntegrityError, match=message) as refused:
            LedgerEtl(backend, ListSource(records, FIRST)).run()
        named = LedgerHeader.parse(bad.header, verify=False).sequence
        assert f"ledger {named}" in str(refused.value), how
        assert refused.value.sequence == named
        range_ = reader.hard_fetch_ledger_range()
        assert range_ is not None
        assert range_.max_sequence == good_until
        assert reader.fetch_ledger_by_sequence(good_until + 1) is None
        assert raw_rows_at(store, good_until + 1) == 0, how
        assert walk(reader, good_until, 500) == before
    # The good ledgers still load afterwards.
    summary = LedgerEtl(reader, FileLedgerSource(dump.path)).run()
    assert summary.last_committed == dump.last


def test_a_state_that_does_not_hash_to_the_header_is_refused(store: Store, dump: Dump) -> None:
    initial = dump.initial
    damaged = replace(initial, objects=initial.objects[:-1])
    backend = store.open()
    with pytest.raises(LedgerIntegrityError, match=f"ledger {FIRST}: the state's SHAMap root"):
        LedgerEtl(backend, ListSource({FIRST: damaged}, FIRST)).run()
    assert backend.hard_fetch_ledger_range() is None


class _RacingSource(ListSource):
    """Lets another writer commit two ledgers while this ETL is fetching one."""

    def __init__(self, dump: Dump, rival: LedgerEtl) -> None:
        super().__init__(dump.records, FIRST)
        self.rival = rival

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        if sequence == FIRST + 2:
            self.rival.run(stop=FIRST + 3)
        return super().fetch_diff(sequence)


def test_a_write_conflict_stops_the_writer_that_lost(store: Store, dump: Dump) -> None:
    LedgerEtl(store.open(), FileLedgerSource(dump.path)).run(stop=FIRST + 1)
    rival = LedgerEtl(store.open(), FileLedgerSource(dump.path))
    loser = store.open()
    summary = LedgerEtl(loser, _RacingSource(dump, rival)).run()
    assert summary.stopped_because.startswith("write conflict")
    assert "ledger 38131" in summary.stopped_because
    range_ = loser.hard_fetch_ledger_range()
    assert range_ is not None
    assert range_.max_sequence == FIRST + 3
    assert {o.key: o.blob for o in walk(loser, FIRST + 3, 500)} == dump.states[FIRST + 3]


def test_verify_state_refuses_a_diff_that_omits_a_change(dump: Dump, tmp_path: Path) -> None:
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "v.db")}})
    try:
        LedgerEtl(backend, FileLedgerSource(dump.path)).run(stop=FIRST + 1)
        record = dump.records[FIRST + 2]
        modified = next(o for o in record.objects if o.blob and o.key in dump.states[FIRST + 1])
        short = replace(record, objects=tuple(o for o in record.objects if o != modified))
        records = {**dump.records, FIRST + 2: short}
        # Without the state check the omission is undetectable; with it, it is refused.
        with pytest.raises(LedgerIntegrityError, match="ledger 38131: the state after its diff"):
            LedgerEtl(backend, ListSource(records, FIRST), verify_state=True).run()
        assert (
            raw_rows_at(
                Store(
                    DatabaseSettings(
                        type="sqlite", sqlite=SqliteSettings(path=str(tmp_path / "v.db"))
                    )
                ),
                FIRST + 2,
            )
            == 0
        )
        summary = LedgerEtl(backend, FileLedgerSource(dump.path), verify_state=True).run()
        assert summary.last_committed == dump.last
    finally:
        backend.close()


def test_a_source_starting_after_the_store_ends_is_refused(dump: Dump, tmp_path: Path) -> None:
    later = tmp_path / "later.jsonl"
    with DumpWriter(later) as writer:
        writer.write(FileLedgerSource(dump.path).fetch_full(FIRST + 5), FIRST + 5)
        writer.write(dump.records[FIRST + 6], FIRST + 6)
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "gap.db")}})
    try:
        LedgerEtl(backend, FileLedgerSource(dump.path)).run(stop=FIRST + 2)
        with pytest.raises(LedgerIntegrityError, match="ledger 38132: the store ends at ledger"):
            LedgerEtl(backend, FileLedgerSource(later)).run()
        # A source holding the next ledger is fine, and one that is merely exhausted stops.
        done = LedgerEtl(backend, FileLedgerSource(dump.path)).run()
        assert done.last_committed == dump.last
        assert LedgerEtl(backend, FileLedgerSource(later)).run().ledgers == 0
    finally:
        backend.close()


def test_follow_picks_up_ledgers_appended_to_the_dump(dump: Dump, tmp_path: Path) -> None:
    import threading

    growing = tmp_path / "growing.jsonl"
    with DumpWriter(growing) as writer:
        writer.write(dump.initial, FIRST)
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "fw.db")}})
    seen: list[Progress] = []
    result: list[object] = []

    def follow() -> None:
        etl = LedgerEtl(backend, FileLedgerSource(growing), on_progress=seen.append)
        result.append(etl.run(stop=FIRST + 3, follow=True, poll_interval=0.02))

    thread = threading.Thread(target=follow)
    thread.start()
    try:
        lines = dump.path.read_text().splitlines(keepends=True)
        for line in lines[1:4]:
            time.sleep(0.1)
            with growing.open("a") as handle:
                handle.write(line)
        thread.join(timeout=30)
        assert not thread.is_alive()
        assert [p.sequence for p in seen] == [FIRST, FIRST + 1, FIRST + 2, FIRST + 3]
        assert {o.key: o.blob for o in walk(backend, FIRST + 3, 500)} == dump.states[FIRST + 3]
    finally:
        thread.join(timeout=30)
        backend.close()


def test_a_bad_ledger_after_a_good_one_commits_the_good_one_first(
    dump: Dump, tmp_path: Path
) -> None:
    bad, _ = _broken(dump, "delete-missing")
    records = {s: r for s, r in dump.records.items() if s <= FIRST + 2}
    records[FIRST + 3] = bad
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "p.db")}})
    reports: list[Progress] = []
    try:
        with pytest.raises(LedgerIntegrityError, match="ledger 38132"):
            LedgerEtl(backend, ListSource(records, FIRST), on_progress=reports.append).run()
        # Ledger 38131 was in flight when 38132 was refused: it is committed, 38132 is not.
        assert [r.sequence for r in reports] == [FIRST, FIRST + 1, FIRST + 2]
        range_ = backend.hard_fetch_ledger_range()
        assert range_ is not None
        assert range_.max_sequence == FIRST + 2
        assert {o.key: o.blob for o in walk(backend, FIRST + 2, 500)} == dump.states[FIRST + 2]
    finally:
        backend.close()
