"""Walking an order book's directories, pure: the offers of a book, best quality first.

rippled keys the directories of one order book by the book's base (``keylet::book``, the low
64 bits zero) plus a quality in those low 64 bits, so a book's directories are the keys in
``[base, base + 2^64)`` in key order, best (lowest) quality first; each is a chain of pages
linked by ``IndexNext`` listing offer keys. ``book_offers`` reads the newest ledger from the
API's cache and any other ledger from the database, and both must answer the same: so the walk
lives here once, over :class:`BookReads` (read objects by key, the next directory after a key),
which the database (its successor list) and the cache (its sorted index of book directories)
each provide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from chainloom.ledger.errors import LedgerCorruptionError
from chainloom.ledger.types import LAST_KEY, LedgerObject
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.directory import page_entries
from chainloom.ledger.xrpl.errors import XrplBinaryError


class BookReads(Protocol):
    """What the walk reads, all at one ledger."""

    def read(self, keys: Sequence[bytes]) -> list[bytes]:
        """Objects by key, aligned with ``keys`` (``b""`` where absent)."""
        ...

    def successor(self, key: bytes) -> bytes | None:
        """The first key after ``key`` that may be a book directory (``None``: none left).

        ``key`` is a book base or a directory key returned before. The database answers with
        the next state key (its successor list); the cache with the next book directory.
        Inside a book's range the two are the same keys: only book directories live there.
        """
        ...


_DIRECTORY_PREFIX = binary.field_header(sf.LEDGER_ENTRY_TYPE) + sf.DIRECTORY_NODE.to_bytes(2, "big")


def is_book_root(key: bytes, blob: bytes) -> bool:
    """Whether ``(key, blob)`` is the first page of a book directory: a DirectoryNode without
    an ``Owner`` (Clio's ``isBookDir``) and without an ``NFTokenID`` (an NFT's buy or sell
    offer directory has no owner either) that is its own ``RootIndex``. Only these sit at
    ``base + quality``; a directory's further pages live at hashed keys, reached by
    ``IndexNext``."""
    if not blob.startswith(_DIRECTORY_PREFIX):
        return False
    node = binary.decode(blob)
    return sf.OWNER not in node and sf.NFTOKEN_ID not in node and node.get(sf.ROOT_INDEX) == key


def quality_next(book_base: bytes) -> bytes:
    """The first key after every directory of the book (the base plus 2^64)."""
    value = int.from_bytes(book_base, "big") + (1 << 64)
    return value.to_bytes(32, "big") if value < 1 << 256 else LAST_KEY


def book_offer_keys(reads: BookReads, book: bytes, limit: int, sequence: int) -> list[bytes]:
    """The keys of the first ``limit`` offers of the book whose base is ``book``, in directory
    order (quality, then each directory's pages in order). ``sequence`` only names the ledger
    in errors."""
    book_end = quality_next(book)
    tip = book
    found: list[bytes] = []
    while len(found) < limit:
        directory = reads.successor(tip)
        if directory is None or directory >= book_end:
            break
        if directory <= tip:
            raise LedgerCorruptionError(
                f"successor list at ledger {sequence} goes backward after {tip.hex().upper()}",
                sequence=sequence,
            )
        tip = directory
        page_key = directory
        while len(found) < limit:
            blob = reads.read([page_key])[0]
            if not blob:
                raise LedgerCorruptionError(
                    f"book directory page {page_key.hex().upper()} is missing at ledger {sequence}",
                    sequence=sequence,
                )
            try:
                indexes, index_next = page_entries(blob)
            except XrplBinaryError as error:
                raise LedgerCorruptionError(
                    f"book directory page {page_key.hex().upper()} at ledger {sequence}: {error}",
                    sequence=sequence,
                ) from None
            found.extend(indexes)
            if index_next == 0:
                break
            page_key = keylets.directory_page(directory, index_next)
    return found[:limit]


def book_offers(reads: BookReads, book: bytes, limit: int, sequence: int) -> list[LedgerObject]:
    """The first ``limit`` offers of the book as ``(key, blob)``, best quality first; an offer
    a directory lists but the ledger lacks is a :class:`LedgerCorruptionError`."""
    keys = book_offer_keys(reads, book, limit, sequence)
    offers = []
    for key, blob in zip(keys, reads.read(keys) if keys else [], strict=True):
        if not blob:
            raise LedgerCorruptionError(
                f"book directory at ledger {sequence} lists offer {key.hex().upper()} "
                "which is absent",
                sequence=sequence,
            )
        offers.append(LedgerObject(key, blob))
    return offers
