"""Per emitter, the highest contiguous sequence and the open gaps: the streaming side of gap
detection.

Why ranges, first-seen times and a JSON state:

* Every Wormhole emitter numbers its messages 0, 1, 2, ... A spy drops messages (it is
  at-most-once), so a sequence that never arrives is a message the store lacks. The tracker
  keeps, for each ``(chain, emitter)``, the highest sequence below which everything was seen,
  the highest seen, and the missing ones between them as inclusive ranges: a jump of a
  million sequences is one range, not a million entries.
* Each gap remembers when it was first noticed, so a caller fetches only gaps older than a
  grace period (:meth:`SequenceTracker.overdue`): VAAs arrive out of order by seconds, and a
  gap that closes by itself must not be fetched.
* The tracker knows nothing of where its state is kept. :meth:`SequenceTracker.to_json` and
  :meth:`SequenceTracker.from_json` round-trip it as plain data, so whoever persists it
  (a state row in the store, a file) restores it after a restart and the gaps noticed
  before the restart stay open.

The tracker is pure (no clock of its own, no I/O) and implements the pipeline's
:class:`~chainloom.indexer.pipeline.SequenceObserver`: pass one to the indexer's observers and
it hears of every VAA once stored. The first sequence seen of an emitter starts its track: what
came before belongs to the batch gap finder, which scans the store. Memory is bounded by
``max_gaps`` per emitter; past it the lowest gap is given up (counted in ``given_up``) and the
contiguous mark moves past it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

EmitterId = tuple[int, bytes]
"""``(Wormhole chain id, 32-byte emitter address)``."""


@dataclass(frozen=True, slots=True)
class Gap:
    """Missing sequences ``first..last`` (inclusive) of one emitter."""

    first: int
    """The lowest missing sequence."""
    last: int
    """The highest missing sequence (``>= first``)."""
    noticed: float
    """Wall-clock time (seconds) the gap was first noticed."""

    @property
    def size(self) -> int:
        """How many sequences are missing."""
        return self.last - self.first + 1


@dataclass(slots=True)
class EmitterTrack:
    """What was seen of one emitter."""

    contiguous: int
    """Every sequence from the start of the track up to this one was seen."""
    highest: int
    """The highest sequence seen."""
    gaps: list[Gap] = field(default_factory=list)
    """The missing ranges between ``contiguous`` and ``highest``, in order."""

    def observe(self, sequence: int, at: float, max_gaps: int) -> int:
        """Record ``sequence`` seen at ``at``; returns how many gaps were given up."""
        if sequence <= self.contiguous or sequence == self.highest:
            return 0
        if sequence > self.highest:
            if sequence > self.highest + 1:
                self.gaps.append(Gap(self.highest + 1, sequence - 1, at))
            self.highest = sequence
        else:
            self._fill(sequence)
        given_up = 0
        while len(self.gaps) > max_gaps:
            self.gaps.pop(0)
            given_up += 1
        self.contiguous = self.gaps[0].first - 1 if self.gaps else self.highest
        return given_up

    def _fill(self, sequence: int) -> None:
        """Remove ``sequence`` from the gap holding it (if any)."""
        index = bisect.bisect_right([gap.first for gap in self.gaps], sequence) - 1
        if index < 0:
            return
        gap = self.gaps[index]
        if sequence > gap.last:
            return  # already seen
        pieces = [
            Gap(gap.first, sequence - 1, gap.noticed) if sequence > gap.first else None,
            Gap(sequence + 1, gap.last, gap.noticed) if sequence < gap.last else None,
        ]
        self.gaps[index : index + 1] = [piece for piece in pieces if piece is not None]

    def missing(self) -> int:
        """How many sequences are missing."""
        return sum(gap.size for gap in self.gaps)


class SequenceTracker:
    """Tracks every emitter it hears of (a :class:`SequenceObserver` of the pipeline)."""

    def __init__(self, max_gaps: int = 10_000) -> None:
        if max_gaps < 1:
            raise ValueError(f"max_gaps must be at least 1, got {max_gaps}")
        self.max_gaps = max_gaps
        """Most open gaps kept per emitter."""
        self.tracks: dict[EmitterId, EmitterTrack] = {}
        """The track of each emitter seen."""
        self.given_up = 0
        """Gaps dropped because an emitter had more than ``max_gaps``."""

    def observe(self, chain: int, emitter: bytes, sequence: int, at: float) -> None:
        """``(chain, emitter, sequence)`` is stored (the pipeline calls this)."""
        key = (chain, emitter)
        track = self.tracks.get(key)
        if track is None:
            self.tracks[key] = EmitterTrack(contiguous=sequence, highest=sequence)
            return
        self.given_up += track.observe(sequence, at, self.max_gaps)

    def gaps(self) -> Iterator[tuple[EmitterId, Gap]]:
        """Every open gap, emitter by emitter, lowest first."""
        for key, track in self.tracks.items():
            for gap in track.gaps:
                yield key, gap

    def overdue(self, now: float, grace: float) -> list[tuple[EmitterId, Gap]]:
        """The gaps noticed at least ``grace`` seconds before ``now``: the ones to fetch."""
        return [(key, gap) for key, gap in self.gaps() if now - gap.noticed >= grace]

    def to_json(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (keys ``"<chain>:<emitter hex>"``)."""
        return {
            f"{chain}:{emitter.hex()}": {
                "contiguous": track.contiguous,
                "highest": track.highest,
                "gaps": [[gap.first, gap.last, gap.noticed] for gap in track.gaps],
            }
            for (chain, emitter), track in self.tracks.items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], max_gaps: int = 10_000) -> SequenceTracker:
        """A tracker restored from :meth:`to_json` (ValueError when it is not such data)."""
        tracker = cls(max_gaps)
        try:
            for key, value in data.items():
                chain_text, _, emitter_hex = key.partition(":")
                emitter = bytes.fromhex(emitter_hex)
                gaps = [Gap(int(first), int(last), float(at)) for first, last, at in value["gaps"]]
                tracker.tracks[(int(chain_text), emitter)] = EmitterTrack(
                    contiguous=int(value["contiguous"]), highest=int(value["highest"]), gaps=gaps
                )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a sequence tracker state: {error}") from None
        return tracker
