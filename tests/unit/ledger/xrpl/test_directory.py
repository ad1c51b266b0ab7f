"""The directory and NFT page walks over an in-memory state (pure: objects from a dict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.directory import (
    DirectoryCursor,
    InvalidMarkerError,
    ReadObjects,
    nft_pages,
    page_entries,
    page_tokens,
    walk_directory,
)
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.hashing import sha512_half

ROOT = keylets.owner_directory(b"\x07" * 20)


def _page(keys: list[bytes], next_page: int) -> bytes:
    node: binary.STObject = {
        sf.LEDGER_ENTRY_TYPE: sf.DIRECTORY_NODE.to_bytes(2, "big"),
        sf.FLAGS: bytes(4),
        sf.ROOT_INDEX: ROOT,
        sf.INDEXES: b"".join(keys),
    }
    if next_page:
        node[sf.INDEX_NEXT] = next_page.to_bytes(8, "big")
    return binary.encode(node)


def _entry(kind: int) -> bytes:
    return binary.encode({sf.LEDGER_ENTRY_TYPE: kind.to_bytes(2, "big"), sf.FLAGS: bytes(4)})


def _state(entries: int, per_page: int) -> tuple[dict[bytes, bytes], list[bytes]]:
    """A directory of ``entries`` objects over pages of ``per_page`` (pages 0, 1, 2, ...),
    every third object an Offer and the rest RippleStates."""
    keys = [sha512_half(b"entry" + i.to_bytes(4, "big")) for i in range(entries)]
    state = {k: _entry(sf.OFFER if i % 3 == 0 else sf.RIPPLE_STATE) for i, k in enumerate(keys)}
    chunks = [keys[i : i + per_page] for i in range(0, entries, per_page)] or [[]]
    for number, chunk in enumerate(chunks):
        last = number == len(chunks) - 1
        state[keylets.directory_page(ROOT, number)] = _page(chunk, 0 if last else number + 1)
    return state, keys


def _reader(state: dict[bytes, bytes]) -> ReadObjects:
    def read(keys: Sequence[bytes]) -> list[bytes]:
        return [state.get(key, b"") for key in keys]

    return read


@pytest.mark.parametrize(
    ("entries", "per_page", "limit"),
    [(0, 32, 5), (7, 32, 3), (70, 32, 10), (64, 32, 32), (65, 4, 7), (9, 3, 1)],
)
def test_pages_of_a_walk_hold_every_entry_once_in_order(
    entries: int, per_page: int, limit: int
) -> None:
    state, keys = _state(entries, per_page)
    seen: list[bytes] = []
    cursor = None
    for _ in range(1000):
        walked = walk_directory(_reader(state), ROOT, limit=limit, after=cursor)
        assert len(walked.entries) <= limit
        seen.extend(key for key, _ in walked.entries)
        cursor = walked.cursor
        if cursor is None:
            break
        cursor = DirectoryCursor.parse(cursor.text())
    assert seen == keys


def test_a_filtered_walk_counts_only_accepted_entries() -> None:
    state, keys = _state(50, 8)

    def offers_only(key: bytes, blob: bytes) -> bool:
        return binary.decode(blob)[sf.LEDGER_ENTRY_TYPE] == sf.OFFER.to_bytes(2, "big")

    seen: list[bytes] = []
    cursor = None
    while True:
        walked = walk_directory(_reader(state), ROOT, limit=4, after=cursor, accept=offers_only)
        seen.extend(key for key, _ in walked.entries)
        if walked.cursor is None:
            break
        cursor = walked.cursor
    assert seen == keys[::3]


def test_an_account_without_a_directory_owns_nothing() -> None:
    walked = walk_directory(_reader({}), ROOT, limit=10)
    assert (walked.entries, walked.cursor) == ([], None)


@pytest.mark.parametrize(
    "marker",
    [
        "",
        "x",
        "AB,1",
        f"{'AB' * 32}",
        f"{'ZZ' * 32},0",
        f"{'AB' * 32},-1",
        f"{'AB' * 32},1,2",
        f"{'AB' * 32},{1 << 64}",
        17,
        None,
        ["a"],
    ],
)
def test_malformed_markers_are_refused(marker: object) -> None:
    with pytest.raises(InvalidMarkerError):
        DirectoryCursor.parse(marker)


def test_markers_that_name_no_position_are_refused() -> None:
    state, keys = _state(40, 8)
    read = _reader(state)
    for forged in (
        DirectoryCursor(b"\xab" * 32, 0),
        DirectoryCursor(keys[20], 0),
        DirectoryCursor(keys[0], 9),
    ):
        with pytest.raises(InvalidMarkerError):
            walk_directory(read, ROOT, limit=5, after=forged)
    resumed = walk_directory(read, ROOT, limit=5, after=DirectoryCursor(keys[20], 2))
    assert [key for key, _ in resumed.entries] == keys[21:26]


def test_a_listed_entry_that_is_absent_is_corruption() -> None:
    state, keys = _state(5, 8)
    del state[keys[2]]
    with pytest.raises(XrplBinaryError, match="absent"):
        walk_directory(_reader(state), ROOT, limit=10)


def test_page_entries_reads_indexes_and_the_next_page() -> None:
    keys = [b"\x01" * 32, b"\x02" * 32]
    assert page_entries(_page(keys, 3)) == (keys, 3)
    assert page_entries(_page([], 0)) == ([], 0)


def _nft_page(tokens: list[bytes], previous: bytes | None, next_key: bytes | None) -> bytes:
    node: binary.STObject = {
        sf.LEDGER_ENTRY_TYPE: sf.NFTOKEN_PAGE.to_bytes(2, "big"),
        sf.FLAGS: bytes(4),
        sf.NFTOKENS: [(sf.NFTOKEN, {sf.NFTOKEN_ID: token, sf.URI: b"ipfs"}) for token in tokens],
    }
    if previous is not None:
        node[sf.field_key("PreviousPageMin")] = previous
    if next_key is not None:
        node[sf.field_key("NextPageMin")] = next_key
    return binary.encode(node)


def test_nft_pages_are_followed_back_from_the_last_page() -> None:
    owner = b"\x09" * 20
    low = owner + b"\x00" * 11 + b"\x10"
    middle = owner + b"\x00" * 11 + b"\x20"
    last = keylets.nftoken_page_max(owner)
    tokens = [bytes([i]) * 32 for i in range(1, 7)]
    state = {
        low: _nft_page(tokens[0:2], None, middle),
        middle: _nft_page(tokens[2:4], low, last),
        last: _nft_page(tokens[4:6], middle, None),
    }
    pages = nft_pages(_reader(state), owner)
    assert [key for key, _ in pages] == [low, middle, last]
    assert [t for _, blob in pages for t, _ in page_tokens(blob)] == tokens
    assert nft_pages(_reader({}), owner) == []


def test_page_entries_match_the_vectors_decoded_directories(xrpl_vectors: list[Any]) -> None:
    checked = 0
    for vector in xrpl_vectors:
        decoded = vector["expected"].get("decoded", {})
        if vector["kind"] != "ledger_object" or decoded.get("LedgerEntryType") != "DirectoryNode":
            continue
        indexes, index_next = page_entries(bytes.fromhex(vector["hex"]))
        assert [i.hex().upper() for i in indexes] == decoded["Indexes"]
        assert index_next == int(decoded.get("IndexNext", "0"), 16)
        checked += 1
    assert checked >= 60
