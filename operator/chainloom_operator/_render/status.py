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
from typing import Any, Literal

from chainloom_operator.models import (
    BackendTableStatus,
    Condition,
    Drift,
    IngestPipelineSpec,
    IngestPipelineStatus,
    RelayerPoolSpec,
    RelayerPoolStatus,
    WorkerStatus,
)

ConditionType = Literal["Ready", "Progressing", "Degraded"]
ConditionStatus = Literal["True", "False", "Unknown"]

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


def conditions(
    verdicts: Mapping[ConditionType, Verdict],
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
) -> tuple[Condition, ...]:
    """The conditions, keeping each one's lastTransitionTime while its status is unchanged."""
    before = {c.get("type"): c for c in previous}
    found = []
    kinds: tuple[ConditionType, ...] = ("Ready", "Progressing", "Degraded")
    for kind in kinds:
        verdict = verdicts[kind]
        old = before.get(kind, {})
        since = old.get("lastTransitionTime") if old.get("status") == verdict.status else None
        found.append(
            Condition(
                type=kind,
                status=verdict.status,
                reason=verdict.reason,
                message=verdict.message,
                observed_generation=generation,
                last_transition_time=since or now,
            )
        )
    return tuple(found)


def _verdicts(ready: Verdict, progressing: bool, failure: Failure | None
              ) -> dict[ConditionType, Verdict]:  # fmt: skip
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
) -> RelayerPoolStatus:
    """The pool's status from its observed Deployments (found by the owner's labels)."""
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
        conditions=conditions(_verdicts(ready, ready.status != "True", failure), generation,
                              previous, now),
        listener_ready_replicas=listener_ready.get("availableReplicas", 0),
        workers=workers,
        ready_workers=f"{ready_count}/{len(workers)}",
        queue_depths=dict(queue_depths or {}),
    )  # fmt: skip


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


def summary_patch(previous: Mapping[str, Any], current: Mapping[str, int]) -> dict[str, int | None]:
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
) -> IngestPipelineStatus:
    """The pipeline's status from its observed child (SparkApplication, schedule or Deployment)
    and, once a SparkApplication has finished, its job's ``summary`` counts
    (:func:`driver_summary` of its driver pod; for a schedule, of its last finished run's)."""
    name = (child or {}).get("metadata", {}).get("name", "")
    child_status = (child or {}).get("status") or {}
    state, last_run = "", ""
    if child is None:
        ready = Verdict("False", "Creating", "the child has not been created yet")
    elif spec.mode == "streaming":
        available = deployment_available(child)
        state = "Available" if available else "Progressing"
        ready = Verdict("True", "Available", "the indexer is available") if available else \
            Verdict("False", "Progressing", "waiting for the indexer to be available")  # fmt: skip
    elif spec.schedule is not None:
        state = child_status.get("scheduleState", "")
        last_run = child_status.get("lastRunName", "")
        if state == "Scheduled":
            ready = Verdict("True", "Scheduled", f"next run {child_status.get('nextRun', '?')}")
        elif state:
            ready = Verdict("False", state, child_status.get("reason", ""))
        else:
            ready = _awaiting_controller("ScheduledSparkApplication", namespace)
    else:
        application_state = child_status.get("applicationState") or {}
        state = application_state.get("state", "")
        if not state:
            ready = _awaiting_controller("SparkApplication", namespace)
        else:
            status, reason, _ = SPARK_STATES.get(state, ("Unknown", "Unknown", True))
            ready = Verdict(status, reason, application_state.get("errorMessage", ""))  # type: ignore[arg-type]
    progressing = ready.status != "True" and ready.reason not in ("Failed", "SubmissionFailed")
    verdicts = _verdicts(ready, progressing, failure)
    if failure is None and ready.reason in ("Failed", "SubmissionFailed"):
        verdicts["Degraded"] = Verdict("True", ready.reason, ready.message)
    return IngestPipelineStatus(
        observed_generation=generation,
        conditions=conditions(verdicts, generation, previous, now),
        application=name,
        state=state,
        last_run=last_run,
        summary=dict(summary or {}) if state in FINISHED_STATES or last_run else {},
    )


def table_status(
    tables: Sequence[str],
    created: Sequence[str],
    drift: Sequence[Drift],
    *,
    generation: int,
    previous: Sequence[Mapping[str, Any]],
    now: str,
    failure: Failure | None = None,
) -> BackendTableStatus:
    """The BackendTable's status from the last schema check."""
    if drift:
        shown = "; ".join(f"{d.table} {d.item}: {d.problem}" for d in drift[:5])
        ready = Verdict("True", "Drifted", f"{len(drift)} difference(s), not changed: {shown}")
        verdicts = _verdicts(ready, False, failure)
        if failure is None:
            verdicts["Degraded"] = Verdict("True", "Drifted", ready.message)
    else:
        ready = Verdict("True", "InSync", f"{len(tables)} tables match the schema")
        verdicts = _verdicts(ready, False, failure)
    return BackendTableStatus(
        observed_generation=generation,
        conditions=conditions(verdicts, generation, previous, now),
        tables=tuple(tables),
        created=tuple(created),
        drift=tuple(drift),
        last_checked=now,
    )
