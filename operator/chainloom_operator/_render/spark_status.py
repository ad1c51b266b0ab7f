"""What an IngestPipeline's status mirrors of its SparkApplication (pure): the state, the
attempts, the driver and executors, and how long a submitted application has waited for its
driver.

The spark-operator (v1beta2, v2.5.x) keeps only the *current* submission in the application's
status: ``submissionID``, ``lastSubmissionAttemptTime``, the counters ``submissionAttempts`` and
``executionAttempts``, ``applicationState``, ``driverInfo.podName``, ``executorState`` and
``terminationTime``. A resubmission (restartPolicy OnFailure or Always) replaces them, so the
pipeline keeps the history: :func:`merge_attempts` adds an entry whenever the submission id is
new and updates the latest one otherwise. A submission the operator never saw (two within one
batch of watch events) still gets an entry, from the counter, marked as not observed.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainloom_operator.models import MAX_ATTEMPTS
from chainloom_operator.spark_models import Attempt

WAITING_STATES = frozenset({"", "SUBMITTED", "PENDING_RERUN"})
"""Application states in which no driver runs yet: submitted (the driver pod is pending or not
yet created), or waiting to be submitted again."""
UNOBSERVED = "NOT_OBSERVED"
"""The state of an attempt the operator saw only in the counter."""


@dataclass(frozen=True, slots=True)
class Delay:
    """How long an application has waited for its driver."""

    waited: float
    """Seconds since its submission (or creation)."""
    deadline: float
    """The pipeline's ``start_deadline_seconds``."""

    @property
    def exceeded(self) -> bool:
        """The deadline has passed."""
        return self.waited > self.deadline

    @property
    def remaining(self) -> float:
        """Seconds until it passes (0 once it has)."""
        return max(0.0, self.deadline - self.waited)


def parse_time(text: str | None) -> datetime.datetime | None:
    """An RFC 3339 time as Kubernetes writes it (``2026-11-27T13:00:00Z``), or None."""
    if not text:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def application_state(application: Mapping[str, Any] | None) -> str:
    """``status.applicationState.state`` ('' when there is none yet)."""
    status = (application or {}).get("status") or {}
    return str((status.get("applicationState") or {}).get("state") or "")


def start_delay(
    application: Mapping[str, Any] | None, deadline: float | None, now: str
) -> Delay | None:
    """How long ``application`` has waited for its driver, when it waits and ``deadline`` is
    set (None otherwise, or when ``now`` is not a time): measured from its last submission
    attempt, or from its creation while it has never been submitted."""
    if application is None or deadline is None:
        return None
    if application_state(application) not in WAITING_STATES:
        return None
    status = application.get("status") or {}
    since = parse_time(status.get("lastSubmissionAttemptTime")) or parse_time(
        (application.get("metadata") or {}).get("creationTimestamp")
    )
    at = parse_time(now)
    if since is None or at is None:
        return None
    return Delay(max(0.0, (at - since).total_seconds()), float(deadline))


def driver_pod_of(application: Mapping[str, Any] | None) -> str:
    """The application's driver pod, as its status names it ('' before the first submission)."""
    status = (application or {}).get("status") or {}
    return str((status.get("driverInfo") or {}).get("podName") or "")


def _current(application: Mapping[str, Any]) -> Attempt | None:
    status = application.get("status") or {}
    number = int(status.get("submissionAttempts") or 0)
    submission = str(status.get("submissionID") or "")
    if not submission and number == 0:
        return None
    state = status.get("applicationState") or {}
    return Attempt(
        application=application.get("metadata", {}).get("name", ""),
        number=number,
        submission_id=submission,
        submitted=str(status.get("lastSubmissionAttemptTime") or ""),
        driver_pod=driver_pod_of(application),
        state=str(state.get("state") or ""),
        message=str(state.get("errorMessage") or ""),
        terminated=str(status.get("terminationTime") or ""),
    )


def merge_attempts(
    previous: Sequence[Mapping[str, Any]], application: Mapping[str, Any] | None
) -> tuple[Attempt, ...]:
    """The pipeline's attempts after seeing ``application``: ``previous`` (the status's
    ``attempts``), the current submission updated in place or added, the latest
    :data:`~chainloom_operator.models.MAX_ATTEMPTS` kept.

    A submission is new when its id differs from the latest entry's of the same application;
    submissions between the two that the counter shows but nobody saw get an entry of their
    own (state :data:`UNOBSERVED`). Entries of other applications (a schedule's earlier runs)
    stay as they were.
    """
    kept = [Attempt.model_validate(entry) for entry in previous]
    current = _current(application) if application is not None else None
    if current is None:
        return tuple(kept[-MAX_ATTEMPTS:])
    same = [a for a in kept if a.application == current.application]
    latest = same[-1] if same else None
    if latest is not None and (
        latest.submission_id == current.submission_id
        or (not current.submission_id and latest.number == current.number)
    ):
        kept[kept.index(latest)] = current
        return tuple(kept[-MAX_ATTEMPTS:])
    if latest is not None and current.number < latest.number:
        latest_number = 0  # the counters were reset (the application was invalidated)
    else:
        latest_number = latest.number if latest is not None else 0
    missed = [
        Attempt(application=current.application, number=n, state=UNOBSERVED)
        for n in range(latest_number + 1, current.number)
    ]
    return tuple([*kept, *missed, current][-MAX_ATTEMPTS:])
