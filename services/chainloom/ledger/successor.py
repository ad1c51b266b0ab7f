"""Successor-list maintenance: which ``successor`` rows a ledger must write.

The ``successor`` table is a versioned linked list of every state key: a row
``(key, seq, next)`` says "from ledger ``seq`` on, the key after ``key`` is ``next``". Walking it
from ``FIRST_KEY`` at sequence n yields exactly the keys that existed at n, in order, which is
how a ledger page walk (and Clio's cache load) works without a range scan over ``objects``.

Clio computes the rows from its in-memory cache of the latest state; :class:`SuccessorTracker`
is that cache reduced to the sorted key set, pure and database-free, so it can be tested against
a brute-force model. Every row it emits has the form ``(x, successor of x in the new state)``:

* initial load: the whole list, ``FIRST_KEY -> k0 -> k1 ... -> LAST_KEY``;
* a created key k: ``(pred(k) -> k)`` and ``(k -> succ(k))``;
* a deleted key k: ``(pred(k) -> succ(k))`` (k's own rows stay, unreachable);
* a modified key: nothing;
* a book base b (a book directory key with its low 64 bits zeroed; not itself a state key):
  ``(b -> succ(b))`` whenever that successor may have changed, so ``fetch_book_offers`` finds a
  book's best directory with one lookup. Bases are remembered once seen, so their rows stay
  exact at every later sequence (Clio stops updating a base when its book empties; keeping it
  costs one key per book and makes the invariant unconditional).

Because every row is ``(x, succ_new(x))``, two rows for the same ``x`` in one ledger always
agree, and they are returned de-duplicated in key order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator

from chainloom.ledger.errors import SuccessorError
from chainloom.ledger.types import FIRST_KEY, LAST_KEY

_CHUNK = 1024


class SortedKeys:
    """A sorted set of byte strings: chunked lists, O(sqrt n) inserts, O(log n) searches."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        ordered = sorted(set(keys))
        self._chunks: list[list[bytes]] = [
            ordered[i : i + _CHUNK] for i in range(0, len(ordered), _CHUNK)
        ]
        self._maxes: list[bytes] = [chunk[-1] for chunk in self._chunks]
        self._size = len(ordered)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            yield from chunk

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, bytes):
            return False
        at = bisect_left(self._maxes, key)
        if at == len(self._maxes):
            return False
        chunk = self._chunks[at]
        position = bisect_left(chunk, key)
        return position < len(chunk) and chunk[position] == key

    def add(self, key: bytes) -> None:
        """Insert ``key`` (no-op if present)."""
        if not self._chunks:
            self._chunks.append([key])
            self._maxes.append(key)
            self._size = 1
            return
        at = bisect_left(self._maxes, key)
        if at == len(self._maxes):
            at -= 1
        chunk = self._chunks[at]
        position = bisect_left(chunk, key)
        if position < len(chunk) and chunk[position] == key:
            return
        insort(chunk, key)
        self._size += 1
        self._maxes[at] = chunk[-1]
        if len(chunk) > 2 * _CHUNK:
            self._chunks[at : at + 1] = [chunk[:_CHUNK], chunk[_CHUNK:]]
            self._maxes[at : at + 1] = [chunk[_CHUNK - 1], chunk[-1]]

    def discard(self, key: bytes) -> None:
        """Remove ``key`` (no-op if absent)."""
        at = bisect_left(self._maxes, key)
        if at == len(self._maxes):
            return
        chunk = self._chunks[at]
        position = bisect_left(chunk, key)
        if position == len(chunk) or chunk[position] != key:
            return
        del chunk[position]
        self._size -= 1
        if chunk:
            self._maxes[at] = chunk[-1]
        else:
            del self._chunks[at]
            del self._maxes[at]

    def successor(self, key: bytes) -> bytes | None:
        """The smallest member greater than ``key``."""
        at = bisect_right(self._maxes, key)
        if at == len(self._maxes):
            return None
        chunk = self._chunks[at]
        return chunk[bisect_right(chunk, key)]

    def predecessor(self, key: bytes) -> bytes | None:
        """The largest member smaller than ``key``."""
        at = bisect_left(self._maxes, key)
        if at < len(self._maxes):
            chunk = self._chunks[at]
            position = bisect_left(chunk, key)
            if position > 0:
                return chunk[position - 1]
        if at == 0:
            return None
        return self._chunks[at - 1][-1]


