"""The contract every ledger history database implements (``chainloom.ledger.service`` picks one).

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
    write_nfts([...]), write_nft_transactions([...]), write_mpt_holders([...])
    finish_writes(seq)    -> True: visible; False: another writer owns the range, stop.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Sequence
from typing import Literal

from chainloom.ledger.books import book_offers
from chainloom.ledger.errors import LedgerCorruptionError, LedgerInputError
from chainloom.ledger.types import (
    FIRST_KEY,
    LAST_KEY,
    NFT,
    UINT32_MAX,
    AccountTransactionsData,
    BookOffersPage,
    LedgerHeader,
    LedgerObject,
    LedgerPage,
    LedgerRange,
    MPTHolderData,
    MPTHoldersPage,
    NFTsAndCursor,
    NFTsData,
    NFTTransactionsData,
    TransactionAndMetadata,
    TransactionsAndCursor,
    TransactionsCursor,
    nft_taxon,
)
from chainloom.ledger.xrpl import keylets


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


HistoryKind = Literal["account_tx", "nft_tx"]
"""Which transaction history a page walks: an account's or an NFT's."""


class BackendInterface(abc.ABC):
    """Every read and write of the ledger history store (Clio's ``BackendInterface``).

    The public methods check their arguments and apply the range fence once, here; each backend
    implements only the ``_fetch_*`` / ``_write_*`` primitives, which may assume valid arguments
    and a visible sequence.
    """

    def __init__(self) -> None:
        self._range: LedgerRange | None = None
        self._range_lock = threading.Lock()

    # ------------------------------------------------------------------ range and visibility

    def fetch_ledger_range(self) -> LedgerRange | None:
        """The committed range as this instance last saw it (no database round trip)."""
        return self._range

    def hard_fetch_ledger_range(self) -> LedgerRange | None:
        """Read the range from the database and remember it."""
        found = self._fetch_ledger_range()
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

    def _visible(self, sequence: int) -> bool:
        """Check ``sequence`` is a uint32, then whether it is inside the committed range."""
        return self.is_visible(check_sequence(sequence))

    # ------------------------------------------------------------------ ledgers

    def fetch_ledger_by_sequence(self, sequence: int) -> LedgerHeader | None:
        """The header of a committed ledger."""
        if not self._visible(sequence):
            return None
        blob = self._fetch_ledger_header(sequence)
        return None if blob is None else LedgerHeader.parse(blob)

    def fetch_ledger_by_hash(self, ledger_hash: bytes) -> LedgerHeader | None:
        """The header of a committed ledger found by its hash."""
        sequence = self._fetch_ledger_sequence(check_key(ledger_hash, "ledger hash"))
        return None if sequence is None else self.fetch_ledger_by_sequence(sequence)

    def fetch_latest_ledger_sequence(self) -> int | None:
        """The ``is_latest`` row of ``ledger_range``, read from the database."""
        return self._fetch_latest_ledger_sequence()

    # ------------------------------------------------------------------ transactions

    def fetch_transaction(self, tx_hash: bytes) -> TransactionAndMetadata | None:
        """A transaction of a committed ledger by hash."""
        return self.fetch_transactions([tx_hash])[0]

    def fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        """Transactions by hash, aligned with ``hashes`` (``None`` where not found)."""
        checked = [check_key(tx_hash, "transaction hash") for tx_hash in hashes]
        return [
            tx if tx is not None and self.is_visible(tx.ledger_sequence) else None
            for tx in self._fetch_transactions(checked)
        ]

    def fetch_all_transaction_hashes_in_ledger(self, sequence: int) -> list[bytes]:
        """Hashes of a committed ledger's transactions, in hash order."""
        if not self._visible(sequence):
            return []
        return sorted(self._fetch_transaction_hashes(sequence))

    def fetch_all_transactions_in_ledger(self, sequence: int) -> list[TransactionAndMetadata]:
        """All of a committed ledger's transactions, in hash order."""
        hashes = self.fetch_all_transaction_hashes_in_ledger(sequence)
        return [tx for tx in self.fetch_transactions(hashes) if tx is not None]

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
        check_key(account, "account", 20)
        return self._history_page("account_tx", account, limit, forward, cursor)

    def _history_page(
        self,
        kind: HistoryKind,
        partition: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None,
    ) -> TransactionsAndCursor:
        check_limit(limit)
        current = self._range
        if current is None:
            return TransactionsAndCursor((), None)
        ceiling = (current.max_sequence + 1, 0)  # rows of uncommitted ledgers stay hidden
        if cursor is not None:
            start = (cursor.ledger_sequence, cursor.transaction_index)
        else:
            start = (0, 0) if forward else (UINT32_MAX, UINT32_MAX)
        if not forward:
            start = min(start, ceiling)
        rows = self._fetch_history(kind, partition, start, ceiling, limit=limit, forward=forward)
        found = self.fetch_transactions([tx_hash for tx_hash, _, _ in rows])
        next_cursor = None
        if len(rows) == limit:
            _, last_seq, last_idx = rows[-1]
            if forward and kind == "nft_tx":
                last_idx += 1  # NFT history goes forward with ">=": step past the last row
            next_cursor = TransactionsCursor(last_seq, last_idx)
        return TransactionsAndCursor(tuple(tx for tx in found if tx is not None), next_cursor)

    # ------------------------------------------------------------------ state

    def fetch_ledger_object(self, key: bytes, sequence: int) -> bytes | None:
        """The object as of ``sequence`` (``None`` when absent or deleted)."""
        return self.fetch_ledger_objects([key], sequence)[0] or None

    def fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        """Objects as of ``sequence``, aligned with ``keys`` (``b""`` when absent)."""
        checked = [check_key(key) for key in keys]
        if not self._visible(sequence):
            return [b""] * len(checked)
        return self._fetch_ledger_objects(checked, sequence)

    def fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        """The key after ``key`` in the state at ``sequence``; ``None`` at the end.

        ``key`` must be a node of the list at ``sequence``: ``FIRST_KEY``, an object key or a
        book base. This is not a general "next key greater than X" lookup.
        """
        check_key(key)
        if not self._visible(sequence):
            return None
        successor = self._fetch_successor_key(key, sequence)
        return None if successor is None or successor == LAST_KEY else successor

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
        if cursor is not None:
            check_key(cursor, "cursor")
        if not self._visible(sequence):
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

    def fetch_ledger_diff(self, sequence: int) -> list[LedgerObject]:
        """The objects changed in ``sequence`` (empty blob = deleted there), in key order.

        Empty for the initial-load ledger, which writes no diff rows.
        """
        if not self._visible(sequence):
            return []
        keys = sorted(self._fetch_diff_keys(sequence))
        blobs = self._fetch_ledger_objects(keys, sequence)
        return [LedgerObject(key, blob) for key, blob in zip(keys, blobs, strict=True)]

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
        return [key for key in self._fetch_book_bases(sequence) if key != FIRST_KEY]

    @abc.abstractmethod
    def _fetch_book_bases(self, sequence: int) -> list[bytes]:
        """Sorted keys ending in eight zero bytes with a successor row at ``<= sequence`` (the
        list's head, ``FIRST_KEY``, among them)."""

    def fetch_book_offers(self, book: bytes, sequence: int, limit: int) -> BookOffersPage:
        """Up to ``limit`` offers of the book whose base is ``book``, best quality first
        (:mod:`chainloom.ledger.books`'s walk over the successor list)."""
        check_key(book, "book base")
        check_limit(limit)
        if not self._visible(sequence):
            return BookOffersPage((), None)
        offers = book_offers(_StoredBook(self, sequence), book, limit, sequence)
        return BookOffersPage(tuple(offers), None)

    # ------------------------------------------------------------------ NFTs

    def fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        """The NFT's last recorded state at or before ``sequence``."""
        check_key(token_id, "NFT token ID")
        if not self._visible(sequence):
            return None
        return self._fetch_nft(token_id, sequence)

    def fetch_nft_transactions(
        self,
        token_id: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        """An NFT's transactions; forward uses ``seq_idx >= cursor`` (cursor = last + 1)."""
        check_key(token_id, "NFT token ID")
        return self._history_page("nft_tx", token_id, limit, forward, cursor)

    def fetch_nfts_by_issuer(
        self,
        issuer: bytes,
        taxon: int | None,
        sequence: int,
        limit: int,
        cursor: bytes | None = None,
    ) -> NFTsAndCursor:
        """NFTs minted by ``issuer`` (optionally one taxon), in (taxon, token ID) order."""
        check_key(issuer, "issuer", 20)
        check_limit(limit)
        check_sequence(sequence)
        start = check_key(cursor, "cursor") if cursor is not None else bytes(32)
        if taxon is not None:
            token_ids = self._fetch_nft_ids_by_issuer(
                issuer, check_sequence(taxon, "taxon"), start, limit, one_taxon=True
            )
        else:
            start_taxon = nft_taxon(start) if cursor is not None else 0
            token_ids = self._fetch_nft_ids_by_issuer(
                issuer, start_taxon, start, limit, one_taxon=False
            )
        nfts = tuple(nft for nft in (self.fetch_nft(token, sequence) for token in token_ids) if nft)
        return NFTsAndCursor(nfts, token_ids[-1] if len(token_ids) == limit else None)

    def fetch_mpt_holders(
        self, mpt_id: bytes, sequence: int, limit: int, cursor: bytes | None = None
    ) -> MPTHoldersPage:
        """An issuance's MPTokens present at ``sequence``, in holder order after ``cursor`` (a
        holder AccountID), as Clio's ``fetchMPTHolders``: the ``mp_token_holders`` rows, each
        holder's MPToken read at ``sequence``, absent ones skipped. Unlike Clio the page is
        filled to ``limit`` present tokens; an exactly full last page is followed by an empty
        one."""
        check_key(mpt_id, "MPTokenIssuanceID", 24)
        check_limit(limit)
        after = check_key(cursor, "holder cursor", 20) if cursor is not None else b""
        if not self._visible(sequence):
            return MPTHoldersPage((), None)
        found: list[LedgerObject] = []
        while len(found) < limit:
            wanted = limit - len(found)
            holders = self._fetch_mpt_holder_accounts(mpt_id, after, wanted)
            keys = [keylets.mptoken(mpt_id, holder) for holder in holders]
            blobs = self._fetch_ledger_objects(keys, sequence) if keys else []
            found += [LedgerObject(k, b) for k, b in zip(keys, blobs, strict=True) if b]
            if len(holders) < wanted:
                return MPTHoldersPage(tuple(found), None)
            after = holders[-1]
        return MPTHoldersPage(tuple(found), after)

    # ------------------------------------------------------------------ writes

    def start_writes(self) -> None:  # noqa: B027 - a no-op hook by design, as in Clio
        """Begin writing one ledger (a no-op unless a backend needs it)."""

    def write_ledger(self, header: LedgerHeader, blob: bytes) -> None:
        """Store the header (``ledgers``) and its hash (``ledger_hashes``)."""
        self._write_ledger(header, stored_header_blob(header, blob))

    def write_ledger_object(self, key: bytes, sequence: int, blob: bytes) -> None:
        """Store an object version (empty blob = deleted); a ``diff`` row after the first."""
        check_key(key)
        check_sequence(sequence)
        self._write_ledger_object(key, sequence, bytes(blob), with_diff=self._range is not None)

    def write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        """Store ``key -> next_key`` valid from ``sequence`` on."""
        check_key(key)
        check_key(next_key, "next key")
        check_sequence(sequence)
        self._write_successor(key, sequence, next_key)

    def write_transaction(
        self,
        tx_hash: bytes,
        sequence: int,
        date: int,
        transaction: bytes,
        metadata: bytes,
    ) -> None:
        """Store a transaction and index it under its ledger."""
        check_key(tx_hash, "transaction hash")
        check_sequence(sequence)
        self._write_transaction(tx_hash, sequence, date, bytes(transaction), bytes(metadata))

    def write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        """Store ``account_tx`` rows: one per affected account of each transaction."""
        for record in data:
            check_key(record.tx_hash, "transaction hash")
            for account in record.accounts:
                check_key(account, "account", 20)
        self._write_account_transactions(data)

    def write_nfts(self, data: Sequence[NFTsData]) -> None:
        """Store NFT state changes (and issuer / URI rows for mints and initial loads)."""
        for record in data:
            check_key(record.token_id, "NFT token ID")
            if not record.only_uri_changed:
                check_key(record.owner, "NFT owner", 20)
        self._write_nfts(data)

    def write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        """Store ``nf_token_transactions`` rows."""
        for record in data:
            check_key(record.token_id, "NFT token ID")
            check_key(record.tx_hash, "transaction hash")
        self._write_nft_transactions(data)

    def write_mpt_holders(self, data: Sequence[MPTHolderData]) -> None:
        """Store ``mp_token_holders`` rows (writing a row again changes nothing)."""
        for record in data:
            check_key(record.mpt_id, "MPTokenIssuanceID", 24)
            check_key(record.holder, "MPToken holder", 20)
        self._write_mpt_holders(data)

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

    def flush_writes(self) -> None:
        """Make every row written so far durable *without* moving the range.

        For loaders that write many ledgers in parallel (the Spark ledger-load job): each
        writer flushes its ledgers, and one coordinator then calls ``finish_writes`` for them
        in order. Until then the rows stay invisible, as after a crash. Raises
        :class:`~chainloom.ledger.errors.BackendError` when a write failed.
        """
        self._do_flush_writes()

    def abandon_writes(self) -> None:  # noqa: B027 - nothing to undo unless a backend can
        """Give up the ledger being written (after an error, before ``finish_writes``).

        Its rows never become visible either way; a backend that can, discards them (SQLite
        rolls its transaction back), and write errors of the abandoned ledger are forgotten so
        they do not fail the next ``finish_writes``.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections (pending writes are abandoned, never made visible)."""

    def __enter__(self) -> BackendInterface:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ what a backend provides
    # Arguments are already checked and the sequence visible: these only read and write rows.

    @abc.abstractmethod
    def _fetch_ledger_range(self) -> LedgerRange | None:
        """Read both ``ledger_range`` rows (min = max when only one exists)."""

    @abc.abstractmethod
    def _fetch_latest_ledger_sequence(self) -> int | None:
        """The ``is_latest`` row of ``ledger_range``."""

    @abc.abstractmethod
    def _fetch_ledger_header(self, sequence: int) -> bytes | None:
        """The stored header blob of ``sequence``."""

    @abc.abstractmethod
    def _fetch_ledger_sequence(self, ledger_hash: bytes) -> int | None:
        """The sequence stored under a ledger hash."""

    @abc.abstractmethod
    def _fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        """Stored transactions by hash, aligned with ``hashes``, committed or not."""

    @abc.abstractmethod
    def _fetch_transaction_hashes(self, sequence: int) -> list[bytes]:
        """The hashes indexed under a ledger, in any order."""

    @abc.abstractmethod
    def _fetch_history(
        self,
        kind: HistoryKind,
        partition: bytes,
        start: tuple[int, int],
        ceiling: tuple[int, int],
        *,
        limit: int,
        forward: bool,
    ) -> list[tuple[bytes, int, int]]:
        """Up to ``limit`` ``(hash, sequence, index)`` rows of a history, in walk order.

        Forward: ``start < seq_idx < ceiling`` (``start <= seq_idx`` for ``nft_tx``), oldest
        first; backward: ``seq_idx < start``, newest first.
        """

    @abc.abstractmethod
    def _fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        """Objects as of ``sequence``, aligned with ``keys`` (``b""`` when absent or deleted)."""

    @abc.abstractmethod
    def _fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        """The stored successor of ``key`` at ``sequence`` (``LAST_KEY`` at the end)."""

    @abc.abstractmethod
    def _fetch_diff_keys(self, sequence: int) -> list[bytes]:
        """The keys of the ``diff`` rows of ``sequence``, in any order."""

    @abc.abstractmethod
    def _fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        """The NFT's last state row at or before ``sequence`` with its URI."""

    @abc.abstractmethod
    def _fetch_nft_ids_by_issuer(
        self, issuer: bytes, taxon: int, start: bytes, limit: int, *, one_taxon: bool
    ) -> list[bytes]:
        """Up to ``limit`` token IDs of ``issuer`` after ``(taxon, start)``, in that order.

        ``one_taxon``: only token IDs of ``taxon`` itself.
        """

    @abc.abstractmethod
    def _fetch_mpt_holder_accounts(self, mpt_id: bytes, after: bytes, limit: int) -> list[bytes]:
        """Up to ``limit`` holders of ``mpt_id`` above ``after`` (``b""``: from the first), in
        order."""

    @abc.abstractmethod
    def _write_ledger(self, header: LedgerHeader, stored: bytes) -> None:
        """Write the ``ledgers`` and ``ledger_hashes`` rows (``stored``: the 150-byte form)."""

    @abc.abstractmethod
    def _write_ledger_object(
        self, key: bytes, sequence: int, blob: bytes, *, with_diff: bool
    ) -> None:
        """Write an ``objects`` row, and a ``diff`` row when ``with_diff``."""

    @abc.abstractmethod
    def _write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        """Write a ``successor`` row."""

    @abc.abstractmethod
    def _write_transaction(
        self, tx_hash: bytes, sequence: int, date: int, transaction: bytes, metadata: bytes
    ) -> None:
        """Write the ``transactions`` and ``ledger_transactions`` rows."""

    @abc.abstractmethod
    def _write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        """Write the ``account_tx`` rows."""

    @abc.abstractmethod
    def _write_nfts(self, data: Sequence[NFTsData]) -> None:
        """Write ``nf_tokens``, ``issuer_nf_tokens_v2`` and ``nf_token_uris`` rows."""

    @abc.abstractmethod
    def _write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        """Write the ``nf_token_transactions`` rows."""

    @abc.abstractmethod
    def _write_mpt_holders(self, data: Sequence[MPTHolderData]) -> None:
        """Write the ``mp_token_holders`` rows."""

    @abc.abstractmethod
    def _do_flush_writes(self) -> None:
        """Wait for (or commit) every write so far; leave the range alone."""

    @abc.abstractmethod
    def _do_finish_writes(self, sequence: int) -> bool:
        """Wait for every write, then compare-and-set the range to ``sequence``."""


class _StoredBook:
    """:class:`chainloom.ledger.books.BookReads` over a backend at one ledger: objects and the
    successor list as stored."""

    __slots__ = ("_backend", "_sequence")

    def __init__(self, backend: BackendInterface, sequence: int) -> None:
        self._backend = backend
        self._sequence = sequence

    def read(self, keys: Sequence[bytes]) -> list[bytes]:
        return self._backend.fetch_ledger_objects(keys, self._sequence)

    def successor(self, key: bytes) -> bytes | None:
        return self._backend.fetch_successor_key(key, self._sequence)
