"""The gap finder: ranges of missing sequences, in bulk and as sequences arrive in any order."""

from __future__ import annotations

import random

import pytest

from chainloom.eventstore.errors import MessageKeyError
from chainloom.eventstore.gaps import (
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
