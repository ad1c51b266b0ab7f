"""What spark-operator users expect to set on an application, as parts of an IngestPipeline's
``batch`` spec, and what the pipeline's status mirrors of the application.

Each part maps to the ``sparkoperator.k8s.io/v1beta2`` field of the same meaning (named in
its description; the renderer is :mod:`chainloom_operator._render.spark_options`), with the
spec's snake_case names. Credentials never appear as values: a Secret is referenced by name
and mounted as files or read into an environment variable by the kubelet. Kubernetes' own
``affinity`` objects are passed through as written (camelCase, as in a pod spec); the API
server checks them when the spark-operator creates the pods.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from chainloom_operator.spec_parts import (
    Condition,
    PodPlacement,
    Quantity,
    ResourceName,
    SecretKeyRef,
    Spec,
    StatusPart,
    cel,
)

AbsolutePath = Annotated[str, Field(min_length=2, max_length=1024, pattern=r"^/[^:]*[^/:]$")]
"""An absolute path in a container (no trailing slash, no colon)."""
EnvName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
"""An environment variable's name."""
VolumeName = Annotated[
    str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
"""A volume's name (a DNS label)."""


class RestartPolicy(Spec):
    """When the spark-operator runs the application again (v1beta2 ``restartPolicy``)."""

    type: Literal["Never", "OnFailure", "Always"] = Field(
        default="Never",
        description="Never; OnFailure (a failed run or submission is retried, up to the counts "
        "below); Always (every run is followed by another).",
    )
    on_failure_retries: int | None = Field(
        default=None, ge=0, le=1000, description="Runs retried after a failure (onFailureRetries)."
    )
    on_failure_retry_interval: int | None = Field(
        default=None, ge=1, le=86400, description="Seconds between those (onFailureRetryInterval)."
    )
    on_submission_failure_retries: int | None = Field(
        default=None,
        ge=0,
        le=1000,
        description="Submissions retried after spark-submit failed (onSubmissionFailureRetries).",
    )
    on_submission_failure_retry_interval: int | None = Field(
        default=None,
        ge=1,
        le=86400,
        description="Seconds between those (onSubmissionFailureRetryInterval).",
    )

    def cel_checks(self) -> list[str]:
        counts = (
            self.on_failure_retries,
            self.on_failure_retry_interval,
            self.on_submission_failure_retries,
            self.on_submission_failure_retry_interval,
        )
        if self.type == "Never" and any(value is not None for value in counts):
            return ["restart_policy retries and intervals need type OnFailure or Always"]
        return []


cel(
    RestartPolicy,
    ("self.type != 'Never' || !(has(self.on_failure_retries) || "
     "has(self.on_failure_retry_interval) || has(self.on_submission_failure_retries) || "
     "has(self.on_submission_failure_retry_interval))",
     "restart_policy retries and intervals need type OnFailure or Always"),
)  # fmt: skip


class DynamicAllocation(Spec):
    """Executors added and removed with the work (v1beta2 ``dynamicAllocation``)."""

    enabled: bool = Field(default=False, description="Turn dynamic allocation on.")
    initial_executors: int | None = Field(
        default=None, ge=0, le=10000, description="Executors at the start (initialExecutors)."
    )
    min_executors: int | None = Field(
        default=None, ge=0, le=10000, description="Lower bound (minExecutors)."
    )
    max_executors: int | None = Field(
        default=None, ge=1, le=10000, description="Upper bound (maxExecutors)."
    )
    shuffle_tracking_enabled: bool | None = Field(
        default=None,
        description="Keep executors holding shuffle data (shuffleTrackingEnabled; Spark's "
        "default when dynamic allocation is on: true).",
    )

    def cel_checks(self) -> list[str]:
        low, start, high = self.min_executors, self.initial_executors, self.max_executors
        if low is not None and high is not None and low > high:
            return ["dynamic_allocation.min_executors must not exceed max_executors"]
        if start is not None and (
            (low is not None and start < low) or (high is not None and start > high)
        ):
            return ["dynamic_allocation.initial_executors must lie between min and max"]
        return []


cel(
    DynamicAllocation,
    ("!has(self.min_executors) || !has(self.max_executors) || "
     "self.min_executors <= self.max_executors",
     "dynamic_allocation.min_executors must not exceed max_executors"),
    ("!has(self.initial_executors) || ((!has(self.min_executors) || "
     "self.initial_executors >= self.min_executors) && (!has(self.max_executors) || "
     "self.initial_executors <= self.max_executors))",
     "dynamic_allocation.initial_executors must lie between min and max"),
)  # fmt: skip


class EmptyDir(Spec):
    """A scratch directory that lives as long as the pod."""

    medium: Literal["", "Memory"] = Field(default="", description="'' (node disk) or Memory.")
    size_limit: Quantity | None = Field(default=None, description="Upper bound (e.g. 1Gi).")


class Volume(Spec):
    """A volume of the driver and executors, and where it is mounted (v1beta2 ``volumes`` and
    the roles' ``volumeMounts``). Exactly one source."""

    name: VolumeName = Field(description="Volume name (unique in the pipeline).")
    mount_path: AbsolutePath = Field(description="Where the containers see it.")
    read_only: bool = Field(default=False, description="Mount read-only.")
    roles: tuple[Literal["driver", "executor"], ...] = Field(
        default=("driver", "executor"), min_length=1, description="Which pods mount it."
    )
    secret: ResourceName | None = Field(
        default=None, description="A Secret of the namespace, its keys as files."
    )
    config_map: ResourceName | None = Field(
        default=None, description="A ConfigMap of the namespace, its keys as files."
    )
    persistent_volume_claim: ResourceName | None = Field(
        default=None, description="A PersistentVolumeClaim of the namespace, by name."
    )
    empty_dir: EmptyDir | None = Field(default=None, description="A scratch directory.")

    def sources(self) -> list[str]:
        """The names of the sources given."""
        given = {"secret": self.secret, "config_map": self.config_map,
                 "persistent_volume_claim": self.persistent_volume_claim,
                 "empty_dir": self.empty_dir}  # fmt: skip
        return [name for name, value in given.items() if value is not None]

    def cel_checks(self) -> list[str]:
        if len(self.sources()) != 1:
            return [
                "give exactly one of secret, config_map, persistent_volume_claim and empty_dir "
                f"for volume {self.name}"
            ]
        return []


cel(
    Volume,
    ("[has(self.secret), has(self.config_map), has(self.persistent_volume_claim), "
     "has(self.empty_dir)].filter(x, x).size() == 1",
     "give exactly one of secret, config_map, persistent_volume_claim and empty_dir"),
)  # fmt: skip


class SecretFiles(Spec):
    """A Secret's keys as files in the driver and executors (v1beta2 ``secrets``, which
    spark-submit mounts itself)."""

    name: ResourceName = Field(description="Name of the Secret.")
    path: AbsolutePath = Field(description="Directory of the files.")
    secret_type: Literal["Generic", "GCPServiceAccount", "HadoopDelegationToken"] = Field(
        default="Generic",
        description="GCPServiceAccount also sets GOOGLE_APPLICATION_CREDENTIALS to PATH/key.json "
        "(a Bigtable service-account key stored under the key 'key.json').",
    )


class SecretEnv(Spec):
    """An environment variable of the driver and executors read from a Secret key (the
    application's ``envSecretKeyRefs``): the value never appears in the spec or the
    application."""

    name: EnvName = Field(description="The variable (e.g. CHAINLOOM_CASSANDRA__PASSWORD).")
    secret_ref: SecretKeyRef = Field(description="The Secret key holding its value.")


class Secrets(Spec):
    """Credentials (Bigtable, Cassandra, ...) from Secrets referenced by name, never values.

    The operator checks that each Secret exists (its metadata only) before it renders the
    application; a missing one is the MissingSecret condition.
    """

    files: tuple[SecretFiles, ...] = Field(default=(), max_length=16, description="As files.")
    env: tuple[SecretEnv, ...] = Field(
        default=(),
        max_length=64,
        description="As variables.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class SparkPlacement(PodPlacement):
    """Where the driver (or the executors) may run (v1beta2 ``driver``/``executor``
    ``nodeSelector``, ``tolerations``, ``affinity``)."""


class BatchScheduler(Spec):
    """A batch scheduler for gang scheduling (v1beta2 ``batchScheduler`` and
    ``batchSchedulerOptions.queue``)."""

    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The scheduler the spark-operator was started with (volcano, yunikorn, "
        "kube-scheduler).",
    )
    queue: str | None = Field(
        default=None, min_length=1, max_length=253, description="Its queue for the application."
    )


PriorityClassName = Annotated[
    str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")
]
"""The name of a PriorityClass."""


# --------------------------------------------------------------------------------------------
# Status


PipelineConditionType = Literal[
    "Ready", "Progressing", "Degraded", "SubmissionDelayed", "ReconciliationPaused"
]


class PipelineCondition(Condition):
    """A condition of an IngestPipeline: Ready, Progressing, Degraded, and SubmissionDelayed
    (the application waited past ``batch.start_deadline_seconds`` for its driver to run)."""

    type: PipelineConditionType = Field(description="Condition type.")  # type: ignore[assignment]


class Attempt(StatusPart):
    """One submission of the application (the spark-operator resubmits after a failure under
    restartPolicy OnFailure/Always, with a new submission id)."""

    application: str = Field(description="The SparkApplication (a schedule's run).")
    number: int = Field(description="Its submission attempt (submissionAttempts).")
    submission_id: str = Field(default="", description="status.submissionID of the attempt.")
    submitted: str = Field(default="", description="lastSubmissionAttemptTime of the attempt.")
    driver_pod: str = Field(default="", description="Its driver pod.")
    state: str = Field(
        default="", description="The application's last state seen during the attempt."
    )
    message: str = Field(default="", description="Its error message, if any.")
    terminated: str = Field(default="", description="terminationTime, once it has ended.")

    @field_validator("message")
    @classmethod
    def _short(cls, value: str) -> str:
        return value[:1024]


class ScheduleStatus(StatusPart):
    """What the ScheduledSparkApplication reports (a scheduled pipeline only)."""

    state: str = Field(default="", description="scheduleState (Scheduled, FailedValidation).")
    last_run: str = Field(default="", description="When the last run started (lastRun).")
    last_run_name: str = Field(default="", description="Its SparkApplication (lastRunName).")
    last_run_state: str = Field(default="", description="That application's state.")
    next_run: str = Field(default="", description="When the next run starts (nextRun).")
