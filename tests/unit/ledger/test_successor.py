"""Successor-list upkeep: Clio's worked example, ledger 38129, and a brute-force model."""

from __future__ import annotations

import itertools
import random
from bisect import bisect_right

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainloom.ledger.errors import SuccessorError
from chainloom.ledger.successor import SortedKeys, SuccessorTracker
from chainloom.ledger.types import FIRST_KEY, LAST_KEY


def k(last: int) -> bytes:
    """A key abbreviated to its last byte, as in XRPLF/clio ``src/data/README.md``'s example."""
    return bytes(31) + bytes([last])


class SuccessorTable:
    """The ``successor`` table in memory: rows (key, seq) -> next, read like the CQL query."""

    def __init__(self) -> None:
        self.rows: dict[bytes, list[tuple[int, bytes]]] = {}

    def write(self, rows, seq: int) -> None:
        for key, next_key in rows:
            versions = self.rows.setdefault(key, [])
            versions.append((seq, next_key))
            versions.sort()

    def next(self, key: bytes, seq: int) -> bytes | None:
        versions = self.rows.get(key, [])
        at = bisect_right(versions, (seq, LAST_KEY + b"\xff")) - 1
        return versions[at][1] if at >= 0 else None

    def walk(self, seq: int) -> list[bytes]:
        keys: list[bytes] = []
        position = FIRST_KEY
        while True:
            following = self.next(position, seq)
            assert following is not None, f"list broken after {position.hex()} at {seq}"
            if following == LAST_KEY:
                return keys
            keys.append(following)
            position = following


def test_worked_example_of_reference_section_3_2():
    tracker = SuccessorTracker()
    table = SuccessorTable()
    rows_1000 = tracker.initial_load([k(5), k(1), k(2)])
    assert rows_1000 == [(FIRST_KEY, k(1)), (k(1), k(2)), (k(2), k(5)), (k(5), LAST_KEY)]
    table.write(rows_1000, 1000)
    rows_1001 = tracker.apply(created=[k(3)], deleted=[k(2)])
    assert rows_1001 == [(k(1), k(3)), (k(3), k(5))]
    table.write(rows_1001, 1001)
    rows_1002 = tracker.apply(created=[k(4)], deleted=[])
    assert rows_1002 == [(k(3), k(4)), (k(4), k(5))]
    table.write(rows_1002, 1002)
    assert table.walk(1000) == [k(1), k(2), k(5)]
    assert table.walk(1001) == [k(1), k(3), k(5)]
    assert table.walk(1002) == [k(1), k(3), k(4), k(5)]
    assert tracker.keys() == [k(1), k(3), k(4), k(5)]


def test_modified_objects_write_no_rows_and_empty_state_is_one_row():
    tracker = SuccessorTracker()
    assert tracker.initial_load([]) == [(FIRST_KEY, LAST_KEY)]
    assert tracker.apply(created=[], deleted=[]) == []
    assert tracker.apply(created=[k(9)], deleted=[]) == [(FIRST_KEY, k(9)), (k(9), LAST_KEY)]
    assert tracker.apply(created=[], deleted=[k(9)]) == [(FIRST_KEY, LAST_KEY)]


def test_ledger_38129_initial_load_rows(xrpl_vectors):
    objects = [
        v
        for v in xrpl_vectors
        if v["kind"] == "ledger_object" and v["expected"].get("state_at_ledger") == 38129
    ]
    assert len(objects) == 261
    keys = [bytes.fromhex(v["expected"]["key"]) for v in objects]
    bases = [
        bytes.fromhex(v["expected"]["book_base"])
        for v in objects
        if v["expected"].get("is_book_dir")
    ]
    rows = SuccessorTracker().initial_load(keys, bases)
    ordered = sorted(keys)
    list_rows = {(FIRST_KEY, ordered[0]), (ordered[-1], LAST_KEY)}
    list_rows |= set(itertools.pairwise(ordered))
    assert len(list_rows) == 262
    base_rows = set(rows) - list_rows
    assert set(rows) >= list_rows
    # Ledger 38129's four book-base rows (prefixes and heads of the keys); five book directories,
    # two sharing a base.
    shown = sorted((b.hex().upper()[:8], n.hex().upper()[-20:]) for b, n in base_rows)
    assert shown == [
        ("2FB4904A", "82144F0415EB4EA0C727"),
        ("62AE37A4", "F04756044364C5BB0000"),
        ("99CB152A", "95D3F13D90D9949135DB"),
        ("F774E032", "9697531AA535D3D0C000"),
    ]
    assert len(rows) == 266
    assert ordered[0].hex().upper().startswith("02CE52E3")
    assert ordered[-1].hex().upper().startswith("FFA9A0BE")


