"""What the pipeline's status mirrors of its SparkApplication: attempts, start delay (pure)."""

from __future__ import annotations

from typing import Any

from chainloom_operator._render.spark_status import (
    UNOBSERVED,
    application_state,
    driver_pod_of,
    merge_attempts,
    parse_time,
    start_delay,
)
from chainloom_operator.models import MAX_ATTEMPTS


def _app(
    state: str,
    *,
    attempts: int = 1,
    submission: str = "s1",
    name: str = "p",
    error: str = "",
    submitted: str = "2026-11-27T10:00:00Z",
    **more: Any,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "applicationState": {"state": state, **({"errorMessage": error} if error else {})},
        "submissionID": submission, "submissionAttempts": attempts,
        "executionAttempts": attempts, "lastSubmissionAttemptTime": submitted,
        "driverInfo": {"podName": f"{name}-driver"}, **more,
    }  # fmt: skip
    return {"metadata": {"name": name, "creationTimestamp": "2026-11-27T09:59:00Z"},
            "status": status}  # fmt: skip


def _dump(attempts: Any) -> list[dict[str, Any]]:
    return [a.model_dump(mode="json", by_alias=True) for a in attempts]


def test_one_entry_per_submission_updated_while_it_lasts() -> None:
    first = merge_attempts([], _app("SUBMITTED"))
    assert [(a.number, a.submission_id, a.state) for a in first] == [(1, "s1", "SUBMITTED")]
    assert first[0].driver_pod == "p-driver"
    running = merge_attempts(_dump(first), _app("RUNNING"))
    assert [(a.number, a.state) for a in running] == [(1, "RUNNING")]
    failing = merge_attempts(_dump(running), _app("FAILING", error="driver pod deleted"))
    assert (failing[0].state, failing[0].message) == ("FAILING", "driver pod deleted")
    # OnFailure: the spark-operator resubmits with a new id and counts the attempt.
    second = merge_attempts(_dump(failing), _app("SUBMITTED", attempts=2, submission="s2"))
    assert [(a.number, a.submission_id, a.state) for a in second] == [
        (1, "s1", "FAILING"), (2, "s2", "SUBMITTED")]  # fmt: skip
    done = merge_attempts(_dump(second), _app("COMPLETED", attempts=2, submission="s2",
                                              terminationTime="2026-11-27T10:05:00Z"))  # fmt: skip
    assert [a.state for a in done] == ["FAILING", "COMPLETED"]
    assert done[1].terminated == "2026-11-27T10:05:00Z"


def test_a_submission_nobody_saw_still_gets_its_entry() -> None:
    first = merge_attempts([], _app("FAILING"))
    third = merge_attempts(_dump(first), _app("RUNNING", attempts=3, submission="s3"))
    assert [(a.number, a.state) for a in third] == [(1, "FAILING"), (2, UNOBSERVED),
                                                    (3, "RUNNING")]  # fmt: skip
    late = merge_attempts([], _app("RUNNING", attempts=2, submission="s2"))
    assert [(a.number, a.state) for a in late] == [(1, UNOBSERVED), (2, "RUNNING")]


def test_counters_reset_by_invalidation_start_again() -> None:
    before = merge_attempts([], _app("FAILED", attempts=3, submission="s3"))
    after = merge_attempts(_dump(before), _app("SUBMITTED", attempts=1, submission="s9"))
    assert [(a.number, a.submission_id) for a in after][-1] == (1, "s9")
    assert len(after) == len(before) + 1


def test_a_schedules_runs_keep_their_own_entries_and_the_list_is_bounded() -> None:
    runs = merge_attempts([], _app("COMPLETED", name="p-1"))
    runs = merge_attempts(_dump(runs), _app("RUNNING", name="p-2"))
    assert [(a.application, a.number) for a in runs] == [("p-1", 1), ("p-2", 1)]
    many: tuple[Any, ...] = ()
    for n in range(1, MAX_ATTEMPTS + 6):
        many = merge_attempts(_dump(many), _app("FAILING", attempts=n, submission=f"s{n}"))
    assert len(many) == MAX_ATTEMPTS
    assert many[-1].number == MAX_ATTEMPTS + 5


def test_nothing_to_record_before_the_first_submission() -> None:
    assert merge_attempts([], None) == ()
    assert merge_attempts([], {"metadata": {"name": "p"}}) == ()
    assert application_state(None) == ""
    assert driver_pod_of({"metadata": {"name": "p"}}) == ""


def test_the_wait_for_the_driver_is_measured_from_the_last_submission() -> None:
    app = _app("SUBMITTED")
    delay = start_delay(app, 300, "2026-11-27T10:04:00Z")
    assert delay is not None
    assert (delay.waited, delay.exceeded, delay.remaining) == (240.0, False, 60.0)
    late = start_delay(app, 300, "2026-11-27T10:05:01Z")
    assert late is not None
    assert late.exceeded
    assert late.remaining == 0
    rerun = start_delay(_app("PENDING_RERUN"), 300, "2026-11-27T10:06:00Z")
    assert rerun is not None
    assert rerun.exceeded
    never = {"metadata": {"name": "p", "creationTimestamp": "2026-11-27T09:59:00Z"}}
    unsubmitted = start_delay(never, 30, "2026-11-27T10:00:00Z")
    assert unsubmitted is not None
    assert unsubmitted.waited == 60.0


def test_no_delay_once_the_driver_runs_or_without_a_deadline() -> None:
    for state in ("RUNNING", "COMPLETED", "FAILED", "SUCCEEDING"):
        assert start_delay(_app(state), 1, "2026-11-27T11:00:00Z") is None
    assert start_delay(_app("SUBMITTED"), None, "2026-11-27T11:00:00Z") is None
    assert start_delay(None, 5, "2026-11-27T11:00:00Z") is None
    assert start_delay(_app("SUBMITTED"), 5, "not a time") is None
    assert parse_time("2026-11-27T10:00:00.5Z") is not None
    assert parse_time("") is None
