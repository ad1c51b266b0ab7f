"""Missing sequences of an emitter: the gap finder shared by bulk backfill and live tracking.

Token bridges (and most emitters) publish consecutive sequences, so the messages a store lacks
are the holes between the sequences it holds. The Spark ``gap-backfill`` job feeds a
:class:`SequenceTracker` the sequences of one emitter as a row-key scan yields them (ascending:
each add is O(1)); a streaming indexer feeds it sequences as they arrive, in any order (a late
one that fills a hole is an O(log n) split of one range). Either way the result is the same
list of :class:`SequenceRange`, which stays small even when millions of sequences are stored.

What lies *beyond* the highest stored sequence is not a gap the store can see: without a
``last`` bound the tail is unknown and not reported (the caller that knows an emitter's
latest sequence passes it).

Pure: no I/O, no client; :mod:`chainloom.eventstore.backfill` reads the sequences.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from chainloom.eventstore.errors import MessageKeyError
from chainloom.eventstore.keys import MAX_SEQUENCE


@dataclass(frozen=True, slots=True, order=True)
class SequenceRange:
    """The sequences ``first..last`` of one emitter, both included."""

    first: int
    """The lowest sequence of the range."""
    last: int
    """The highest sequence of the range (``>= first``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.first <= self.last <= MAX_SEQUENCE:
            raise MessageKeyError(
                f"{self.first}-{self.last}", "a sequence range needs 0 <= first <= last <= 2**64-1"
            )

    @property
    def count(self) -> int:
        """How many sequences the range holds."""
        return self.last - self.first + 1

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.first, self.last + 1))

    def __contains__(self, sequence: object) -> bool:
        return isinstance(sequence, int) and self.first <= sequence <= self.last

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"

    def chunks(self, size: int) -> Iterator[SequenceRange]:
        """The range cut into consecutive ranges of at most ``size`` sequences."""
        start = self.first
        while start <= self.last:
            end = min(start + size - 1, self.last)
            yield SequenceRange(start, end)
            start = end + 1

    @classmethod
    def parse(cls, text: str) -> SequenceRange:
        """``N`` or ``FIRST-LAST`` (decimal)."""
        first, dash, last = text.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise MessageKeyError(text, "expected SEQUENCE or FIRST-LAST")
        return cls(int(first), int(last or first))


class SequenceTracker:
    """The sequences seen of one emitter, as the lowest, the highest and the holes between.

    ``first`` (optional) is where the emitter's sequences are known to start (0 for a bridge
    observed since its deployment): sequences below the lowest one seen are then holes too.
    Sequences outside ``first..last`` given to :meth:`missing` are ignored by it; :meth:`add`
    records any sequence.
    """

    def __init__(self, first: int | None = None) -> None:
        self.first = first
        """The lowest sequence the emitter is known to have (None: the lowest seen)."""
        self.lowest: int | None = None
        """The lowest sequence seen (None before the first)."""
        self.highest: int | None = None
        """The highest sequence seen (None before the first)."""
        self.seen = 0
        """Distinct sequences seen."""
        self._holes: list[SequenceRange] = []  # between lowest and highest, ascending, disjoint
        self._starts: list[int] = []  # first of each hole, for bisect

    def add(self, sequence: int) -> bool:
        """Record ``sequence``; False if it was already seen."""
        if self.lowest is None or self.highest is None:
            self.lowest = self.highest = sequence
        elif sequence == self.highest + 1:
            self.highest = sequence
        elif sequence > self.highest:
            self._holes.append(SequenceRange(self.highest + 1, sequence - 1))
            self._starts.append(self.highest + 1)
            self.highest = sequence
        elif sequence < self.lowest:
            if sequence < self.lowest - 1:
                self._holes.insert(0, SequenceRange(sequence + 1, self.lowest - 1))
                self._starts.insert(0, sequence + 1)
            self.lowest = sequence
        elif not self._fill(sequence):
            return False
        self.seen += 1
        return True

    def _fill(self, sequence: int) -> bool:
        """Remove ``sequence`` from the hole holding it; False if no hole holds it."""
        position = bisect.bisect_right(self._starts, sequence) - 1
        if position < 0 or sequence not in self._holes[position]:
            return False
        hole = self._holes[position]
        pieces = []
        if hole.first < sequence:
            pieces.append(SequenceRange(hole.first, sequence - 1))
        if sequence < hole.last:
            pieces.append(SequenceRange(sequence + 1, hole.last))
        self._holes[position : position + 1] = pieces
        self._starts[position : position + 1] = [piece.first for piece in pieces]
        return True

    def add_all(self, sequences: Iterable[int]) -> None:
        """Record every sequence of ``sequences``."""
        for sequence in sequences:
            self.add(sequence)

    @property
    def contiguous_until(self) -> int | None:
        """The highest sequence up to which nothing is missing (from ``first`` or the lowest
        seen); None when not even the first one is there."""
        if self.lowest is None or (self.first is not None and self.lowest > self.first):
            return None
        return self._holes[0].first - 1 if self._holes else self.highest

    def missing(self, last: int | None = None) -> list[SequenceRange]:
        """The holes, ascending, within ``first..last``.

        ``last`` (optional) is the highest sequence the emitter is known to have reached: the
        sequences after the highest seen up to it are missing too. Without it the tail is
        unknown. With nothing seen, the holes are ``first..last`` when both are known.
        """
        low = self.first
        if self.lowest is None or self.highest is None:
            if low is None or last is None or low > last:
                return []
            return [SequenceRange(low, last)]
        ranges = list(self._holes)
        if low is not None and low < self.lowest:
            ranges.insert(0, SequenceRange(low, self.lowest - 1))
        if last is not None and last > self.highest:
            ranges.append(SequenceRange(self.highest + 1, last))
        return clip(ranges, low, last)

    def missing_count(self, last: int | None = None) -> int:
        """How many sequences :meth:`missing` names."""
        return sum(hole.count for hole in self.missing(last))


def clip(
    ranges: Iterable[SequenceRange], first: int | None, last: int | None
) -> list[SequenceRange]:
    """The parts of ``ranges`` inside ``first..last`` (None: unbounded on that side)."""
    low = 0 if first is None else first
    high = MAX_SEQUENCE if last is None else last
    clipped = []
    for item in ranges:
        start, end = max(item.first, low), min(item.last, high)
        if start <= end:
            clipped.append(SequenceRange(start, end))
    return clipped


def find_missing(
    present: Iterable[int], *, first: int | None = None, last: int | None = None
) -> list[SequenceRange]:
    """The sequences missing from ``present`` (any order, repeats allowed) as ranges.

    Bounded by ``first`` and ``last`` when given; otherwise from the lowest to the highest
    present sequence (what lies outside is not knowable from ``present``).
    """
    tracker = SequenceTracker(first)
    tracker.add_all(present)
    return tracker.missing(last)


def merge_ranges(sequences: Iterable[int]) -> list[SequenceRange]:
    """Sequences (any order, repeats allowed) as the fewest ascending ranges."""
    ranges: list[SequenceRange] = []
    start = previous = None
    for sequence in sorted(set(sequences)):
        if previous is not None and start is not None and sequence == previous + 1:
            previous = sequence
            continue
        if start is not None and previous is not None:
            ranges.append(SequenceRange(start, previous))
        start = previous = sequence
    if start is not None and previous is not None:
        ranges.append(SequenceRange(start, previous))
    return ranges
