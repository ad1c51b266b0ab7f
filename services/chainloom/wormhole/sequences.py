"""Missing sequences of an emitter: the one gap finder of bulk backfill and live tracking.

Token bridges (and most emitters) publish consecutive sequences, so the messages a store lacks
are the holes between the sequences it holds. The Spark ``gap-backfill`` job feeds a
:class:`SequenceTracker` the sequences of one emitter as a row-key scan yields them (ascending:
each add is O(1)); a streaming indexer feeds it sequences as they arrive, in any order (a late
one that fills a hole is an O(log n) split of one range). Either way the result is the same
list of :class:`SequenceRange`, which stays small even when millions of sequences are stored.

What lies *beyond* the highest stored sequence is not a gap the store can see: without a
``last`` bound the tail is unknown and not reported (the caller that knows an emitter's
latest sequence passes it).

Streaming use adds two things, both here so there is one tracker:

* each hole remembers when it was first noticed (the ``at`` of the :meth:`SequenceTracker.add`
  that opened it), so a caller fetches only holes older than a grace period: VAAs arrive out
  of order by seconds, and a hole that closes by itself must not be fetched;
* :class:`GapBook` keeps one tracker per ``(chain, emitter)`` plus the fetches that failed
  (attempts, status, last error), bounds the holes per emitter (past ``max_gaps`` the lowest
  is given up and counted), and round-trips as JSON per emitter, so whoever persists it (the
  indexer's ``gaps:`` rows in the index table) restores it after a restart. It is the
  indexer's :class:`~chainloom.indexer.pipeline.SequenceObserver` and the relayer's tracker
  of the emitters it relays for. In streaming use the first sequence seen of an emitter
  starts its track: what came before belongs to the batch finder, which scans the store.

Pure: no I/O, no client, no clock; :mod:`chainloom.eventstore.backfill` reads the sequences,
the indexer and the relayer's recovery feed it from the spy stream.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chainloom.wormhole.errors import MessageKeyError

MAX_SEQUENCE = 2**64 - 1
"""The highest sequence a Wormhole message can carry (a uint64)."""


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
        if not _ascii_decimal(first) or (dash and not _ascii_decimal(last)):
            raise MessageKeyError(text, "expected SEQUENCE or FIRST-LAST")
        return cls(int(first), int(last or first))


class SequenceTracker:
    """The sequences seen of one emitter, as the lowest, the highest and the holes between.

    ``first`` (optional) is where the emitter's sequences are known to start (0 for a bridge
    observed since its deployment): sequences below the lowest one seen are then holes too.
    Sequences outside ``first..last`` given to :meth:`missing` are ignored by it; :meth:`add`
    records any sequence. Each hole keeps the ``at`` of the :meth:`add` that opened it
    (:meth:`holes`); a hole split by a late arrival keeps it.
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
        self._noticed: list[float] = []  # when each hole was opened

    @classmethod
    def expecting(cls, next_sequence: int) -> SequenceTracker:
        """A tracker that counts every sequence below ``next_sequence`` as seen: the first
        one added above it opens the hole ``next_sequence..`` (a configured starting point).
        Its ``highest`` is ``next_sequence - 1`` until a sequence is added."""
        tracker = cls(next_sequence)
        tracker.lowest = next_sequence
        tracker.highest = next_sequence - 1
        return tracker

    def add(self, sequence: int, at: float = 0.0) -> bool:
        """Record ``sequence`` (seen at time ``at``); False if it was already seen."""
        if self.lowest is None or self.highest is None:
            self.lowest = self.highest = sequence
        elif sequence == self.highest + 1:
            self.highest = sequence
        elif sequence > self.highest:
            self._holes.append(SequenceRange(self.highest + 1, sequence - 1))
            self._starts.append(self.highest + 1)
            self._noticed.append(at)
            self.highest = sequence
        elif sequence < self.lowest:
            if sequence < self.lowest - 1:
                self._holes.insert(0, SequenceRange(sequence + 1, self.lowest - 1))
                self._starts.insert(0, sequence + 1)
                self._noticed.insert(0, at)
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
        self._noticed[position : position + 1] = [self._noticed[position]] * len(pieces)
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

    @property
    def hole_count(self) -> int:
        """How many holes (ranges) lie between the lowest and the highest seen."""
        return len(self._holes)

    def holes(self) -> list[tuple[SequenceRange, float]]:
        """The holes between the lowest and the highest seen, ascending, each with the time
        it was noticed."""
        return list(zip(self._holes, self._noticed, strict=True))

    def give_up_lowest(self) -> SequenceRange:
        """Forget the lowest hole (as if its sequences were seen); returns it."""
        hole = self._holes.pop(0)
        del self._starts[0], self._noticed[0]
        return hole

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

    def to_json(self) -> dict[str, Any]:
        """The tracker as JSON-ready data (:meth:`from_json` restores it)."""
        return {
            "first": self.first,
            "lowest": self.lowest,
            "highest": self.highest,
            "seen": self.seen,
            "holes": [
                [h.first, h.last, at] for h, at in zip(self._holes, self._noticed, strict=True)
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SequenceTracker:
        """A tracker restored from :meth:`to_json` (ValueError when it is not such data)."""
        try:
            tracker = cls(None if data["first"] is None else int(data["first"]))
            for name in ("lowest", "highest"):
                setattr(tracker, name, None if data[name] is None else int(data[name]))
            tracker.seen = int(data["seen"])
            for first, last, at in data["holes"]:
                tracker._holes.append(SequenceRange(int(first), int(last)))
                tracker._starts.append(int(first))
                tracker._noticed.append(float(at))
        except (KeyError, TypeError, ValueError, MessageKeyError) as error:
            raise ValueError(f"not a sequence tracker state: {error}") from None
        if tracker._starts != sorted(tracker._starts):
            raise ValueError("not a sequence tracker state: holes out of order")
        return tracker


EmitterRef = tuple[int, str]
"""``(Wormhole chain id, emitter address as 64 lower-case hex)``."""


@dataclass(slots=True)
class FetchFailure:
    """Why one missing sequence could not be fetched yet."""

    status: str
    """``not_found`` (every endpoint said so) or ``error`` (some never answered)."""
    reason: str
    """The endpoints' last answers, one line."""
    attempts: int
    """Fetches tried so far."""
    last_try: float
    """Wall-clock time (seconds) of the last try."""


@dataclass(frozen=True, slots=True)
class OpenGap:
    """One hole of one emitter as listed to people (``chainloom events gaps``)."""

    chain: int
    """Emitter chain."""
    emitter: str
    """Emitter address, 64 lower-case hex."""
    range: SequenceRange
    """The missing sequences."""
    noticed: float
    """Wall-clock time it was noticed (0 when found by a scan of the store)."""
    failures: dict[int, FetchFailure] = field(default_factory=dict)
    """Sequences of the range whose fetch failed, with the last reason."""

    def to_json(self) -> dict[str, Any]:
        """The JSON of ``events gaps --json``."""
        attempts = max((f.attempts for f in self.failures.values()), default=0)
        last = max(self.failures.items(), key=lambda item: item[1].last_try, default=None)
        return {
            "chain": self.chain,
            "emitter": self.emitter,
            "first": self.range.first,
            "last": self.range.last,
            "count": self.range.count,
            "noticed": self.noticed,
            "attempts": attempts,
            "last_error": None if last is None else f"{last[1].status}: {last[1].reason}",
            "failures": [
                {
                    "sequence": sequence,
                    "status": f.status,
                    "reason": f.reason,
                    "attempts": f.attempts,
                    "last_try": f.last_try,
                }
                for sequence, f in sorted(self.failures.items())
            ],
        }


class GapBook:
    """Holes of every emitter it hears of, and the fetches that failed (see the module doc)."""

    def __init__(self, max_gaps: int = 10_000) -> None:
        if max_gaps < 1:
            raise ValueError(f"max_gaps must be at least 1, got {max_gaps}")
        self.max_gaps = max_gaps
        """Most holes kept per emitter; past it the lowest is given up."""
        self.tracks: dict[EmitterRef, SequenceTracker] = {}
        """The tracker of each emitter seen."""
        self.failures: dict[EmitterRef, dict[int, FetchFailure]] = {}
        """Failed fetches by emitter and sequence (dropped once the sequence is seen)."""
        self.given_up = 0
        """Holes dropped because an emitter had more than ``max_gaps``."""
        self.dirty: set[EmitterRef] = set()
        """Emitters changed since :meth:`clean` (what a persister writes)."""

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        """``(chain, emitter, sequence)`` was seen (the pipeline's SequenceObserver hook)."""
        self.see(chain, emitter.hex(), sequence, at)

    def see(self, chain: int, emitter: str, sequence: int, at: float) -> bool:
        """Record one sequence of ``emitter`` (64 hex); True if it was not seen before."""
        key = (chain, emitter)
        tracker = self.tracks.get(key)
        if tracker is None:
            tracker = self.tracks[key] = SequenceTracker()
        if not tracker.add(sequence, at):
            return False
        self.dirty.add(key)
        failures = self.failures.get(key)
        if failures is not None:
            failures.pop(sequence, None)
        while tracker.hole_count > self.max_gaps:
            hole = tracker.give_up_lowest()
            self.given_up += 1
            if failures:
                for gone in [s for s in failures if s in hole]:
                    del failures[gone]
        return True

    def clean(self) -> None:
        """Forget which emitters changed (after they were persisted)."""
        self.dirty.clear()

    def missing(self) -> int:
        """Sequences missing over every emitter."""
        return sum(hole.count for t in self.tracks.values() for hole, _ in t.holes())

    def open_gaps(self, chain: int | None = None, emitter: str | None = None) -> list[OpenGap]:
        """Every hole, emitter by emitter, lowest first (optionally of one chain or emitter)."""
        gaps = []
        for (c, e), tracker in sorted(self.tracks.items()):
            if (chain is not None and c != chain) or (emitter is not None and e != emitter):
                continue
            failures = self.failures.get((c, e), {})
            for hole, noticed in tracker.holes():
                mine = {s: f for s, f in failures.items() if s in hole}
                gaps.append(OpenGap(c, e, hole, noticed, mine))
        return gaps

    def due(
        self, now: float, grace: float, retry_after: float, limit: int
    ) -> list[tuple[int, str, int]]:
        """Up to ``limit`` sequences to fetch now: of holes noticed at least ``grace`` seconds
        before ``now``, skipping those whose last failed try is under ``retry_after`` old."""
        due: list[tuple[int, str, int]] = []
        for (chain, emitter), tracker in self.tracks.items():
            failures = self.failures.get((chain, emitter), {})
            for hole, noticed in tracker.holes():
                if now - noticed < grace:
                    continue
                for sequence in hole:
                    failure = failures.get(sequence)
                    if failure is not None and now - failure.last_try < retry_after:
                        continue
                    due.append((chain, emitter, sequence))
                    if len(due) >= limit:
                        return due
        return due

    def failed(self, message: tuple[int, str, int], status: str, reason: str, at: float) -> None:
        """A fetch of missing ``(chain, emitter, sequence)`` found nothing (``status``,
        ``reason``) at ``at``."""
        chain, emitter, sequence = message
        tracker = self.tracks.get((chain, emitter))
        if tracker is None or not any(sequence in hole for hole, _ in tracker.holes()):
            return
        failures = self.failures.setdefault((chain, emitter), {})
        previous = failures.get(sequence)
        attempts = 1 if previous is None else previous.attempts + 1
        failures[sequence] = FetchFailure(status, reason, attempts, at)
        self.dirty.add((chain, emitter))

    def emitter_json(self, chain: int, emitter: str) -> dict[str, Any]:
        """One emitter's state as JSON-ready data (:meth:`restore` reads it back)."""
        failures = self.failures.get((chain, emitter), {})
        return {
            "chain": chain,
            "emitter": emitter,
            "tracker": self.tracks[(chain, emitter)].to_json(),
            "failures": [
                [s, f.status, f.reason, f.attempts, f.last_try] for s, f in sorted(failures.items())
            ],
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Load one emitter's state saved by :meth:`emitter_json` (ValueError when broken)."""
        try:
            key = (int(data["chain"]), str(data["emitter"]))
            tracker = SequenceTracker.from_json(data["tracker"])
            failures = {
                int(s): FetchFailure(str(status), str(reason), int(attempts), float(at))
                for s, status, reason, attempts, at in data["failures"]
            }
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a gap state: {error}") from None
        self.tracks[key] = tracker
        if failures:
            self.failures[key] = failures
        else:
            self.failures.pop(key, None)


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


def _ascii_decimal(text: str) -> bool:
    return text.isascii() and text.isdigit()
