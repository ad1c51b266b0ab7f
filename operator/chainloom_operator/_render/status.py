"""Status of the three resources, computed from what the operator observed (pure).

Three conditions, as Kubernetes tools expect them: ``Ready`` (the thing works), ``Progressing``
(it is being created or rolled), ``Degraded`` (a failure a user should act on; its message is
the operator's error). Each carries the ``observedGeneration`` it describes, and keeps its
``lastTransitionTime`` while its status does not change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from chainloom_operator._render.pod_causes import PodCause, start_failure
from chainloom_operator._render.spark_status import (
    WAITING_STATES,
    application_state,
    driver_pod_of,
    merge_attempts,
    start_delay,
)
from chainloom_operator.models import (
    ApiStatus,
    BackendTableStatus,
    Condition,
    Drift,
    IngestPipelineSpec,
    IngestPipelineStatus,
    PoolCondition,
    RelayerPoolSpec,
    RelayerPoolStatus,
    WorkerStatus,
)
from chainloom_operator.spark_models import PipelineCondition, ScheduleStatus

ConditionType = Literal["Ready", "Progressing", "Degraded"]
ConditionStatus = Literal["True", "False", "Unknown"]
C = TypeVar("C", bound=Condition)
V = TypeVar("V")

SPARK_OPERATOR_INSTALL = (
    "install the Kubeflow spark-operator controller watching this namespace: helm repo add "
    "spark-operator https://kubeflow.github.io/spark-operator && helm install spark-operator "
    "spark-operator/spark-operator --namespace spark-operator --create-namespace "
    "--set 'spark.jobNamespaces={%s}'"
)
"""What to run when SparkApplications are accepted but nobody runs them (%s: namespace)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """The error of the last reconcile, as the Degraded condition shows it."""

    reason: str
    """CamelCase reason (the error's ``reason``)."""
    message: str
    """The error's message (never a secret)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One condition's status before it is stamped with generation and time."""

    status: ConditionStatus
    """True, False or Unknown."""
    reason: str
    """CamelCase reason."""
    message: str = ""
    """For a person."""


Verdicts = Mapping[ConditionType, Verdict] | Mapping[str, Verdict]


@overload
def conditions(
    verdicts: Verdicts, generation: int, previous: Sequence[Mapping[str, Any]], now: str
) -> tuple[Condition, ...]: ...
@overload
def conditions(
    verdicts: Verdicts,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    model: type[C],
) -> tuple[C, ...]: ...
def conditions(
    verdicts: Verdicts,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    model: type[Condition] = Condition,
) -> tuple[Condition, ...]:
    """The conditions (as ``model``), in the order of ``verdicts``, keeping each one's
    lastTransitionTime while its status is unchanged."""
    before = {c.get("type"): c for c in previous}
    found = []
    for kind, verdict in verdicts.items():
        old = before.get(kind, {})
        since = old.get("lastTransitionTime") if old.get("status") == verdict.status else None
        found.append(
            model.model_validate(
                {"type": kind, "status": verdict.status, "reason": verdict.reason,
                 "message": verdict.message, "observed_generation": generation,
                 "last_transition_time": since or now}
            )
        )  # fmt: skip
    return tuple(found)


def _verdicts(ready: Verdict, progressing: bool, failure: Failure | None
              ) -> dict[str, Verdict]:  # fmt: skip
    if failure is not None:
        return {
            "Ready": Verdict("False", failure.reason, failure.message),
            "Progressing": Verdict("False", failure.reason, "waiting for the problem to be fixed"),
            "Degraded": Verdict("True", failure.reason, failure.message),
        }
    return {
        "Ready": ready,
        "Progressing": Verdict("True" if progressing else "False", ready.reason, ready.message),
        "Degraded": Verdict("False", "AsExpected"),
    }


def deployment_available(deployment: Mapping[str, Any]) -> bool:
    """The Deployment has rolled out its current spec and every replica is available."""
    spec, status = deployment.get("spec", {}), deployment.get("status") or {}
    wanted = spec.get("replicas", 1)
    generation = deployment.get("metadata", {}).get("generation", 0)
    return bool(
        status.get("observedGeneration", 0) >= generation
        and status.get("updatedReplicas", 0) >= wanted
        and status.get("availableReplicas", 0) >= wanted
    )