def test_refused_diffs_leave_the_key_set_unchanged():
    tracker = SuccessorTracker()
    with pytest.raises(SuccessorError, match="initial_load"):
        tracker.apply([k(1)], [])
    tracker.initial_load([k(1), k(2)])
    with pytest.raises(SuccessorError, match=f"deleted key {k(7).hex().upper()} does not exist"):
        tracker.apply(created=[k(3)], deleted=[k(7)])
    with pytest.raises(SuccessorError, match="already exists"):
        tracker.apply(created=[k(2)], deleted=[])
    with pytest.raises(SuccessorError, match="both created and deleted"):
        tracker.apply(created=[k(4)], deleted=[k(4)])
    with pytest.raises(SuccessorError, match="32 bytes"):
        tracker.apply(created=[b"short"], deleted=[])
    with pytest.raises(SuccessorError, match="reserved"):
        tracker.apply(created=[LAST_KEY], deleted=[])
    assert tracker.keys() == [k(1), k(2)]


def test_book_base_follows_its_best_directory():
    base = bytes(23) + b"\x07" + bytes(8)

    def directory(quality: int) -> bytes:
        return base[:24] + quality.to_bytes(8, "big")

    tracker = SuccessorTracker()
    rows = tracker.initial_load([k(1), directory(50)], [base])
    assert (base, directory(50)) in rows
    # A better quality appears: the base now points to it.
    rows = tracker.apply(created=[directory(20)], deleted=[], book_bases_created=[base])
    assert (base, directory(20)) in rows
    # The best directory goes: the base moves to the next one.
    rows = tracker.apply(created=[], deleted=[directory(20)], book_bases_deleted=[base])
    assert (base, directory(50)) in rows
    # The caller forgot to name the base, yet the row still follows (the tracker remembers it).
    rows = tracker.apply(created=[], deleted=[directory(50)])
    assert (base, LAST_KEY) in rows


@pytest.mark.parametrize("seed", range(6))
def test_random_history_walks_match_a_brute_force_model(seed):
    rng = random.Random(seed)
    # A small key space (so creates land next to each other and next to book bases).
    universe = [bytes([rng.randrange(4)]) + rng.randbytes(31) for _ in range(120)]
    bases = sorted({key[:24] + bytes(8) for key in universe[:10]})
    state = set(rng.sample(universe, 40))
    tracker = SuccessorTracker()
    table = SuccessorTable()
    table.write(tracker.initial_load(state, bases), 100)
    history = {100: sorted(state)}
    for seq in range(101, 131):
        deleted = rng.sample(sorted(state), min(len(state), rng.randrange(5)))
        created = rng.sample(sorted(set(universe) - state), rng.randrange(6))
        rows = tracker.apply(created=created, deleted=deleted)
        assert len({key for key, _ in rows}) == len(rows)
        table.write(rows, seq)
        state = (state - set(deleted)) | set(created)
        history[seq] = sorted(state)
    for seq, expected in history.items():
        assert table.walk(seq) == expected
        for base in bases:
            successor = next((key for key in expected if key > base), LAST_KEY)
            assert table.next(base, seq) == successor


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3000)), max_size=400))
def test_sorted_keys_behaves_like_a_sorted_set(operations):
    keys = SortedKeys()
    model: set[bytes] = set()
    for add, number in operations:
        key = number.to_bytes(32, "big")
        if add:
            keys.add(key)
            model.add(key)
        else:
            keys.discard(key)
            model.discard(key)
    ordered = sorted(model)
    assert list(keys) == ordered
    assert len(keys) == len(ordered)
    for probe in (0, 1, 1500, 2999, 3000, 3001):
        key = probe.to_bytes(32, "big")
        assert keys.successor(key) == next((x for x in ordered if x > key), None)
        assert keys.predecessor(key) == next((x for x in reversed(ordered) if x < key), None)
        assert (key in keys) == (key in model)


def test_sorted_keys_splits_large_chunks():
    numbers = list(range(0, 10_000, 3))
    random.Random(1).shuffle(numbers)
    keys = SortedKeys()
    for number in numbers:
        keys.add(number.to_bytes(32, "big"))
    assert list(keys) == [n.to_bytes(32, "big") for n in sorted(numbers)]
    assert keys.successor((4000).to_bytes(32, "big")) == (4002).to_bytes(32, "big")
