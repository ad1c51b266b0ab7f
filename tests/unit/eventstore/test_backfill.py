"""The shared gap-filling steps that need no server: capping the sequences looked for."""

from __future__ import annotations

from chainloom.eventstore.backfill import first_sequences
from chainloom.wormhole.sequences import SequenceRange


def test_max_missing_keeps_the_first_sequences() -> None:
    ranges = [SequenceRange(0, 4), SequenceRange(10, 19)]
    assert first_sequences(ranges, 7) == ([SequenceRange(0, 4), SequenceRange(10, 11)], 8)
    assert first_sequences(ranges, 100) == (ranges, 0)
