"""The shared backoff schedule: growth, cap, jitter bounds, determinism and refusals."""

from __future__ import annotations

import random

import pytest

from chainloom.backoff import Backoff
from chainloom.errors import ChainloomError, InvalidBackoffError


def test_without_jitter_the_delay_doubles_from_initial_up_to_the_maximum():
    backoff = Backoff(initial=0.1, maximum=5.0)
    assert [backoff.delay(n) for n in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_the_schedule_equals_repeated_doubling_exactly():
    backoff = Backoff(initial=0.2, maximum=5.0)
    delay = 0.2
    for attempt in range(40):
        assert backoff.delay(attempt) == delay
        delay = min(delay * 2, 5.0)


def test_a_custom_multiplier_grows_by_that_factor():
    backoff = Backoff(initial=1.0, maximum=100.0, multiplier=3.0)
    assert [backoff.ceiling(n) for n in range(5)] == [1.0, 3.0, 9.0, 27.0, 81.0]
    assert backoff.ceiling(5) == 100.0


def test_jittered_delays_stay_within_the_jitter_band_below_the_ceiling():
    backoff = Backoff(initial=1.0, maximum=20.0, jitter=0.5)
    rng = random.Random(7)
    for attempt, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (5, 20.0)]:
        samples = [backoff.delay(attempt, rng) for _ in range(200)]
        assert min(samples) >= ceiling * 0.5
        assert max(samples) <= ceiling
        assert max(samples) - min(samples) > ceiling * 0.3  # really jittered


def test_full_jitter_may_wait_anything_from_zero_to_the_ceiling():
    backoff = Backoff(initial=4.0, maximum=4.0, jitter=1.0)
    samples = [backoff.delay(0, random.Random(seed)) for seed in range(200)]
    assert all(0.0 <= s <= 4.0 for s in samples)
    assert min(samples) < 0.5
    assert max(samples) > 3.5


def test_a_seeded_rng_gives_the_same_delays_and_one_draw_per_delay():
    backoff = Backoff(initial=1.0, maximum=60.0, jitter=0.5)
    first = [backoff.delay(n, random.Random(3)) for n in range(6)]
    assert first == [backoff.delay(n, random.Random(3)) for n in range(6)]
    rng, twin = random.Random(11), random.Random(11)
    value = backoff.delay(2, rng)
    assert value == 4.0 * 0.5 + 4.0 * 0.5 * twin.random()
    assert rng.random() == twin.random()


def test_without_jitter_an_rng_is_still_advanced_by_one_draw():
    rng, twin = random.Random(5), random.Random(5)
    assert Backoff(initial=0.5, maximum=100.0).delay(2, rng) == 2.0
    twin.random()
    assert rng.random() == twin.random()


def test_huge_attempt_numbers_stay_at_the_maximum_instead_of_overflowing():
    assert Backoff(initial=0.1, maximum=5.0).delay(10_000) == 5.0
    assert Backoff(initial=0.0, maximum=0.0).delay(10_000) == 0.0


def test_a_zero_schedule_never_waits():
    backoff = Backoff(initial=0.0, maximum=0.0, jitter=0.5)
    assert [backoff.delay(n, random.Random(1)) for n in range(5)] == [0.0] * 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"initial": -1.0, "maximum": 1.0}, "0 <= initial <= maximum"),
        ({"initial": 2.0, "maximum": 1.0}, "initial=2.0, maximum=1.0"),
        ({"initial": 1.0, "maximum": 2.0, "multiplier": 0.5}, "multiplier must be >= 1"),
        ({"initial": 1.0, "maximum": 2.0, "jitter": 1.5}, r"jitter must be within \[0, 1\]"),
        ({"initial": 1.0, "maximum": 2.0, "jitter": -0.1}, r"jitter must be within \[0, 1\]"),
    ],
)
def test_impossible_settings_are_refused_with_the_reason(kwargs, message):
    with pytest.raises(InvalidBackoffError, match=message) as caught:
        Backoff(**kwargs)
    assert isinstance(caught.value, ChainloomError)
    assert isinstance(caught.value, ValueError)


def test_a_negative_attempt_is_refused():
    with pytest.raises(InvalidBackoffError, match="attempt must be >= 0, got -1"):
        Backoff(initial=1.0, maximum=2.0).delay(-1)


def test_a_jittered_delay_without_an_rng_is_refused():
    with pytest.raises(InvalidBackoffError, match="needs an rng"):
        Backoff(initial=1.0, maximum=2.0, jitter=0.5).delay(0)


def test_after_failures_counts_the_first_failure_as_attempt_zero():
    backoff = Backoff(initial=0.5, maximum=100.0)
    assert [backoff.after_failures(n) for n in (0, 1, 2, 3)] == [0.5, 0.5, 1.0, 2.0]
