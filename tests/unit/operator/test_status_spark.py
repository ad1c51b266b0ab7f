"""An IngestPipeline's status from its SparkApplication, its schedule's last run and the driver
pod: mirrored state and attempts, SubmissionDelayed, a driver that cannot start (pure)."""

from __future__ import annotations

from typing import Any

from chainloom_operator._render.status import (
    pipeline_status,
    pipeline_warnings,
    recheck_after,
)
from chainloom_operator.models import IngestPipelineSpec

SUBMITTED_AT = "2026-11-27T10:00:00Z"


def _spec(deadline: int | None = 300, schedule: str | None = None) -> IngestPipelineSpec:
    batch: dict[str, Any] = {"job": "vaa-ingest", "input": "x"}
    if deadline is not None:
        batch["start_deadline_seconds"] = deadline
    return IngestPipelineSpec.model_validate(
        {"mode": "batch", "sink": "e", "batch": batch,
         **({"schedule": schedule} if schedule else {})}
    )  # fmt: skip


def _app(state: str, name: str = "p", **more: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": SUBMITTED_AT},
        "status": {"applicationState": {"state": state}, "submissionID": "s1",
                   "submissionAttempts": 1, "executionAttempts": 1,
                   "lastSubmissionAttemptTime": SUBMITTED_AT,
                   "driverInfo": {"podName": f"{name}-driver"}, **more},
    }  # fmt: skip


PULL_FAILED = {
    "metadata": {"name": "p-driver"},
    "status": {"phase": "Pending", "containerStatuses": [
        {"name": "spark-kubernetes-driver", "image": "chainloom-spark:missing",
         "state": {"waiting": {"reason": "ErrImagePull",
                               "message": "failed to resolve reference"}}}]},
}  # fmt: skip


def _conditions(status: Any) -> dict[str, Any]:
    return {c.type: c for c in status.conditions}


def test_the_status_mirrors_the_application() -> None:
    app = _app("RUNNING", executorState={"p-exec-1": "RUNNING", "p-exec-2": "PENDING"})
    status = pipeline_status(_spec(), app, generation=3, previous=[], now="2026-11-27T10:01:00Z",
                             namespace="d")  # fmt: skip
    dumped = status.model_dump(mode="json", by_alias=True)
    assert dumped["state"] == "RUNNING"
    assert dumped["submissionAttempts"] == dumped["executionAttempts"] == 1
    assert dumped["driverPod"] == "p-driver"
    assert dumped["executorState"] == {"p-exec-1": "RUNNING", "p-exec-2": "PENDING"}
    assert [(a["number"], a["submissionId"], a["state"]) for a in dumped["attempts"]] == [
        (1, "s1", "RUNNING")]  # fmt: skip
    found = _conditions(status)
    assert list(found) == ["Ready", "Progressing", "Degraded", "SubmissionDelayed"]
    assert (found["SubmissionDelayed"].status, found["SubmissionDelayed"].reason) == (
        "False", "DriverStarted")  # fmt: skip


def test_a_resubmission_is_a_new_attempt() -> None:
    first = pipeline_status(_spec(), _app("FAILING"), generation=1, previous=[],
                            now="2026-11-27T10:01:00Z", namespace="d")  # fmt: skip
    again = _app("SUBMITTED", submissionID="s2", submissionAttempts=2, executionAttempts=2)
    second = pipeline_status(_spec(), again, generation=1, previous=[],
                             now="2026-11-27T10:02:00Z", namespace="d",
                             previous_attempts=[a.model_dump(by_alias=True)
                                                for a in first.attempts])  # fmt: skip
    assert [(a.number, a.state) for a in second.attempts] == [(1, "FAILING"), (2, "SUBMITTED")]


def test_past_the_start_deadline_the_pipeline_says_so() -> None:
    app = _app("SUBMITTED")
    within = pipeline_status(_spec(300), app, generation=1, previous=[],
                             now="2026-11-27T10:04:00Z", namespace="d")  # fmt: skip
    delayed = _conditions(within)["SubmissionDelayed"]
    assert (delayed.status, delayed.reason) == ("False", "WithinDeadline")
    assert recheck_after(_spec(300), app, "2026-11-27T10:04:00Z") == 61.0
    late = pipeline_status(_spec(300), app, generation=1, previous=[],
                           now="2026-11-27T10:06:00Z", namespace="d")  # fmt: skip
    delayed = _conditions(late)["SubmissionDelayed"]
    assert (delayed.status, delayed.reason) == ("True", "StartDeadlineExceeded")
    assert "waited 360 s" in delayed.message
    assert "p-driver" in delayed.message
    assert recheck_after(_spec(300), app, "2026-11-27T10:06:00Z") is None
    none = pipeline_status(_spec(None), app, generation=1, previous=[],
                           now="2026-11-27T10:06:00Z", namespace="d")  # fmt: skip
    assert _conditions(none)["SubmissionDelayed"].reason == "NoDeadline"
    assert recheck_after(_spec(None), app, "2026-11-27T10:06:00Z") is None


