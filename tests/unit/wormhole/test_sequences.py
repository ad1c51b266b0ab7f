"""The gap finder: ranges of missing sequences, in bulk and as sequences arrive in any order."""

from __future__ import annotations

import json
import random

import pytest

from chainloom.wormhole.errors import MessageKeyError
from chainloom.wormhole.sequences import (
    GapBook,
    SequenceRange,
    SequenceTracker,
    clip,
    find_missing,
    merge_ranges,
)


def _expand(ranges: list[SequenceRange]) -> list[int]:
    return [sequence for item in ranges for sequence in item]


def test_holes_between_the_lowest_and_highest_present():
    assert find_missing([0, 1, 2, 5, 6, 9]) == [SequenceRange(3, 4), SequenceRange(7, 8)]
    assert find_missing([4, 5, 6]) == []
    assert find_missing([]) == []
    assert find_missing([7]) == []


def test_bounds_add_the_head_and_tail_and_clip():
    assert find_missing([3, 5], first=0, last=8) == [
        SequenceRange(0, 2),
        SequenceRange(4, 4),
        SequenceRange(6, 8),
    ]
    assert find_missing([], first=2, last=4) == [SequenceRange(2, 4)]
    assert find_missing([], first=2) == []  # the tail is unknown without a last
    assert find_missing([0, 10, 20], first=5, last=15) == [
        SequenceRange(5, 9),
        SequenceRange(11, 15),
    ]


def test_out_of_order_repeats_and_late_arrivals_fill_holes():
    tracker = SequenceTracker()
    for sequence in (10, 14, 12, 12, 7, 14):
        tracker.add(sequence)
    assert tracker.missing() == [SequenceRange(8, 9), SequenceRange(11, 11), SequenceRange(13, 13)]
    assert tracker.seen == 4
    assert not tracker.add(12)
    assert tracker.add(11)
    assert tracker.add(13)
    assert tracker.missing() == [SequenceRange(8, 9)]
    assert tracker.contiguous_until == 7
    tracker.add(8)
    tracker.add(9)
    assert tracker.missing() == []
    assert tracker.contiguous_until == 14


def test_contiguous_until_needs_the_known_first():
    tracker = SequenceTracker(first=0)
    tracker.add(1)
    assert tracker.contiguous_until is None
    tracker.add(0)
    assert tracker.contiguous_until == 1