class SuccessorTracker:
    """The sorted key set at the latest sequence, producing the successor rows per ledger."""

    def __init__(self) -> None:
        self._keys = SortedKeys()
        self._book_bases: list[bytes] = []
        self._loaded = False

    @property
    def loaded(self) -> bool:
        """Whether an initial load happened (``apply`` needs the full key set)."""
        return self._loaded

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> list[bytes]:
        """Every state key, in order."""
        return list(self._keys)

    def successor(self, key: bytes) -> bytes:
        """The next state key after ``key``, or ``LAST_KEY``."""
        found = self._keys.successor(key)
        return LAST_KEY if found is None else found

    def predecessor(self, key: bytes) -> bytes:
        """The previous state key before ``key``, or ``FIRST_KEY``."""
        found = self._keys.predecessor(key)
        return FIRST_KEY if found is None else found

    def initial_load(
        self, keys: Iterable[bytes], book_bases: Iterable[bytes] = ()
    ) -> list[tuple[bytes, bytes]]:
        """Replace the key set with ``keys``; return the full list plus the book-base rows."""
        key_list = [_check(key, "state key") for key in keys]
        self._keys = SortedKeys(key_list)
        if len(self._keys) != len(key_list):
            raise SuccessorError("initial load lists a state key more than once")
        self._book_bases = []
        self._loaded = True
        rows: dict[bytes, bytes] = {}
        previous = FIRST_KEY
        for key in self._keys:
            rows[previous] = key
            previous = key
        rows[previous] = LAST_KEY
        for base in book_bases:
            self._remember_base(_check(base, "book base"))
        for base in self._book_bases:
            rows.setdefault(base, self.successor(base))
        return sorted(rows.items())

    def apply(
        self,
        created: Iterable[bytes],
        deleted: Iterable[bytes],
        book_bases_created: Iterable[bytes] = (),
        book_bases_deleted: Iterable[bytes] = (),
    ) -> list[tuple[bytes, bytes]]:
        """Apply one ledger's created and deleted keys; return its successor rows.

        ``book_bases_created`` / ``book_bases_deleted`` are the bases of book directories
        created / deleted in this ledger. The key set is unchanged if anything is refused.
        """
        if not self._loaded:
            raise SuccessorError("apply() before initial_load(): the full key set is unknown")
        created_keys = [_check(key, "created key") for key in created]
        deleted_keys = [_check(key, "deleted key") for key in deleted]
        self._check_diff(created_keys, deleted_keys)
        touched_bases: set[bytes] = {_check(b, "book base") for b in book_bases_created}
        touched_bases.update(_check(b, "book base") for b in book_bases_deleted)
        # A base's successor can change only if a changed key k has the base in
        # [pred_old(k), k): a key created between the base and its old successor, or the old
        # successor deleted. pred_old is taken before the set changes.
        for key in created_keys + deleted_keys:
            touched_bases.update(self._bases_between(self.predecessor(key), key))
        for key in deleted_keys:
            self._keys.discard(key)
        for key in created_keys:
            self._keys.add(key)
        rows: dict[bytes, bytes] = {}
        for key in deleted_keys:
            rows[self.predecessor(key)] = self.successor(key)
        for key in created_keys:
            rows[self.predecessor(key)] = key
            rows[key] = self.successor(key)
        for base in touched_bases:
            self._remember_base(base)
            rows[base] = self.successor(base)
        return sorted(rows.items())

    def _check_diff(self, created_keys: list[bytes], deleted_keys: list[bytes]) -> None:
        created_set = set(created_keys)
        deleted_set = set(deleted_keys)
        if len(created_set) != len(created_keys) or len(deleted_set) != len(deleted_keys):
            raise SuccessorError("a key is listed twice among the created or deleted keys")
        both = created_set & deleted_set
        if both:
            raise SuccessorError(
                f"key {min(both).hex().upper()} is both created and deleted in one ledger"
            )
        for key in created_keys:
            if key in self._keys:
                raise SuccessorError(f"created key {key.hex().upper()} already exists")
        for key in deleted_keys:
            if key not in self._keys:
                raise SuccessorError(f"deleted key {key.hex().upper()} does not exist")

    def _remember_base(self, base: bytes) -> None:
        position = bisect_left(self._book_bases, base)
        if position == len(self._book_bases) or self._book_bases[position] != base:
            self._book_bases.insert(position, base)

    def _bases_between(self, low: bytes, high: bytes) -> list[bytes]:
        return self._book_bases[
            bisect_left(self._book_bases, low) : bisect_left(self._book_bases, high)
        ]


def _check(key: bytes, what: str) -> bytes:
    if not isinstance(key, bytes) or len(key) != 32:
        shown = key.hex() if isinstance(key, bytes) else repr(key)
        raise SuccessorError(f"{what} must be 32 bytes, got {shown!r}")
    if key in (FIRST_KEY, LAST_KEY):
        raise SuccessorError(f"{what} {key.hex().upper()} is reserved for the list's head or tail")
    return key
