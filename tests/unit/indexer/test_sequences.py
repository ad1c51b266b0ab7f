"""The streaming sequence tracker: contiguous marks, gaps as ranges, grace, restart state."""

from __future__ import annotations

import json

import pytest

from chainloom.indexer.sequences import EmitterTrack, Gap, SequenceTracker

EMITTER = bytes(31) + b"\x01"
OTHER = bytes(31) + b"\x02"


def seen(tracker: SequenceTracker, *sequences: int, at: float = 0.0, chain: int = 2) -> None:
    for sequence in sequences:
        tracker.observe(chain, EMITTER, sequence, at)


def track(tracker: SequenceTracker, chain: int = 2) -> EmitterTrack:
    return tracker.tracks[(chain, EMITTER)]


def test_in_order_sequences_leave_no_gap() -> None:
    tracker = SequenceTracker()
    seen(tracker, 5, 6, 7, 7, 6)
    assert (track(tracker).contiguous, track(tracker).highest) == (7, 7)
    assert list(tracker.gaps()) == []


def test_a_jump_opens_one_range_and_late_arrivals_close_it() -> None:
    tracker = SequenceTracker()
    seen(tracker, 10)
    seen(tracker, 15, at=100.0)
    assert track(tracker).gaps == [Gap(11, 14, 100.0)]
    assert track(tracker).contiguous == 10
    seen(tracker, 12, at=101.0)
    assert track(tracker).gaps == [Gap(11, 11, 100.0), Gap(13, 14, 100.0)]
    seen(tracker, 11)
    assert track(tracker).contiguous == 12
    seen(tracker, 14, 13)
    assert track(tracker).gaps == []
    assert track(tracker).contiguous == 15


def test_a_huge_jump_is_one_range_not_a_million_entries() -> None:
    tracker = SequenceTracker()
    seen(tracker, 0, 1_000_001)
    assert track(tracker).gaps == [Gap(1, 1_000_000, 0.0)]
    assert track(tracker).missing() == 1_000_000


def test_emitters_and_chains_are_tracked_apart() -> None:
    tracker = SequenceTracker()
    seen(tracker, 1, 3)
    tracker.observe(2, OTHER, 1, 0.0)
    seen(tracker, 1, 2, chain=4)
    assert [(key, gap.first) for key, gap in tracker.gaps()] == [((2, EMITTER), 2)]


def test_only_gaps_older_than_the_grace_period_are_overdue() -> None:
    tracker = SequenceTracker()
    seen(tracker, 1)
    seen(tracker, 5, at=100.0)
    seen(tracker, 9, at=130.0)
    assert [gap.first for _, gap in tracker.overdue(now=140.0, grace=30.0)] == [2]
    assert [gap.first for _, gap in tracker.overdue(now=160.0, grace=30.0)] == [2, 6]


def test_the_state_survives_a_restart_through_json() -> None:
    tracker = SequenceTracker()
    seen(tracker, 1)
    seen(tracker, 4, at=50.0)
    seen(tracker, 2, 9)
    restored = SequenceTracker.from_json(json.loads(json.dumps(tracker.to_json())))
    assert restored.tracks == tracker.tracks
    seen(restored, 3)
    assert track(restored).gaps == [Gap(5, 8, 0.0)]
    assert track(restored).contiguous == 4


def test_a_broken_state_is_refused() -> None:
    with pytest.raises(ValueError, match="not a sequence tracker state"):
        SequenceTracker.from_json({"2:zz": {"contiguous": 1}})


def test_gaps_past_the_bound_are_given_up_lowest_first() -> None:
    tracker = SequenceTracker(max_gaps=2)
    seen(tracker, 0, 2, 4, 6)
    assert [gap.first for gap in track(tracker).gaps] == [3, 5]
    assert tracker.given_up == 1
    assert track(tracker).contiguous == 2
