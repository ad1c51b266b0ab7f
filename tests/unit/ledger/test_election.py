"""The standby's takeover decision and the writer's next role, as plain data."""

from __future__ import annotations

import pytest

from chainloom.ledger.election import Role, StallWatch, after_run


def test_an_empty_store_is_taken_over_at_once() -> None:
    decision = StallWatch(10.0).observe(0.0, None, 5)
    assert decision.take_over
    assert "empty" in decision.reason


def test_a_stalled_range_with_the_source_ahead_is_taken_over_after_the_fallback() -> None:
    watch = StallWatch(10.0)
    assert not watch.observe(0.0, 100, 101).take_over
    assert not watch.observe(9.9, 100, 102).take_over
    decision = watch.observe(10.0, 100, 102)
    assert decision.take_over
    assert decision.reason == "ledger range stuck at 100 for 10.0s while the source has 102"


def test_an_advancing_range_restarts_the_clock() -> None:
    watch = StallWatch(10.0)
    watch.observe(0.0, 100, 101)
    watch.observe(9.0, 101, 102)  # the writer committed: a new wait starts here
    assert not watch.observe(18.9, 101, 102).take_over
    assert watch.observe(19.0, 101, 102).take_over


def test_an_idle_writer_is_not_taken_over() -> None:
    """The range stands still because the source has nothing new: no work waits."""
    watch = StallWatch(10.0)
    for now in (0.0, 50.0, 100.0):
        decision = watch.observe(now, 100, 100)
        assert not decision.take_over
        assert decision.reason == "writer is current at ledger 100"
    # Work appears: the clock starts then, not at the first look.
    assert not watch.observe(100.0, 100, 101).take_over
    assert not watch.observe(105.0, 100, 101).take_over
    assert watch.observe(110.0, 100, 101).take_over


def test_an_unknown_source_never_triggers_a_takeover() -> None:
    watch = StallWatch(1.0)
    assert not watch.observe(0.0, 100, None).take_over
    assert not watch.observe(1000.0, 100, None).take_over


def test_the_fallback_must_be_positive() -> None:
    with pytest.raises(ValueError, match="fallback_seconds must be > 0, got 0"):
        StallWatch(0.0)


@pytest.mark.parametrize(
    ("stopped_because", "role"),
    [
        ("write conflict: another writer advanced the range to 7 while this one wrote ledger 7",
         Role.STANDBY),
        ("reached stop", None),
        ("source exhausted", None),
        ("stopped", None),
    ],
)  # fmt: skip
def test_after_a_run_only_a_lost_fence_means_standing_by(
    stopped_because: str, role: Role | None
) -> None:
    assert after_run(stopped_because) is role