def relayer_pool_status(
    spec: RelayerPoolSpec,
    deployments: Iterable[Mapping[str, Any]],
    *,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    failure: Failure | None = None,
    queue_depths: Mapping[str, int] | None = None,
    low_balance: Verdict | None = None,
) -> RelayerPoolStatus:
    """The pool's status from its observed Deployments (found by the owner's labels), with
    the LowBalance verdict when the balances were judged (:func:`low_balance_verdict`)."""
    by_component: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for deployment in deployments:
        found = deployment.get("metadata", {}).get("labels", {})
        key = (found.get("app.kubernetes.io/component", ""), found.get("chainloom.io/chain", ""),
               found.get("chainloom.io/wallet", ""))  # fmt: skip
        by_component[key] = deployment
    listener = by_component.get(("relayer-listener", "", ""))
    listener_ready = (listener or {}).get("status", {}) or {}
    workers = tuple(
        WorkerStatus(
            chain=chain.chain,
            wallet=wallet.name,
            ready=deployment_available(
                by_component.get(
                    ("relayer-worker", str(chain.chain), wallet.name), {"spec": {"replicas": 1}}
                )
            ),
        )
        for chain in spec.chains
        for wallet in chain.wallets
    )
    ready_count = sum(w.ready for w in workers)
    listener_ok = listener is not None and deployment_available(listener)
    if listener_ok and ready_count == len(workers):
        ready = Verdict("True", "Available", f"listener and {len(workers)} workers available")
    else:
        waiting = [f"{w.chain}/{w.wallet}" for w in workers if not w.ready]
        parts = ([] if listener_ok else ["listener"]) + (
            [f"workers {', '.join(waiting)}"] if waiting else []
        )
        ready = Verdict(
            "False", "Progressing", f"waiting for {' and '.join(parts)} to be available"
        )
    return RelayerPoolStatus(
        observed_generation=generation,
        conditions=conditions({**_verdicts(ready, ready.status != "True", failure),
                               **({"LowBalance": low_balance} if low_balance else {})},
                              generation, previous, now, PoolCondition),
        listener_ready_replicas=listener_ready.get("availableReplicas", 0),
        workers=workers,
        ready_workers=f"{ready_count}/{len(workers)}",
        queue_depths=dict(queue_depths or {}),
    )  # fmt: skip


def low_balance_verdict(
    spec: RelayerPoolSpec, balances: Mapping[tuple[int, str], int]
) -> Verdict | None:
    """LowBalance from the balances the workers published (``(chain, address) -> wei``):
    True naming every wallet under its chain's ``minBalance``; None when no chain sets one."""
    minimums = {c.chain: int(c.min_balance) for c in spec.chains if c.min_balance is not None}
    if not minimums:
        return None
    low = [
        f"{address} on chain {chain} holds {wei} (minBalance {minimums[chain]})"
        for (chain, address), wei in sorted(balances.items())
        if chain in minimums and wei < minimums[chain]
    ]
    if low:
        return Verdict("True", "BalanceBelowMinimum", "; ".join(low))
    return Verdict("False", "BalancesAboveMinimum", "every published wallet balance is enough")


def previous_verdict(previous: Sequence[Mapping[str, Any]], kind: str) -> Verdict | None:
    """A condition of the status as it was, as a verdict (to carry it over unchanged)."""
    for condition in previous:
        if condition.get("type") == kind and condition.get("status") in ("True", "False"):
            return Verdict(condition["status"], condition.get("reason", ""),
                           condition.get("message", ""))  # fmt: skip
    return None


SPARK_STATES = {
    "COMPLETED": ("True", "Completed", False),
    "RUNNING": ("False", "Running", True),
    "SUBMITTED": ("False", "Submitted", True),
    "PENDING_RERUN": ("False", "PendingRerun", True),
    "INVALIDATING": ("False", "Invalidating", True),
    "SUCCEEDING": ("False", "Succeeding", True),
    "FAILING": ("False", "Failing", True),
    "FAILED": ("False", "Failed", False),
    "SUBMISSION_FAILED": ("False", "SubmissionFailed", False),
    "SUSPENDING": ("False", "Suspending", True),
    "SUSPENDED": ("False", "Suspended", False),
    "RESUMING": ("False", "Resuming", True),
    "UNKNOWN": ("Unknown", "Unknown", True),
}
"""spark-operator application state -> (Ready, reason, still progressing)."""


