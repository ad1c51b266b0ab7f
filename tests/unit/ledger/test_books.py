"""The order-book walk (``chainloom.ledger.books``) over dictionaries: as the database reads
(successor = the next state key) and as the cache reads (successor = the next book directory),
against the order built into the state."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import pytest

from chainloom.ledger.books import book_offer_keys, book_offers, is_book_root, quality_next
from chainloom.ledger.errors import LedgerCorruptionError
from chainloom.ledger.types import LAST_KEY
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.hashing import sha512_half
from chainloom.ledger.xrpl.parse import book_base

BOOK = bytes([0x42]) * 24 + bytes(8)
NEXT_BOOK = bytes([0x42]) * 23 + b"\x43" + bytes(8)


def _key(label: str) -> bytes:
    return sha512_half(label.encode())


def _page(root: bytes, indexes: Sequence[bytes], index_next: int) -> bytes:
    node: binary.STObject = {
        sf.LEDGER_ENTRY_TYPE: sf.DIRECTORY_NODE.to_bytes(2, "big"),
        sf.FLAGS: bytes(4),
        sf.ROOT_INDEX: root,
        sf.INDEXES: b"".join(indexes),
        sf.field_key("ExchangeRate"): root[24:],
    }
    if index_next:
        node[sf.INDEX_NEXT] = index_next.to_bytes(8, "big")
    return binary.encode(node)


def _offer(number: int) -> bytes:
    return binary.encode(
        {
            sf.LEDGER_ENTRY_TYPE: sf.OFFER.to_bytes(2, "big"),
            sf.FLAGS: bytes(4),
            sf.field_key("Sequence"): number.to_bytes(4, "big"),
        }
    )


def _book(state: dict[bytes, bytes], base: bytes, pages: list[list[int]], name: str) -> list[bytes]:
    """Directories of ``base``, one per quality (1, 2, ...), ``pages`` offers per page; the
    offers in walk order."""
    order: list[bytes] = []
    for quality, sizes in enumerate(pages, start=1):
        root = base[:24] + quality.to_bytes(8, "big")
        for number, size in enumerate(sizes):
            offers = [_key(f"{name}/{quality}/{number}/{i}") for i in range(size)]
            for offer in offers:
                state[offer] = _offer(len(order))
                order.append(offer)
            index_next = number + 1 if number < len(sizes) - 1 else 0
            state[keylets.directory_page(root, number)] = _page(root, offers, index_next)
    return order


def _state() -> tuple[dict[bytes, bytes], list[bytes], list[bytes]]:
    state: dict[bytes, bytes] = {}
    first = _book(state, BOOK, [[2, 3], [1], [4, 1, 2]], "first")
    second = _book(state, NEXT_BOOK, [[3]], "second")
    state[_key("an unrelated object")] = _offer(999)
    return state, first, second


class StateReads:
    """Reads as the database answers them: the successor is the next state key."""

    def __init__(self, state: dict[bytes, bytes], *, only_books: bool = False) -> None:
        self.state = state
        keys = [k for k, v in state.items() if not only_books or is_book_root(k, v)]
        self.keys = sorted(keys)
        self.reads: list[bytes] = []
        self.successors = 0

    def read(self, keys: Sequence[bytes]) -> list[bytes]:
        self.reads.extend(keys)
        return [self.state.get(key, b"") for key in keys]

    def successor(self, key: bytes) -> bytes | None:
        self.successors += 1
        at = bisect_right(self.keys, key)
        return self.keys[at] if at < len(self.keys) else None


@pytest.mark.parametrize("only_books", [False, True], ids=["database", "cache"])
def test_the_walk_lists_each_book_by_quality_and_page_order(only_books: bool) -> None:
    state, first, second = _state()
    reads = StateReads(state, only_books=only_books)
    for limit in range(1, len(first) + 3):
        assert book_offer_keys(reads, BOOK, limit, 7) == first[:limit]
        found = book_offers(reads, BOOK, limit, 7)
        assert [o.key for o in found] == first[:limit]
        assert [o.blob for o in found] == [state[k] for k in first[:limit]]
    assert [o.key for o in book_offers(reads, NEXT_BOOK, 100, 7)] == second
    empty = bytes([0x41]) * 24 + bytes(8)
    assert book_offers(reads, empty, 10, 7) == []


def test_the_walk_reads_only_the_pages_it_needs() -> None:
    state, first, _ = _state()
    reads = StateReads(state)
    assert [o.key for o in book_offers(reads, BOOK, 1, 7)] == first[:1]
    root = BOOK[:24] + (1).to_bytes(8, "big")
    assert reads.reads == [root, first[0]]
    assert reads.successors == 1


def test_quality_next_is_the_end_of_the_book() -> None:
    assert quality_next(BOOK) == BOOK[:23] + b"\x43" + bytes(8)
    assert quality_next(b"\xff" * 24 + bytes(8)) == LAST_KEY
    directory = bytes(range(24)) + (0x4F0415EB4EA0C727).to_bytes(8, "big")
    assert book_base(directory) == bytes(range(24)) + bytes(8)
    assert quality_next(book_base(directory)) == bytes(range(23)) + bytes([24]) + bytes(8)


def test_missing_pages_offers_and_a_backward_list_are_corruption() -> None:
    state, first, _ = _state()
    root = BOOK[:24] + (1).to_bytes(8, "big")
    without_page = dict(state)
    del without_page[keylets.directory_page(root, 1)]
    with pytest.raises(LedgerCorruptionError, match="is missing at ledger 7"):
        book_offers(StateReads(without_page), BOOK, 10, 7)
    without_offer = dict(state)
    del without_offer[first[1]]
    with pytest.raises(LedgerCorruptionError, match="which is absent"):
        book_offers(StateReads(without_offer), BOOK, 10, 7)
    truncated = dict(state)
    truncated[root] = state[root][:-5]
    with pytest.raises(LedgerCorruptionError, match=f"{root.hex().upper()} at ledger 7: .*trunc"):
        book_offers(StateReads(truncated), BOOK, 10, 7)

    class Backward(StateReads):
        def successor(self, key: bytes) -> bytes | None:
            return BOOK

    with pytest.raises(LedgerCorruptionError, match="goes backward"):
        book_offers(Backward(state), BOOK, 10, 7)


def test_only_a_book_directory_first_page_is_a_book_root() -> None:
    state, first, _ = _state()
    root = BOOK[:24] + (1).to_bytes(8, "big")
    assert is_book_root(root, state[root])
    page_1 = keylets.directory_page(root, 1)
    assert not is_book_root(page_1, state[page_1])
    assert not is_book_root(first[0], state[first[0]])
    owner = binary.decode(state[root])
    owner[sf.OWNER] = b"\x07" * 20
    assert not is_book_root(root, binary.encode(owner))
    nft_offers = binary.decode(state[root])  # an NFT's offer directory: no owner, no book
    nft_offers[sf.NFTOKEN_ID] = b"\x09" * 32
    assert not is_book_root(root, binary.encode(nft_offers))
