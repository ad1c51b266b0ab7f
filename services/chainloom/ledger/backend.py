"""The contract every ledger history database implements, and the factory that picks one.

Why an abstract base class rather than a bare Protocol: like Clio's ``BackendInterface``, part of
the behaviour is the same for every database and must not drift between them -- the range fence
(readers never see a sequence above the committed range), the ledger-page walk over the
successor list, book offers through directory pages, the forward/backward cursor rules. Those
live here once, written against a handful of primitive reads each backend provides.

All methods are synchronous; a backend may overlap I/O inside a call (Cassandra does) but hands
back finished values. Reads for a sequence outside the committed range behave as if nothing was
stored there (``None`` / empty): a ledger whose ``finish_writes`` has not succeeded is invisible.

Write protocol for one ledger (the order of Clio's ETL)::

    start_writes()
    write_ledger(header, blob)
    write_successor(...) / write_ledger_object(...)       state diff and list rows
    write_transaction(...), write_account_transactions([...]),
    write_nfts([...]), write_nft_transactions([...])
    finish_writes(seq)    -> True: visible; False: another writer owns the range, stop.
"""

from __future__ import annotations

import abc
import importlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from chainloom.ledger.config import DatabaseSettings
from chainloom.ledger.errors import LedgerConfigError, LedgerCorruptionError, LedgerInputError
from chainloom.ledger.types import (
    FIRST_KEY,
    LAST_KEY,
    NFT,
    AccountTransactionsData,
    BookOffersPage,
    LedgerHeader,
    LedgerObject,
    LedgerPage,
    LedgerRange,
    NFTsAndCursor,
    NFTsData,
    NFTTransactionsData,
    TransactionAndMetadata,
    TransactionsAndCursor,
    TransactionsCursor,
)
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.hashing import sha512_half


def check_key(value: bytes, what: str = "key", size: int = 32) -> bytes:
    """Refuse a key or hash that is not ``size`` raw bytes (names the value)."""
    if not isinstance(value, bytes | bytearray | memoryview) or len(value) != size:
        shown = value.hex() if isinstance(value, bytes | bytearray) else repr(value)
        raise LedgerInputError(f"{what} must be {size} bytes, got {shown!r}")
    return bytes(value)


def check_sequence(value: int, what: str = "ledger sequence") -> int:
    """Refuse a sequence outside uint32."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
        raise LedgerInputError(f"{what} must be an integer in [0, 2^32), got {value!r}")
    return value


def check_limit(value: int) -> int:
    """Refuse a page size below one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LedgerInputError(f"limit must be a positive integer, got {value!r}")
    return value


def stored_header_blob(header: LedgerHeader, blob: bytes) -> bytes:
    """The 150-byte stored form of ``header``; ``blob`` (118 or 150 bytes) must describe it."""
    parsed = LedgerHeader.parse(blob)
    if parsed != header:
        raise LedgerInputError(
            f"ledger {header.sequence}: the header blob describes ledger {parsed.sequence} "
            f"with hash {parsed.hash.hex().upper()}, not the header given"
        )
    return header.serialize(include_hash=True)


def range_from_rows(low: int | None, high: int | None) -> LedgerRange | None:
    """The range the two ``ledger_range`` rows (min and max) describe, as both backends store it.

    None when neither row exists; min = max when only one does.
    """
    if low is None and high is None:
        return None
    low = high if low is None else low
    high = low if high is None else high
    assert low is not None
    assert high is not None
    return LedgerRange(min(low, high), max(low, high))


def quality_next(book_base: bytes) -> bytes:
    """The first key after every directory of the book (the base plus 2^64)."""
    value = int.from_bytes(book_base, "big") + (1 << 64)
    return value.to_bytes(32, "big") if value < 1 << 256 else LAST_KEY


def directory_page_key(root: bytes, index: int) -> bytes:
    """Key of page ``index`` of the directory rooted at ``root`` (page 0 is the root)."""
    if index == 0:
        return root
    return sha512_half(keylets.DIR_PAGE + root + index.to_bytes(8, "big"))


