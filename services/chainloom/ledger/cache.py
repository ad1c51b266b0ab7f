"""The newest ledger's state in memory (Clio's ``LedgerCache``), so reads of it skip the database.

Wallets ask about the newest ledger almost always: ``account_info``, ``account_lines`` and the
other ``account_*`` methods read a handful of objects each, and every read is a database round
trip. The cache holds every object of one ledger (the newest it has seen) and follows the stored
range forward by applying each new ledger's diff (:meth:`BackendInterface.fetch_ledger_diff`).
It answers only for exactly its own sequence; every other read goes to the database.

Beside the objects it keeps the keys of the book directories' first pages in order (rippled
keys them by book base and quality), so ``book_offers`` on the newest ledger runs the database's
walk (:mod:`chainloom.ledger.books`) over memory; and the holders of each MPT issuance.

Memory is bounded: when the state (keys, blobs and a per-entry overhead) would pass
``max_bytes`` the cache gives up and stays empty, and the API reads the database as before.
Loading walks the whole state once, in a background thread, so no request waits for it; a gap
of more than ``max_catch_up`` ledgers (the process was paused, say) reloads rather than replays.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.books import book_offers, is_book_root
from chainloom.ledger.mpt import mptoken_holder
from chainloom.ledger.successor import SortedKeys
from chainloom.ledger.types import LedgerHeader, LedgerObject

log = logging.getLogger(__name__)

ENTRY_OVERHEAD = 120
"""Bytes a dict entry, its key and its blob object cost beyond their contents (CPython)."""

_LOAD_PAGE = 2048


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """How big the cache may grow and how it follows the range."""

    max_bytes: int = 1 << 30
    """The most memory the state may take; above it the cache turns itself off."""
    max_catch_up: int = 256
    """The most ledgers applied as diffs; a longer gap reloads the whole state."""
    poll_seconds: float = 0.2
    """How often the follower thread looks at the range."""
    max_failures: int = 25
    """Failed updates in a row after which the follower stops (a closed backend); a later read
    starts it again."""


class LedgerCache:
    """Every object of the newest ledger, kept current from the ledger diffs."""

    def __init__(self, settings: CacheSettings | None = None) -> None:
        self.settings = settings or CacheSettings()
        self._objects: dict[bytes, bytes] = {}
        self._sequence: int | None = None
        self._header: LedgerHeader | None = None
        self._holders: dict[bytes, set[bytes]] = {}
        self._book_directories = SortedKeys()
        self._bytes = 0
        self._disabled = False
        self._lock = threading.Lock()
        self._updating = threading.Lock()
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None

    # ------------------------------------------------------------------ reading

    @property
    def sequence(self) -> int | None:
        """The ledger the cache holds (``None``: none yet, or turned off)."""
        return self._sequence

    @property
    def header(self) -> LedgerHeader | None:
        """The header of the ledger the cache holds."""
        return self._header

    @property
    def size_bytes(self) -> int:
        """The memory the state is counted as taking."""
        return self._bytes

    @property
    def disabled(self) -> bool:
        """Whether the state outgrew ``max_bytes`` (the cache then answers nothing)."""
        return self._disabled

    def read(self, keys: Sequence[bytes], sequence: int) -> list[bytes] | None:
        """The objects at ``sequence`` (``b""`` where absent), or ``None`` when the cache does
        not hold that ledger."""
        with self._lock:
            if sequence != self._sequence:
                return None
            objects = self._objects
            return [objects.get(key, b"") for key in keys]

    def mpt_holders(self, issuance_id: bytes, sequence: int) -> list[bytes] | None:
        """The holders (AccountIDs) of an issuance's MPTokens at ``sequence`` in order (what
        the ``mp_token_holders`` table gives, without absent ones), or ``None`` when the cache
        does not hold that ledger."""
        with self._lock:
            if sequence != self._sequence:
                return None
            return sorted(self._holders.get(issuance_id, ()))

    def book_offers(self, book: bytes, sequence: int, limit: int) -> list[LedgerObject] | None:
        """The first ``limit`` offers of the book whose base is ``book`` at ``sequence``, best
        quality first, as the database's walk gives them; ``None`` when the cache does not hold
        that ledger. The walk runs under the lock, so it sees one ledger throughout."""
        with self._lock:
            if sequence != self._sequence:
                return None
            reads = _CachedBook(self._objects, self._book_directories)
            return book_offers(reads, book, limit, sequence)

    # ------------------------------------------------------------------ following the range

    def follow(self, backend: BackendInterface) -> None:
        """Start the background thread that loads and follows ``backend`` (once). The thread
        holds the backend weakly: it ends when the backend's owner drops it, or at
        :meth:`close`."""
        if self._follower is not None or self._disabled or self._stop.is_set():
            return
        with self._updating:
            if self._follower is not None:
                return
            self._follower = threading.Thread(
                target=self._follow,
                args=(weakref.ref(backend),),
                name="ledger-cache",
                daemon=True,
            )
            self._follower.start()

    def close(self) -> None:
        """Stop following and drop the state."""
        self._stop.set()
        follower = self._follower
        if follower is not None and follower is not threading.current_thread():
            follower.join(timeout=10)
        with self._lock:
            self._objects, self._sequence, self._bytes, self._header = {}, None, 0, None
            self._holders, self._book_directories = {}, SortedKeys()

    def _follow(self, backend_ref: weakref.ref[BackendInterface]) -> None:
        failures = 0
        while not self._stop.is_set() and not self._disabled:
            backend = backend_ref()
            if backend is None:  # the server that owned it is gone
                break
            try:
                self.update(backend)
                failures = 0
            except Exception:  # the database is down or closed: reads fall back to it
                failures += 1
                if failures == 1:
                    log.warning("ledger cache: update failed; reads use the database",
                                exc_info=True)  # fmt: skip
                if failures >= self.settings.max_failures:
                    break
            del backend
            self._stop.wait(self.settings.poll_seconds)
        with self._lock:  # stopped: drop the state; the next read starts a new follower
            self._objects, self._sequence, self._bytes, self._header = {}, None, 0, None
            self._holders, self._book_directories = {}, SortedKeys()
        with self._updating:
            self._follower = None

    def update(self, backend: BackendInterface) -> None:
        """Bring the cache to the newest committed ledger: load it, or apply the diffs since."""
        with self._updating:
            found = backend.fetch_ledger_range()
            if found is None or self._disabled:
                return
            newest = found.max_sequence
            current = self._sequence
            if current is not None and current >= newest:
                return
            if current is None or newest - current > self.settings.max_catch_up:
                self._load(backend, newest)
                return
            for sequence in range(current + 1, newest + 1):
                if not self._apply(backend, sequence):
                    return

    def _load(self, backend: BackendInterface, sequence: int) -> None:
        objects: dict[bytes, bytes] = {}
        holders: dict[bytes, set[bytes]] = {}
        directories: list[bytes] = []
        size = 0
        cursor = None
        while True:
            page = backend.fetch_ledger_page(cursor, sequence, _LOAD_PAGE)
            for item in page.objects:
                objects[item.key] = item.blob
                found = mptoken_holder(item.blob)
                if found is not None:
                    holders.setdefault(found.mpt_id, set()).add(found.holder)
                if is_book_root(item.key, item.blob):
                    directories.append(item.key)
                size += len(item.key) + len(item.blob) + ENTRY_OVERHEAD
            if size > self.settings.max_bytes:
                self._turn_off(size)
                return
            if page.cursor is None:
                break
            cursor = page.cursor
        header = backend.fetch_ledger_by_sequence(sequence)
        with self._lock:
            self._objects, self._sequence, self._bytes = objects, sequence, size
            self._header, self._holders = header, holders
            self._book_directories = SortedKeys(directories)
        log.info("ledger cache: loaded ledger %d (%d objects, %d bytes)", sequence,
                 len(objects), size)  # fmt: skip

    def _apply(self, backend: BackendInterface, sequence: int) -> bool:
        diff = backend.fetch_ledger_diff(sequence)
        header = backend.fetch_ledger_by_sequence(sequence)
        with self._lock:
            objects = self._objects
            size = self._bytes
            for item in diff:
                old = objects.pop(item.key, None)
                if old is not None:
                    size -= len(item.key) + len(old) + ENTRY_OVERHEAD
                    self._index_mptoken(old, add=False)
                    self._book_directories.discard(item.key)
                if item.blob:
                    objects[item.key] = item.blob
                    size += len(item.key) + len(item.blob) + ENTRY_OVERHEAD
                    self._index_mptoken(item.blob, add=True)
                    if is_book_root(item.key, item.blob):
                        self._book_directories.add(item.key)
            self._bytes = size
            self._sequence = sequence
            self._header = header
        if size > self.settings.max_bytes:
            self._turn_off(size)
            return False
        return True

    def _index_mptoken(self, blob: bytes, *, add: bool) -> None:
        found = mptoken_holder(blob)
        if found is None:
            return
        holders = self._holders.setdefault(found.mpt_id, set())
        if add:
            holders.add(found.holder)
        else:
            holders.discard(found.holder)

    def _turn_off(self, size: int) -> None:
        with self._lock:
            self._objects, self._sequence, self._bytes, self._header = {}, None, 0, None
            self._holders, self._book_directories = {}, SortedKeys()
            self._disabled = True
        log.warning("ledger cache: the state passed %d bytes (%d): reads use the database",
                    self.settings.max_bytes, size)  # fmt: skip


class _CachedBook:
    """:class:`chainloom.ledger.books.BookReads` over the cache's ledger (its lock held)."""

    __slots__ = ("_directories", "_objects")

    def __init__(self, objects: dict[bytes, bytes], directories: SortedKeys) -> None:
        self._objects = objects
        self._directories = directories

    def read(self, keys: Sequence[bytes]) -> list[bytes]:
        objects = self._objects
        return [objects.get(key, b"") for key in keys]

    def successor(self, key: bytes) -> bytes | None:
        return self._directories.successor(key)