FINISHED_STATES = frozenset({"COMPLETED", "FAILED"})
"""Application states after which the driver pod has ended (its summary is final)."""

DRIVER_CONTAINER = "spark-kubernetes-driver"
"""The name Spark gives the driver's container in the driver pod."""


def driver_pod_name(application: Mapping[str, Any] | None) -> str:
    """The driver pod of a finished SparkApplication ('' while it runs or without one):
    ``status.driverInfo.podName``, as the spark-operator records it."""
    status = (application or {}).get("status") or {}
    if (status.get("applicationState") or {}).get("state") not in FINISHED_STATES:
        return ""
    return str((status.get("driverInfo") or {}).get("podName") or "")


def last_run_name(schedule: Mapping[str, Any] | None) -> str:
    """The SparkApplication of a ScheduledSparkApplication's latest run ('' before the first):
    ``status.lastRunName``, as the spark-operator records it when it creates the run. Its
    driver pod's summary (:func:`driver_pod_name`, :func:`driver_summary`) is the pipeline's
    once that run has finished."""
    return str(((schedule or {}).get("status") or {}).get("lastRunName") or "")


def driver_summary(pod: Mapping[str, Any] | None) -> dict[str, int]:
    """The job's counts from its driver pod: the top-level integers of the JSON termination
    message the job wrote (:mod:`chainloom_spark.termination`) and Kubernetes copied into
    ``containerStatuses[].state.terminated.message``; the driver container's message first,
    else the first terminated container's. Empty when there is none or it is not such JSON
    (a failure's log tail under ``FallbackToLogsOnError``, say)."""
    statuses = list(((pod or {}).get("status") or {}).get("containerStatuses") or [])
    statuses.sort(key=lambda container: container.get("name") != DRIVER_CONTAINER)
    for container in statuses:
        terminated = (container.get("state") or {}).get("terminated") or {}
        message = terminated.get("message")
        if not message:
            continue
        try:
            document = json.loads(message)
        except ValueError:
            return {}
        if not isinstance(document, dict):
            return {}
        return {
            key: value
            for key, value in document.items()
            if isinstance(value, int) and not isinstance(value, bool)
        }
    return {}


def summary_patch(previous: Mapping[str, Any], current: Mapping[str, V]) -> dict[str, V | None]:
    """``status.summary`` as a merge patch: the current counts, and ``null`` for each count the
    previous status had that is gone (a rerun's empty summary would otherwise keep the last
    run's counts, since a merge patch never removes keys it does not name)."""
    return {**dict.fromkeys(set(previous) - set(current)), **current}


def _awaiting_controller(kind: str, namespace: str) -> Verdict:
    return Verdict(
        "False",
        "AwaitingSparkOperator",
        f"the {kind} was accepted but has no status: no spark-operator controller handles it; "
        + SPARK_OPERATOR_INSTALL % namespace,
    )


def _application_verdict(state: str, application: Mapping[str, Any], namespace: str) -> Verdict:
    if not state:
        return _awaiting_controller("SparkApplication", namespace)
    status, reason, _ = SPARK_STATES.get(state, ("Unknown", "Unknown", True))
    message = ((application.get("status") or {}).get("applicationState") or {}).get(
        "errorMessage", ""
    )
    return Verdict(status, reason, message)  # type: ignore[arg-type]