def test_a_driver_that_cannot_start_is_degraded_with_the_pods_words() -> None:
    status = pipeline_status(_spec(300), _app("SUBMITTED"), generation=1, previous=[],
                             now="2026-11-27T10:06:00Z", namespace="d",
                             driver_pod=PULL_FAILED)  # fmt: skip
    found = _conditions(status)
    assert (found["Ready"].status, found["Ready"].reason) == ("False", "ImagePullFailed")
    assert (found["Degraded"].status, found["Degraded"].reason) == ("True", "ImagePullFailed")
    assert "chainloom-spark:missing" in found["Degraded"].message
    assert "failed to resolve reference" in found["Degraded"].message
    assert found["Progressing"].status == "False"
    assert "chainloom-spark:missing" in found["SubmissionDelayed"].message
    # The pod is read only while the application waits: a running one is not degraded by it.
    running = pipeline_status(_spec(300), _app("RUNNING"), generation=1, previous=[],
                              now="2026-11-27T10:06:00Z", namespace="d",
                              driver_pod=PULL_FAILED)  # fmt: skip
    assert _conditions(running)["Degraded"].status == "False"


def test_warnings_only_on_a_change() -> None:
    late = pipeline_status(_spec(300), _app("SUBMITTED"), generation=1, previous=[],
                           now="2026-11-27T10:06:00Z", namespace="d",
                           driver_pod=PULL_FAILED)  # fmt: skip
    warnings = pipeline_warnings([], late.conditions)
    assert [reason for reason, _ in warnings] == ["ImagePullFailed", "StartDeadlineExceeded"]
    previous = [c.model_dump(by_alias=True) for c in late.conditions]
    assert pipeline_warnings(previous, late.conditions) == []
    fine = pipeline_status(_spec(300), _app("RUNNING"), generation=1, previous=previous,
                           now="2026-11-27T10:07:00Z", namespace="d")  # fmt: skip
    assert pipeline_warnings(previous, fine.conditions) == []
    failed = pipeline_status(_spec(300), _app("FAILED"), generation=1, previous=[],
                             now="2026-11-27T10:07:00Z", namespace="d")  # fmt: skip
    assert pipeline_warnings([], failed.conditions) == []  # the spark-operator's own state


def test_a_schedule_mirrors_its_last_run() -> None:
    schedule = {
        "metadata": {"name": "nightly"},
        "status": {"scheduleState": "Scheduled", "lastRun": "2026-11-27T02:00:00Z",
                   "lastRunName": "nightly-1", "nextRun": "2026-11-28T02:00:00Z"},
    }  # fmt: skip
    run = _app("RUNNING", name="nightly-1")
    status = pipeline_status(_spec(300, "0 2 * * *"), schedule, generation=1, previous=[],
                             now="2026-11-27T02:01:00Z", namespace="d", last_run=run)  # fmt: skip
    dumped = status.model_dump(mode="json", by_alias=True)
    assert (dumped["state"], dumped["lastRun"]) == ("Scheduled", "nightly-1")
    assert dumped["schedule"] == {"state": "Scheduled", "lastRun": "2026-11-27T02:00:00Z",
                                  "lastRunName": "nightly-1", "lastRunState": "RUNNING",
                                  "nextRun": "2026-11-28T02:00:00Z"}  # fmt: skip
    assert dumped["driverPod"] == "nightly-1-driver"
    assert [a["application"] for a in dumped["attempts"]] == ["nightly-1"]
    stuck = pipeline_status(_spec(300, "0 2 * * *"), schedule, generation=1, previous=[],
                            now="2026-11-27T02:01:00Z", namespace="d",
                            last_run=_app("SUBMITTED", name="nightly-1"),
                            driver_pod=PULL_FAILED)  # fmt: skip
    found = _conditions(stuck)
    assert found["Ready"].status == "True"  # the schedule itself is fine
    assert (found["Degraded"].status, found["Degraded"].reason) == ("True", "ImagePullFailed")
