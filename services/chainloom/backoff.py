"""Exponential backoff with jitter: the one schedule every retry loop in chainloom uses.

Pure (no sleeping, no clock): :meth:`Backoff.delay` says how long to wait before a retry and
the caller decides how to wait (``time.sleep``, an event's ``wait``, a timer, an asyncio
timeout). Attempts count from 0, the wait after the first failure.

With ``jitter`` *j* the wait is drawn uniformly from ``[ceiling * (1 - j), ceiling)``, where
``ceiling = min(maximum, initial * multiplier ** attempt)``: many clients that failed together
do not retry in lock-step, and no wait exceeds ``maximum``.

Settings describe a schedule with :class:`chainloom.settings.BackoffSettings` (services give
their own defaults in subclasses: the spy reconnect, the indexer's store retries, the public
API's rounds, the operator's reconciles) and turn it into this type with ``schedule()``; code
that needs a fixed schedule builds one here. No other backoff type exists.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from chainloom.errors import InvalidBackoffError


@dataclass(frozen=True, slots=True)
class Backoff:
    """An exponential backoff schedule, optionally jittered."""

    initial: float
    """Seconds of the wait before the first retry (``attempt`` 0), before jitter."""
    maximum: float
    """Upper bound of any wait, in seconds; the schedule stays there once it gets there."""
    multiplier: float = 2.0
    """Growth factor of the wait per further failed attempt (2: it doubles)."""
    jitter: float = 0.0
    """Fraction of each wait that is random (0: exact waits, 1: anything from 0 to the wait)."""

    def __post_init__(self) -> None:
        if not 0 <= self.initial <= self.maximum:
            raise InvalidBackoffError(
                f"backoff needs 0 <= initial <= maximum, got initial={self.initial}, "
                f"maximum={self.maximum}"
            )
        if self.multiplier < 1:
            raise InvalidBackoffError(f"backoff multiplier must be >= 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise InvalidBackoffError(f"backoff jitter must be within [0, 1], got {self.jitter}")

    def ceiling(self, attempt: int) -> float:
        """The un-jittered wait before retry ``attempt`` (0-based): the most :meth:`delay` gives."""
        if attempt < 0:
            raise InvalidBackoffError(f"backoff attempt must be >= 0, got {attempt}")
        try:
            grown = self.initial * self.multiplier**attempt
        except OverflowError:  # far past the maximum (a long outage); only 0 stays 0
            return self.maximum if self.initial > 0 else 0.0
        return min(self.maximum, grown)

    def after_failures(self, failures: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after ``failures`` failed attempts so far (1: the first failure),
        as :meth:`delay` of attempt ``failures - 1``; 0 failures wait as one."""
        return self.delay(max(0, failures - 1), rng)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based), jittered with ``rng``.

        ``rng`` may be left out only when ``jitter`` is 0. When given, exactly one number is
        drawn from it whatever the jitter, so a shared (seeded) generator advances the same way.
        """
        ceiling = self.ceiling(attempt)
        if rng is None:
            if self.jitter:
                raise InvalidBackoffError("a jittered backoff needs an rng")
            return ceiling
        return ceiling * (1.0 - self.jitter) + ceiling * self.jitter * rng.random()
