"""The relay request and the pure rules that move it (retry, backoff, rollback, Failed)."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from chainloom.backoff import Backoff
from chainloom.relayer.errors import RequestFormatError
from chainloom.relayer.model import (
    RelayRequest,
    RetryPolicy,
    Table,
    after_failure,
    after_rollback,
    after_submission,
    for_retry_from_failed,
    validate_digest,
)

DIGEST = "0x" + "1f" * 32


def request(**changes: object) -> RelayRequest:
    fields: dict[str, object] = {
        "digest": DIGEST,
        "vaa": b"\x01signed vaa bytes\xff",
        "target_chain": 2,
        "emitter_chain": 6,
        "sequence": 77,
        "enqueued_at": 1_700_000_000.25,
    }
    fields.update(changes)
    return RelayRequest(**fields)  # type: ignore[arg-type]


def test_json_round_trip_is_exact_and_keeps_every_field():
    original = request(
        retries=3,
        next_attempt_at=1_700_000_123.5,
        last_error="SubmitError: nonce too low",
        submission_id="0xabc",
        submitted_by="2:0x00",
        rollbacks=1,
    )
    assert RelayRequest.from_json(original.to_json()) == original
    assert RelayRequest.from_json(original.to_json().encode()) == original


def test_stored_form_is_versioned_and_carries_the_vaa_as_base64():
    data = json.loads(request().to_json())
    assert data["v"] == 1
    assert data["vaa"] == "AXNpZ25lZCB2YWEgYnl0ZXP/"


@pytest.mark.parametrize(
    "digest",
    ["", "0x" + "1f" * 31, "1f" * 33, "0x" + "1F" * 32, "0x" + "zz" * 32, "0x" + "1f" * 32 + "00"],
)
def test_bad_digests_are_refused_with_the_value(digest):
    with pytest.raises(RequestFormatError, match="digest must be"):
        validate_digest(digest)
    with pytest.raises(RequestFormatError):
        request(digest=digest)


@pytest.mark.parametrize("name", ["target_chain", "emitter_chain", "sequence", "retries"])
def test_negative_or_boolean_numbers_are_refused(name):
    with pytest.raises(RequestFormatError, match=name):
        request(**{name: -1})
    with pytest.raises(RequestFormatError, match=name):
        request(**{name: True})


def test_empty_vaa_is_refused():
    with pytest.raises(RequestFormatError, match="vaa"):
        request(vaa=b"")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("sequence"), "lacks field 'sequence'"),
        (lambda d: d.update(v=2), "format version 2"),
        (lambda d: d.update(vaa="not base64!"), "not base64"),
        (lambda d: d.update(retries="3"), "retries must be a non-negative integer"),
        (lambda d: d.update(enqueued_at="soon"), "field 'enqueued_at' has the wrong type"),
        (lambda d: d.update(next_attempt_at=None), "wrong type"),
        (lambda d: d.update(last_error=5), "'last_error' must be a string"),
    ],
)
def test_malformed_stored_requests_name_the_field(mutate, message):
    data = json.loads(request().to_json())
    mutate(data)
    with pytest.raises(RequestFormatError, match=message):
        RelayRequest.from_json(json.dumps(data))


def test_non_json_is_refused():
    with pytest.raises(RequestFormatError, match="not JSON"):
        RelayRequest.from_json("{nope")
    with pytest.raises(RequestFormatError, match="not a JSON object"):
        RelayRequest.from_json("[1]")


def test_ready_at_is_the_enqueue_time_until_a_backoff_sets_a_later_one():
    fresh = request()
    assert fresh.ready_at == fresh.enqueued_at
    assert request(next_attempt_at=1_800_000_000.0).ready_at == 1_800_000_000.0


def test_backoff_doubles_and_stays_within_jitter_bounds_and_the_cap():
    policy = RetryPolicy(schedule=Backoff(initial=1.0, maximum=20.0, jitter=0.5))
    rng = random.Random(7)
    for retries, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 16.0), (6, 20.0)]:
        samples = [policy.schedule.after_failures(retries, rng) for _ in range(200)]
        assert min(samples) >= ceiling * 0.5
        assert max(samples) <= ceiling
        assert max(samples) - min(samples) > ceiling * 0.3  # really jittered


def test_backoff_without_jitter_is_exact():
    policy = RetryPolicy(schedule=Backoff(initial=0.5, maximum=100.0))
    assert [policy.schedule.after_failures(n, random.Random(1)) for n in (1, 2, 3)] == [
        0.5,
        1.0,
        2.0,
    ]


def test_backoff_grows_by_the_configured_multiplier():
    policy = RetryPolicy(schedule=Backoff(initial=0.5, maximum=100.0, multiplier=3.0))
    assert [policy.schedule.after_failures(n, random.Random(1)) for n in (1, 2, 3)] == [
        0.5,
        1.5,
        4.5,
    ]


def test_a_negative_retry_count_is_refused():
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)


def test_failures_retry_with_backoff_until_max_retries_then_failed():
    policy = RetryPolicy(max_retries=2, schedule=Backoff(initial=10.0, maximum=3600.0))
    rng = random.Random(0)
    current = request(submission_id=None)
    first = after_failure(current, "boom 1", now=1000.0, policy=policy, rng=rng)
    assert first.destination is Table.INCOMING
    assert first.request.retries == 1
    assert first.request.next_attempt_at == 1010.0
    assert first.request.last_error == "boom 1"
    second = after_failure(first.request, "boom 2", now=2000.0, policy=policy, rng=rng)
    assert second.destination is Table.INCOMING
    assert second.request.next_attempt_at == 2020.0
    third = after_failure(second.request, "boom 3", now=3000.0, policy=policy, rng=rng)
    assert third.destination is Table.FAILED
    assert third.request.retries == 3
    assert third.request.last_error == "boom 3"


def test_rollback_returns_to_incoming_at_once_without_using_a_retry():
    submitted = after_submission(request(retries=1), "0xsub", "2:0xwallet")
    assert submitted.submission_id == "0xsub"
    assert submitted.submitted_by == "2:0xwallet"
    back = after_rollback(submitted, now=500.0)
    assert back.retries == 1
    assert back.rollbacks == 1
    assert back.submission_id is None
    assert back.next_attempt_at == 500.0
    assert "0xsub" in (back.last_error or "")


def test_operator_retry_from_failed_gives_a_fresh_budget():
    failed = request(retries=11, last_error="gave up")
    fresh = for_retry_from_failed(failed, now=42.0)
    assert fresh.retries == 0
    assert fresh.next_attempt_at == 42.0
    assert fresh.last_error == "gave up"  # kept for the operator's record


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"last_error": 'quote " backslash \\ newline \n tab \t nul \x00', "rollbacks": 2},
        {"last_error": "non-ASCII \u00e9 \u6f22 \U0001f600"},
        {"submission_id": "0x" + "ab" * 32, "submitted_by": "2:0x" + "00" * 20},
        {"next_attempt_at": -0.0, "enqueued_at": 1e-310, "retries": 2**64 - 1},
        {"next_attempt_at": 5, "enqueued_at": 1_700_000_000},  # ints where floats belong
    ],
)
def test_state_json_is_json_that_reads_back_as_the_request(changes):
    value = request(**changes)
    assert json.loads(value.state_json()) == value._state()
    assert RelayRequest.from_state(value.state_json(), value.vaa) == value


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"retries": 2**64}, "retries must be a non-negative integer below 2"),
        ({"next_attempt_at": float("inf")}, "next_attempt_at must be a finite time"),
        ({"enqueued_at": float("nan")}, "enqueued_at must be a finite time"),
    ],
)
def test_values_json_cannot_carry_are_refused(changes, message):
    with pytest.raises(RequestFormatError, match=message):
        request(**changes)


def test_a_failure_text_with_a_lone_surrogate_is_stored_with_it_replaced():
    decision = after_failure(
        request(), "bad \ud800 text", now=1.0, policy=RetryPolicy(), rng=random.Random(1)
    )
    assert decision.request.last_error == "bad ? text"
    assert RelayRequest.from_state(decision.request.state_json(), b"v") == replace(
        decision.request, vaa=b"v"
    )


def test_state_json_reads_back_as_the_very_request():
    plain = request(last_error="e \u00e9", submission_id="0x1", submitted_by="2:0x0", retries=4)
    back = RelayRequest.from_state(plain.state_json().encode(), plain.vaa)
    assert back == plain
    assert [type(getattr(back, f)) for f in plain.__slots__] == [
        type(getattr(plain, f)) for f in plain.__slots__
    ]
    # Integer times are stored as JSON integers and read back as the same float times.
    assert (
        RelayRequest.from_state(request(enqueued_at=5).state_json(), plain.vaa).enqueued_at == 5.0
    )


def test_stored_states_with_whitespace_read_back_and_other_text_is_refused():
    value = request(retries=1)
    text = value.state_json()
    for form in (" " + text, text + "\n", (" " + text).encode()):
        assert RelayRequest.from_state(form, value.vaa) == value
    for bad in ("\ufeff" + text, text + "{}", text.encode()[:-1] + b"\xff", "[]"):
        with pytest.raises(RequestFormatError, match=r"not JSON|not a JSON object"):
            RelayRequest.from_state(bad, value.vaa)


def test_after_submission_is_the_request_with_the_submission_recorded():
    original = request(retries=2, last_error="x", rollbacks=1, next_attempt_at=3.5)
    pending = after_submission(original, "0xsub", "2:0x00")
    assert pending == replace(original, submission_id="0xsub", submitted_by="2:0x00")
    assert type(pending) is RelayRequest
    assert original.submission_id is None  # unchanged
    assert pending.state_json() == json.dumps(pending._state(), separators=(",", ":"))


def test_the_trace_context_is_stored_only_when_there_is_one() -> None:
    plain = request()
    assert "traceparent" not in json.loads(plain.state_json())  # untraced: as small as before
    traceparent = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    traced = replace(plain, traceparent=traceparent)
    assert RelayRequest.from_json(traced.to_json()).traceparent == traceparent
    assert RelayRequest.from_state(traced.state_json(), traced.vaa) == traced
    # What moves do to a request keeps its trace (the worker continues it after a retry).
    retried = after_failure(
        traced, "boom", now=10.0, policy=RetryPolicy(), rng=random.Random(1)
    ).request
    assert retried.traceparent == traceparent
    with pytest.raises(RequestFormatError, match="traceparent"):
        RelayRequest.from_state(plain.state_json()[:-1] + ',"traceparent":5}', plain.vaa)