def _delay_verdict(
    spec: IngestPipelineSpec, run: Mapping[str, Any] | None, now: str, cause: PodCause | None
) -> Verdict:
    """SubmissionDelayed: True once ``run`` has waited past ``batch.start_deadline_seconds``
    for its driver (spark-operator issue #2872)."""
    assert spec.batch is not None
    deadline = spec.batch.start_deadline_seconds
    if deadline is None:
        return Verdict("False", "NoDeadline", "batch.start_deadline_seconds is not set")
    if run is None:
        return Verdict("False", "NotSubmitted", "no application to wait for")
    name = run.get("metadata", {}).get("name", "")
    state = application_state(run)
    delay = start_delay(run, deadline, now)
    if state not in WAITING_STATES:
        return Verdict("False", "DriverStarted", f"the driver of {name} started ({state})")
    if delay is None or not delay.exceeded:
        waited = f"{delay.waited:.0f} s" if delay else "a moment"
        return Verdict("False", "WithinDeadline",
                       f"{name} has waited {waited} of {deadline} s for its driver")  # fmt: skip
    driver = driver_pod_of(run)
    why = cause.message if cause else (
        f"driver pod {driver} has not started" if driver else "not submitted yet"
    )  # fmt: skip
    return Verdict(
        "True",
        "StartDeadlineExceeded",
        f"SparkApplication {name} ({state or 'not submitted'}) has waited {delay.waited:.0f} s "
        f"for its driver, more than start_deadline_seconds {deadline}: {why}",
    )


def _schedule(child: Mapping[str, Any], run: Mapping[str, Any] | None) -> ScheduleStatus:
    status = child.get("status") or {}
    return ScheduleStatus(
        state=str(status.get("scheduleState") or ""),
        last_run=str(status.get("lastRun") or ""),
        last_run_name=str(status.get("lastRunName") or ""),
        last_run_state=application_state(run),
        next_run=str(status.get("nextRun") or ""),
    )


def pipeline_status(
    spec: IngestPipelineSpec,
    child: Mapping[str, Any] | None,
    *,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    namespace: str,
    failure: Failure | None = None,
    summary: Mapping[str, int] | None = None,
    last_run: Mapping[str, Any] | None = None,
    driver_pod: Mapping[str, Any] | None = None,
    previous_attempts: Sequence[Mapping[str, Any]] = (),
) -> IngestPipelineStatus:
    """The pipeline's status from its observed child (SparkApplication, schedule or Deployment)
    and, once a SparkApplication has finished, its job's ``summary`` counts
    (:func:`driver_summary` of its driver pod; for a schedule, of its last finished run's).

    For a batch pipeline the application mirrored is the child, or a schedule's ``last_run``
    (the SparkApplication its status names); ``driver_pod`` is that application's driver pod
    as the API server returns it (its waiting reasons say why a run cannot start:
    :func:`~chainloom_operator._render.pod_causes.start_failure`), ``previous_attempts`` the
    status's ``attempts`` so far, ``now`` an RFC 3339 time (the start deadline is measured
    against it).
    """
    name = (child or {}).get("metadata", {}).get("name", "")
    child_status = (child or {}).get("status") or {}
    state, last_run_name_, schedule = "", "", None
    run = last_run if spec.schedule is not None else child
    run_state = application_state(run)
    cause = start_failure(driver_pod) if run is not None and run_state in WAITING_STATES else None
    if child is None:
        ready = Verdict("False", "Creating", "the child has not been created yet")
    elif spec.mode == "streaming":
        available = deployment_available(child)
        state = "Available" if available else "Progressing"
        ready = Verdict("True", "Available", "the indexer is available") if available else \
            Verdict("False", "Progressing", "waiting for the indexer to be available")  # fmt: skip
    elif spec.schedule is not None:
        state = child_status.get("scheduleState", "")
        last_run_name_ = child_status.get("lastRunName", "")
        schedule = _schedule(child, run)
        if state == "Scheduled":
            ready = Verdict("True", "Scheduled", f"next run {child_status.get('nextRun', '?')}")
        elif state:
            ready = Verdict("False", state, child_status.get("reason", ""))
        else:
            ready = _awaiting_controller("ScheduledSparkApplication", namespace)
    else:
        state = run_state
        ready = _application_verdict(state, child, namespace)
        if cause is not None:
            ready = Verdict("False", cause.reason, cause.message)
    stuck = ("Failed", "SubmissionFailed") + ((cause.reason,) if cause else ())
    progressing = ready.status != "True" and ready.reason not in stuck
    verdicts = _verdicts(ready, progressing, failure)
    if failure is None and ready.reason in ("Failed", "SubmissionFailed"):
        verdicts["Degraded"] = Verdict("True", ready.reason, ready.message)
    if failure is None and cause is not None:
        verdicts["Degraded"] = Verdict("True", cause.reason, cause.message)
    mirrored: dict[str, Any] = {}
    if spec.mode == "batch":
        verdicts["SubmissionDelayed"] = _delay_verdict(spec, run, now, cause)
        run_status = (run or {}).get("status") or {}
        mirrored = {
            "error_message": str((run_status.get("applicationState") or {}).get("errorMessage")
                                 or ""),
            "submission_attempts": int(run_status.get("submissionAttempts") or 0),
            "execution_attempts": int(run_status.get("executionAttempts") or 0),
            "driver_pod": driver_pod_of(run),
            "executor_state": {str(k): str(v)
                               for k, v in (run_status.get("executorState") or {}).items()},
            "attempts": merge_attempts(previous_attempts, run),
            "schedule": schedule,
        }  # fmt: skip
    return IngestPipelineStatus(
        observed_generation=generation,
        conditions=conditions(verdicts, generation, previous, now, model=PipelineCondition),
        application=name,
        state=state,
        last_run=last_run_name_,
        summary=dict(summary or {}) if state in FINISHED_STATES or last_run_name_ else {},
        **mirrored,
    )


