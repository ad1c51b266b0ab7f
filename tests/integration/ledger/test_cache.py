"""The newest-ledger cache over real stores: loaded once, then kept equal to the database (its
objects, and the book offers its index of book directories gives) by applying each new ledger's
diff as the ETL commits it; bounded memory turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest
from xrpl.core import binarycodec as binary

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.cache import CacheSettings, LedgerCache
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.xrpl.parse import book_base
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
from tests.integration.ledger.test_conformance import Store, store  # noqa: F401

FIRST = 38129
LEDGERS = 6


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=5, txs_per_ledger=40)
    path = tmp_path_factory.mktemp("cache") / "ledgers.jsonl"
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
    return path


def _load(backend: BackendInterface, dump: Path, stop: int | None = None) -> None:
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run(stop=stop)
    finally:
        source.close()


def _state(backend: BackendInterface, sequence: int) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, 2048)
        found.update((item.key, item.blob) for item in page.objects)
        if page.cursor is None:
            return found
        cursor = page.cursor


def _book_root(key: bytes, blob: bytes) -> bool:
    """A book directory's first page, as xrpl-py decodes it (an NFT's offer directory has no
    ``Owner`` either, but names its NFTokenID)."""
    node = binary.decode(blob.hex()) if blob[:3] == b"\x11\x00\x64" else {}
    no_owner = "Owner" not in node and "NFTokenID" not in node
    return no_owner and node.get("RootIndex") == key.hex().upper()


def _assert_holds(
    cache: LedgerCache, backend: BackendInterface, sequence: int, gone: set[bytes]
) -> None:
    state = _state(backend, sequence)
    keys = [*state, *gone]
    assert cache.sequence == sequence
    assert cache.read(keys, sequence) == [state.get(key, b"") for key in keys]
    assert cache.read(keys, sequence) == backend.fetch_ledger_objects(keys, sequence)
    assert cache.read(keys, sequence - 1) is None
    bases = {book_base(key) for key, blob in state.items() if _book_root(key, blob)}
    bases |= {book_base(key) for key in gone}
    assert bases
    for base in sorted(bases):
        offers = cache.book_offers(base, sequence, 1000)
        assert offers == list(backend.fetch_book_offers(base, sequence, 1000).offers)
        assert cache.book_offers(base, sequence - 1, 1000) is None


def test_the_cache_follows_the_diffs_of_each_new_ledger(store: Store, dump: Path) -> None:  # noqa: F811
    writer = store.open()
    _load(writer, dump, stop=FIRST + 2)
    reader = store.open()
    reader.hard_fetch_ledger_range()
    followed, reloaded = LedgerCache(), LedgerCache(CacheSettings(max_catch_up=1))
    for cache in (followed, reloaded):
        cache.update(reader)
        _assert_holds(cache, reader, FIRST + 2, set())
    before = set(_state(reader, FIRST + 2))
    _load(writer, dump)
    found = reader.hard_fetch_ledger_range()
    assert found is not None
    assert found.max_sequence == FIRST + LEDGERS
    gone = before - set(_state(reader, found.max_sequence))
    for cache in (followed, reloaded):
        cache.update(reader)
        _assert_holds(cache, reader, found.max_sequence, gone)
        assert 0 < cache.size_bytes <= cache.settings.max_bytes
        cache.close()
    assert gone, "the generated ledgers delete objects (offers, NFT offers)"


def test_a_state_over_the_memory_bound_turns_the_cache_off(store: Store, dump: Path) -> None:  # noqa: F811
    _load(store.open(), dump, stop=FIRST + 1)
    reader = store.open()
    reader.hard_fetch_ledger_range()
    cache = LedgerCache(CacheSettings(max_bytes=20_000))
    cache.update(reader)
    assert cache.disabled
    assert cache.sequence is None
    assert cache.read([b"\x00" * 32], FIRST + 1) is None