@pytest.mark.parametrize("seed", range(20))
def test_matches_a_brute_force_set_difference(seed: int):
    rng = random.Random(seed)
    present = rng.sample(range(200), rng.randrange(1, 120))
    present += rng.sample(present, len(present) // 4)  # repeats
    rng.shuffle(present)
    first = rng.choice([None, rng.randrange(0, 50)])
    last = rng.choice([None, rng.randrange(150, 260)])
    low = min(present) if first is None else first
    high = max(present) if last is None else last
    expected = sorted(set(range(low, high + 1)) - set(present))
    got = find_missing(present, first=first, last=last)
    assert _expand(got) == expected
    assert got == merge_ranges(expected)  # the fewest ranges, ascending


def test_ranges_parse_chunk_and_clip():
    assert SequenceRange.parse("5") == SequenceRange(5, 5)
    assert SequenceRange.parse("5-9").count == 5
    assert str(SequenceRange(5, 9)) == "5-9"
    assert list(SequenceRange(0, 9).chunks(4)) == [
        SequenceRange(0, 3),
        SequenceRange(4, 7),
        SequenceRange(8, 9),
    ]
    assert clip([SequenceRange(0, 9), SequenceRange(20, 29)], 5, 22) == [
        SequenceRange(5, 9),
        SequenceRange(20, 22),
    ]
    for text in ("x", "5-", "9-5"):
        with pytest.raises(MessageKeyError):
            SequenceRange.parse(text)
    with pytest.raises(MessageKeyError):
        SequenceRange(0, 2**64)


# --- streaming: the GapBook (indexer and relayer) -----------------------------------------

EMITTER = "00" * 31 + "01"
OTHER = "00" * 31 + "02"


def seen(book: GapBook, *sequences: int, at: float = 0.0, chain: int = 2) -> None:
    for sequence in sequences:
        book.observe(chain, bytes.fromhex(EMITTER), sequence, at)


def holes(book: GapBook, chain: int = 2) -> list[tuple[int, int, float]]:
    return [(h.first, h.last, at) for h, at in book.tracks[(chain, EMITTER)].holes()]


def test_a_jump_opens_one_hole_noticed_once_and_late_arrivals_split_it() -> None:
    book = GapBook()
    seen(book, 10)
    seen(book, 15, at=100.0)
    assert holes(book) == [(11, 14, 100.0)]
    seen(book, 12, at=101.0)
    assert holes(book) == [(11, 11, 100.0), (13, 14, 100.0)]
    seen(book, 11, 14, 13)
    assert holes(book) == []
    assert book.tracks[(2, EMITTER)].contiguous_until == 15


def test_a_huge_jump_is_one_range_and_emitters_are_apart() -> None:
    book = GapBook()
    seen(book, 0, 1_000_001)
    book.observe(2, bytes.fromhex(OTHER), 1, 0.0)
    seen(book, 1, 3, chain=4)
    assert book.missing() == 1_000_000 + 1
    assert [(g.chain, g.emitter, str(g.range)) for g in book.open_gaps()] == [
        (2, EMITTER, "1-1000000"),
        (4, EMITTER, "2"),
    ]
    assert [g.chain for g in book.open_gaps(chain=4)] == [4]


def test_only_holes_past_the_grace_period_are_due_and_failures_wait_to_retry() -> None:
    book = GapBook()
    seen(book, 1)
    seen(book, 5, at=100.0)
    seen(book, 9, at=130.0)
    assert book.due(now=140.0, grace=30.0, retry_after=60.0, limit=100) == [
        (2, EMITTER, 2), (2, EMITTER, 3), (2, EMITTER, 4)
    ]  # fmt: skip
    book.failed((2, EMITTER, 3), "not_found", "not found at a", at=140.0)
    book.failed((2, EMITTER, 3), "error", "a: INTERNAL", at=141.0)
    due = book.due(now=170.0, grace=30.0, retry_after=60.0, limit=100)
    assert (2, EMITTER, 3) not in due
    assert (2, EMITTER, 6) in due
    assert (2, EMITTER, 3) in book.due(now=202.0, grace=30.0, retry_after=60.0, limit=100)
    assert len(book.due(now=500.0, grace=0, retry_after=0, limit=2)) == 2
    listed = book.open_gaps()[0].to_json()
    assert (listed["first"], listed["last"], listed["attempts"]) == (2, 4, 2)
    assert listed["last_error"] == "error: a: INTERNAL"
    seen(book, 3)
    assert book.open_gaps()[0].failures == {}


def test_the_state_survives_a_restart_through_json_per_emitter() -> None:
    book = GapBook()
    seen(book, 1)
    seen(book, 4, at=50.0)
    seen(book, 2, 9)
    book.failed((2, EMITTER, 3), "not_found", "nobody", at=60.0)
    assert book.dirty == {(2, EMITTER)}
    restored = GapBook()
    restored.restore(json.loads(json.dumps(book.emitter_json(2, EMITTER))))
    assert restored.open_gaps() == book.open_gaps()
    seen(restored, 3)
    assert holes(restored) == [(5, 8, 0.0)]
    assert restored.tracks[(2, EMITTER)].contiguous_until == 4


def test_a_broken_state_is_refused() -> None:
    with pytest.raises(ValueError, match="not a gap state"):
        GapBook().restore({"chain": 2, "emitter": EMITTER, "tracker": {"first": None}})
    with pytest.raises(ValueError, match="not a sequence tracker state"):
        SequenceTracker.from_json({"first": None, "lowest": 1, "highest": 9, "seen": 2,
                                   "holes": [[5, 6, 0], [2, 3, 0]]})  # fmt: skip


def test_holes_past_the_bound_are_given_up_lowest_first() -> None:
    book = GapBook(max_gaps=2)
    seen(book, 0, 2, 4, 6)
    assert [first for first, _, _ in holes(book)] == [3, 5]
    assert book.given_up == 1
    assert book.tracks[(2, EMITTER)].contiguous_until == 2