POD_CAUSE_REASONS = frozenset(
    {"ImagePullFailed", "Unschedulable", "MissingSecret", "MissingConfigMap",
     "ContainerConfigError", "ContainerStartFailed"}
)  # fmt: skip
"""Degraded reasons that come from the driver pod (not from a failed reconcile)."""


def pipeline_warnings(
    previous: Sequence[Mapping[str, Any]], current: Sequence[PipelineCondition]
) -> list[tuple[str, str]]:
    """``(reason, message)`` of each Warning event the new conditions call for: the start
    deadline newly exceeded, a driver pod newly unable to start (or for another reason). A
    reconcile's own failures are not among them (kopf posts those)."""
    before = {c.get("type"): c for c in previous}
    warnings = []
    for condition in current:
        old = before.get(condition.type, {})
        changed = old.get("status") != "True" or old.get("reason") != condition.reason
        if condition.status != "True" or not changed:
            continue
        if condition.type == "SubmissionDelayed" or (
            condition.type == "Degraded" and condition.reason in POD_CAUSE_REASONS
        ):
            warnings.append((condition.reason, condition.message))
    return warnings


def recheck_after(spec: IngestPipelineSpec, run: Mapping[str, Any] | None, now: str
                  ) -> float | None:  # fmt: skip
    """Seconds after which the pipeline's status must be computed again although nothing
    changes (its start deadline passes then), or None."""
    if spec.batch is None:
        return None
    delay = start_delay(run, spec.batch.start_deadline_seconds, now)
    if delay is None or delay.exceeded:
        return None
    return delay.remaining + 1.0


def table_status(
    tables: Sequence[str],
    created: Sequence[str],
    drift: Sequence[Drift],
    *,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    failure: Failure | None = None,
    api: tuple[str, ApiStatus | None] = ("", None),
    api_available: bool = True,
) -> BackendTableStatus:
    """The BackendTable's status from the last schema check and, with ``spec.api``, its API
    (``api``: ``apiReady`` and the API's status, :func:`~._render.api.api_status`;
    ``api_available``: its Deployment has rolled out and every replica is available)."""
    api_ready, api_found = api
    shown = "; ".join(f"{d.table} {d.item}: {d.problem}" for d in drift[:5])
    drifted = f"{len(drift)} difference(s), not changed: {shown}"
    if drift:
        ready = Verdict("True", "Drifted", drifted)
    else:
        ready = Verdict("True", "InSync", f"{len(tables)} tables match the schema")
    if api_found is not None and not api_available:
        ready = Verdict("False", "ApiNotReady",
                        f"waiting for the API's pods to be ready ({api_ready})")  # fmt: skip
    verdicts = _verdicts(ready, ready.status != "True", failure)
    if drift and failure is None:
        verdicts["Degraded"] = Verdict("True", "Drifted", drifted)
    return BackendTableStatus(
        observed_generation=generation,
        conditions=conditions(verdicts, generation, previous, now),
        tables=tuple(tables),
        created=tuple(created),
        drift=tuple(drift),
        last_checked=now,
        api_ready=api_ready,
        api=api_found,
    )