def directory_entries(blob: bytes, key: bytes = b"") -> tuple[list[bytes], int]:
    """``(Indexes, IndexNext)`` of a serialized DirectoryNode (IndexNext 0 = last page)."""
    try:
        node = binary.decode(blob)
    except XrplBinaryError as error:
        raise LedgerInputError(f"directory {key.hex().upper()}: {error}") from error
    raw_indexes = node.get(sf.INDEXES, b"")
    raw_next = node.get(sf.INDEX_NEXT, b"\x00" * 8)
    if not isinstance(raw_indexes, bytes) or len(raw_indexes) % 32:
        raise LedgerInputError(f"directory {key.hex().upper()}: Indexes is not a list of keys")
    if not isinstance(raw_next, bytes) or len(raw_next) != 8:
        raise LedgerInputError(f"directory {key.hex().upper()}: IndexNext is not a UInt64")
    indexes = [raw_indexes[i : i + 32] for i in range(0, len(raw_indexes), 32)]
    return indexes, int.from_bytes(raw_next, "big")


class BackendInterface(abc.ABC):
    """Every read and write of the ledger history store (Clio's ``BackendInterface``)."""

    def __init__(self) -> None:
        self._range: LedgerRange | None = None
        self._range_lock = threading.Lock()

    # ------------------------------------------------------------------ range and visibility

    def fetch_ledger_range(self) -> LedgerRange | None:
        """The committed range as this instance last saw it (no database round trip)."""
        return self._range

    def hard_fetch_ledger_range(self) -> LedgerRange | None:
        """Read the range from the database and remember it."""
        found = self._do_fetch_ledger_range()
        with self._range_lock:
            self._range = found
        return found

    def is_visible(self, sequence: int) -> bool:
        """Whether readers may see ``sequence`` (inside the committed range)."""
        current = self._range
        return current is not None and current.min_sequence <= sequence <= current.max_sequence

    def _update_range(self, sequence: int) -> None:
        with self._range_lock:
            current = self._range
            if current is None:
                self._range = LedgerRange(sequence, sequence)
            elif sequence > current.max_sequence:
                self._range = LedgerRange(current.min_sequence, sequence)

    @abc.abstractmethod
    def _do_fetch_ledger_range(self) -> LedgerRange | None:
        """Read both ``ledger_range`` rows (min = max when only one exists)."""

    # ------------------------------------------------------------------ ledgers

    @abc.abstractmethod
    def fetch_ledger_by_sequence(self, sequence: int) -> LedgerHeader | None:
        """The header of a committed ledger."""

    @abc.abstractmethod
    def fetch_ledger_by_hash(self, ledger_hash: bytes) -> LedgerHeader | None:
        """The header of a committed ledger found by its hash."""

    @abc.abstractmethod
    def fetch_latest_ledger_sequence(self) -> int | None:
        """The ``is_latest`` row of ``ledger_range``, read from the database."""

    # ------------------------------------------------------------------ transactions

    @abc.abstractmethod
    def fetch_transaction(self, tx_hash: bytes) -> TransactionAndMetadata | None:
        """A transaction of a committed ledger by hash."""

    @abc.abstractmethod
    def fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        """Transactions by hash, aligned with ``hashes`` (``None`` where not found)."""

    @abc.abstractmethod
    def fetch_all_transaction_hashes_in_ledger(self, sequence: int) -> list[bytes]:
        """Hashes of a committed ledger's transactions, in hash order."""

    def fetch_all_transactions_in_ledger(self, sequence: int) -> list[TransactionAndMetadata]:
        """All of a committed ledger's transactions, in hash order."""
        hashes = self.fetch_all_transaction_hashes_in_ledger(sequence)
        return [tx for tx in self.fetch_transactions(hashes) if tx is not None]

    @abc.abstractmethod
    def fetch_account_transactions(
        self,
        account: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        """An account's transactions after (forward) or before (backward) ``cursor``.

        Backward is newest first, ``seq_idx < cursor``; forward ``seq_idx > cursor``. The
        returned cursor is the last row's ``seq_idx``, set only when ``limit`` rows came back.
        """

    # ------------------------------------------------------------------ state

    @abc.abstractmethod
    def fetch_ledger_object(self, key: bytes, sequence: int) -> bytes | None:
        """The object as of ``sequence`` (``None`` when absent or deleted)."""

    @abc.abstractmethod
    def fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        """Objects as of ``sequence``, aligned with ``keys`` (``b""`` when absent)."""

    @abc.abstractmethod
    def fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        """The key after ``key`` in the state at ``sequence``; ``None`` at the end.

        ``key`` must be a node of the list at ``sequence``: ``FIRST_KEY``, an object key or a
        book base. This is not a general "next key greater than X" lookup.
        """

    def fetch_successor_object(self, key: bytes, sequence: int) -> LedgerObject | None:
        """The successor key and its object at ``sequence`` (blob empty if missing)."""
        successor = self.fetch_successor_key(key, sequence)
        if successor is None:
            return None
        return LedgerObject(successor, self.fetch_ledger_object(successor, sequence) or b"")

    def fetch_ledger_page(
        self,
        cursor: bytes | None,
        sequence: int,
        limit: int,
        out_of_order: bool = False,
    ) -> LedgerPage:
        """Up to ``limit`` objects after ``cursor`` (or from the start) in key order.

        The page's cursor is its last key unless the walk reached the end, so a walk whose
        last page is exactly full takes one more call that returns an empty page.
        ``out_of_order`` walks the list at the newest committed ledger instead of
        ``sequence`` (objects are still read at ``sequence``, missing ones are dropped).
        """
        check_limit(limit)
        check_sequence(sequence)
        if cursor is not None:
            check_key(cursor, "cursor")
        if not self.is_visible(sequence):
            return LedgerPage((), None)
        current = self._range
        walk_sequence = current.max_sequence if out_of_order and current else sequence
        keys: list[bytes] = []
        position = cursor if cursor is not None else FIRST_KEY
        reached_end = False
        while len(keys) < limit:
            successor = self.fetch_successor_key(position, walk_sequence)
            if successor is None:
                reached_end = True
                break
            if successor <= position:
                raise LedgerCorruptionError(
                    f"successor list at ledger {walk_sequence} goes backward from "
                    f"{position.hex().upper()} to {successor.hex().upper()}",
                    sequence=walk_sequence,
                )
            keys.append(successor)
            position = successor
        blobs = self.fetch_ledger_objects(keys, sequence)
        objects = []
        for key, blob in zip(keys, blobs, strict=True):
            if blob:
                objects.append(LedgerObject(key, blob))
            elif not out_of_order:
                raise LedgerCorruptionError(
                    f"successor list at ledger {sequence} names key {key.hex().upper()} whose "
                    "object is deleted or absent",
                    sequence=sequence,
                )
        return LedgerPage(tuple(objects), keys[-1] if keys and not reached_end else None)

    @abc.abstractmethod
    def fetch_ledger_diff(self, sequence: int) -> list[LedgerObject]:
        """The objects changed in ``sequence`` (empty blob = deleted there), in key order.

        Empty for the initial-load ledger, which writes no diff rows.
        """

    def fetch_book_bases(self, sequence: int) -> list[bytes]:
        """Every book base with a successor row written at or before ``sequence``, in order.

        These are the bases the ETL keeps successor rows for: one per book that had a
        directory anywhere in the stored history up to ``sequence``, including books that have
        emptied since. A restarted ETL needs exactly that set to write the same rows as a run
        that never stopped; the state at ``sequence`` only shows the books still open. A base
        is recognised by its low 64 bits being zero (a state key ending so, 2^-64 per key, is
        listed too). This scans every key of the successor table: a restart-time read, not
        one for serving requests.
        """
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return []
        return [key for key in self._do_fetch_book_bases(sequence) if key != FIRST_KEY]

    @abc.abstractmethod
    def _do_fetch_book_bases(self, sequence: int) -> list[bytes]:
        """Sorted keys ending in eight zero bytes with a successor row at ``<= sequence`` (the
        list's head, ``FIRST_KEY``, among them)."""

    def fetch_book_offers(self, book: bytes, sequence: int, limit: int) -> BookOffersPage:
        """Up to ``limit`` offers of the book whose base is ``book``, best quality first."""
        check_key(book, "book base")
        check_limit(limit)
        if not self.is_visible(sequence):
            return BookOffersPage((), None)
        book_end = quality_next(book)
        tip = book
        offer_keys: list[bytes] = []
        while len(offer_keys) < limit:
            directory = self.fetch_successor_object(tip, sequence)
            if directory is None or directory.key >= book_end:
                break
            if directory.key <= tip:
                raise LedgerCorruptionError(
                    f"successor list at ledger {sequence} goes backward after {tip.hex().upper()}",
                    sequence=sequence,
                )
            tip = directory.key
            page_key, blob = directory.key, directory.blob
            while len(offer_keys) < limit:
                if not blob:
                    raise LedgerCorruptionError(
                        f"book directory page {page_key.hex().upper()} is missing at ledger "
                        f"{sequence}",
                        sequence=sequence,
                    )
                indexes, index_next = directory_entries(blob, page_key)
                offer_keys.extend(indexes)
                if index_next == 0:
                    break
                page_key = directory_page_key(tip, index_next)
                blob = self.fetch_ledger_object(page_key, sequence) or b""
        offer_keys = offer_keys[:limit]
        blobs = self.fetch_ledger_objects(offer_keys, sequence)
        offers = []
        for key, blob in zip(offer_keys, blobs, strict=True):
            if not blob:
                raise LedgerCorruptionError(
                    f"book directory at ledger {sequence} lists offer {key.hex().upper()} "
                    "which is absent",
                    sequence=sequence,
                )
            offers.append(LedgerObject(key, blob))
        return BookOffersPage(tuple(offers), None)

    # ------------------------------------------------------------------ NFTs

    @abc.abstractmethod
    def fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        """The NFT's last recorded state at or before ``sequence``."""

    @abc.abstractmethod
    def fetch_nft_transactions(
        self,
        token_id: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        """An NFT's transactions; forward uses ``seq_idx >= cursor`` (cursor = last + 1)."""

    @abc.abstractmethod
    def fetch_nfts_by_issuer(
        self,
        issuer: bytes,
        taxon: int | None,
        sequence: int,
        limit: int,
        cursor: bytes | None = None,
    ) -> NFTsAndCursor:
        """NFTs minted by ``issuer`` (optionally one taxon), in (taxon, token ID) order."""

    # ------------------------------------------------------------------ writes

    def start_writes(self) -> None:  # noqa: B027 - a no-op hook by design, as in Clio
        """Begin writing one ledger (a no-op unless a backend needs it)."""

    @abc.abstractmethod
    def write_ledger(self, header: LedgerHeader, blob: bytes) -> None:
        """Store the header (``ledgers``) and its hash (``ledger_hashes``)."""

    @abc.abstractmethod
    def write_ledger_object(self, key: bytes, sequence: int, blob: bytes) -> None:
        """Store an object version (empty blob = deleted); a ``diff`` row after the first."""

    @abc.abstractmethod
    def write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        """Store ``key -> next_key`` valid from ``sequence`` on."""

    @abc.abstractmethod
    def write_transaction(
        self,
        tx_hash: bytes,
        sequence: int,
        date: int,
        transaction: bytes,
        metadata: bytes,
    ) -> None:
        """Store a transaction and index it under its ledger."""

    @abc.abstractmethod
    def write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        """Store ``account_tx`` rows: one per affected account of each transaction."""

    @abc.abstractmethod
    def write_nfts(self, data: Sequence[NFTsData]) -> None:
        """Store NFT state changes (and issuer / URI rows for mints and initial loads)."""

    @abc.abstractmethod
    def write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        """Store ``nf_token_transactions`` rows."""

    def finish_writes(self, sequence: int) -> bool:
        """Make ``sequence`` visible once all of its writes are durable.

        Returns False when another writer already moved the range (the caller must stop
        writing); raises :class:`~chainloom.ledger.errors.BackendError` when a write failed,
        leaving the range unchanged.
        """
        check_sequence(sequence)
        if self._do_finish_writes(sequence):
            self._update_range(sequence)
            return True
        return False

    def abandon_writes(self) -> None:  # noqa: B027 - nothing to undo unless a backend can
        """Give up the ledger being written (after an error, before ``finish_writes``).

        Its rows never become visible either way; a backend that can, discards them (SQLite
        rolls its transaction back), and write errors of the abandoned ledger are forgotten so
        they do not fail the next ``finish_writes``.
        """

    @abc.abstractmethod
    def _do_finish_writes(self, sequence: int) -> bool:
        """Wait for every write, then compare-and-set the range to ``sequence``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections (pending writes are abandoned, never made visible)."""

    def __enter__(self) -> BackendInterface:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def make_backend(config: DatabaseSettings | Mapping[str, Any]) -> BackendInterface:
    """The backend ``database.type`` names, connected and with its range loaded."""
    if not isinstance(config, DatabaseSettings):
        config = DatabaseSettings.from_mapping(config)
    # Imported here so that choosing SQLite never loads the Cassandra driver (and vice versa).
    implementations = {
        "cassandra": ("chainloom.ledger.cassandra", "CassandraBackend", config.cassandra),
        "sqlite": ("chainloom.ledger.sqlite", "SqliteBackend", config.sqlite),
    }
    if config.type not in implementations:  # pragma: no cover - validate() refused it already
        raise LedgerConfigError(f"invalid database.type {config.type!r}")
    module_name, class_name, settings = implementations[config.type]
    backend_class: type[BackendInterface] = getattr(
        importlib.import_module(module_name), class_name
    )
    backend = backend_class(settings, read_only=config.read_only)  # type: ignore[call-arg]
    backend.hard_fetch_ledger_range()
    return backend
