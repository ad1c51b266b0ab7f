"""The spark-operator options of an IngestPipeline's ``batch`` spec, as the
``sparkoperator.k8s.io/v1beta2`` fields of its SparkApplication (pure).

:func:`chainloom_spark.manifest.render_application` renders what ``chainloom spark manifest``
needs (image, sizes, the job); :func:`with_options` adds what a spark-operator user sets on an
application: ``restartPolicy``, ``timeToLiveSeconds``, ``dynamicAllocation``, ``volumes`` and
the roles' ``volumeMounts``, Secrets (``secrets`` as files, ``env`` from ``secretKeyRef``),
placement per role (``nodeSelector``, ``tolerations``, ``affinity``), ``priorityClassName`` and
``batchScheduler`` with ``batchSchedulerOptions.queue``.

Which of them the spark-operator applies itself and which through its mutating webhook is
its business (docs/operator.md, "Spark options"): restartPolicy, timeToLiveSeconds,
dynamicAllocation, ``secrets`` and volumes of the local kinds (emptyDir, persistentVolumeClaim)
go through spark-submit; ``env``, secret and ConfigMap volumes, ``affinity``, ``tolerations``,
per-role ``nodeSelector`` and ``priorityClassName`` are patched into the pods by its webhook.
"""

from __future__ import annotations

import copy
from typing import Any

from chainloom_operator._render.common import placement
from chainloom_operator.models import BatchSpec
from chainloom_operator.spark_models import RestartPolicy, Volume

ROLES = ("driver", "executor")
"""The two kinds of pods of an application."""


def restart_policy(policy: RestartPolicy) -> dict[str, Any]:
    """``spec.restartPolicy``."""
    fields = (
        ("onFailureRetries", policy.on_failure_retries),
        ("onFailureRetryInterval", policy.on_failure_retry_interval),
        ("onSubmissionFailureRetries", policy.on_submission_failure_retries),
        ("onSubmissionFailureRetryInterval", policy.on_submission_failure_retry_interval),
    )
    return {"type": policy.type, **{name: value for name, value in fields if value is not None}}


def volume(source: Volume) -> dict[str, Any]:
    """One entry of ``spec.volumes``."""
    if source.secret is not None:
        return {"name": source.name, "secret": {"secretName": source.secret}}
    if source.config_map is not None:
        return {"name": source.name, "configMap": {"name": source.config_map}}
    if source.persistent_volume_claim is not None:
        return {"name": source.name,
                "persistentVolumeClaim": {"claimName": source.persistent_volume_claim,
                                          "readOnly": source.read_only}}  # fmt: skip
    assert source.empty_dir is not None
    empty: dict[str, Any] = {}
    if source.empty_dir.medium:
        empty["medium"] = source.empty_dir.medium
    if source.empty_dir.size_limit:
        empty["sizeLimit"] = source.empty_dir.size_limit
    return {"name": source.name, "emptyDir": empty}


def _role(batch: BatchSpec, role: str, pod: dict[str, Any]) -> dict[str, Any]:
    """The ``driver`` or ``executor`` section with the options that concern it."""
    pod = copy.deepcopy(pod)
    mounts = [{"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only}
              for v in batch.volumes if role in v.roles]  # fmt: skip
    if mounts:
        pod["volumeMounts"] = mounts
    if batch.secrets.files:
        pod["secrets"] = [{"name": f.name, "path": f.path, "secretType": f.secret_type}
                          for f in batch.secrets.files]  # fmt: skip
    if batch.secrets.env:
        # envSecretKeyRefs, not env[].valueFrom: spark-submit applies these itself
        # (spark.kubernetes.{driver,executor}.secretKeyRef.*), with or without the webhook.
        pod["envSecretKeyRefs"] = {
            e.name: {"name": e.secret_ref.name, "key": e.secret_ref.key} for e in batch.secrets.env
        }
    pod.update(placement(batch.driver_placement if role == "driver" else batch.executor_placement))
    if batch.priority_class_name is not None:
        pod["priorityClassName"] = batch.priority_class_name
    return pod


def with_options(spec: dict[str, Any], batch: BatchSpec) -> dict[str, Any]:
    """The SparkApplication ``spec`` with ``batch``'s spark-operator options (a new dict)."""
    out = copy.deepcopy(spec)
    out["restartPolicy"] = restart_policy(batch.restart_policy)
    if batch.time_to_live_seconds is not None:
        out["timeToLiveSeconds"] = batch.time_to_live_seconds
    allocation = batch.dynamic_allocation
    if allocation is not None:
        fields = (
            ("initialExecutors", allocation.initial_executors),
            ("minExecutors", allocation.min_executors),
            ("maxExecutors", allocation.max_executors),
            ("shuffleTrackingEnabled", allocation.shuffle_tracking_enabled),
        )
        out["dynamicAllocation"] = {
            "enabled": allocation.enabled,
            **{name: value for name, value in fields if value is not None},
        }
    if batch.volumes:
        out["volumes"] = [volume(v) for v in batch.volumes]
    if batch.batch_scheduler is not None:
        out["batchScheduler"] = batch.batch_scheduler.name
        if batch.batch_scheduler.queue is not None:
            out["batchSchedulerOptions"] = {"queue": batch.batch_scheduler.queue}
    for role in ROLES:
        out[role] = _role(batch, role, out.get(role, {}))
    return out


def secret_references(batch: BatchSpec) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of every Secret the application refers to, to check that
    each exists before it is rendered (a Secret's metadata only is read)."""
    found = [(f.name, "", f"files at {f.path}") for f in batch.secrets.files]
    found += [(e.secret_ref.name, e.secret_ref.key, f"variable {e.name}")
              for e in batch.secrets.env]  # fmt: skip
    found += [(v.secret, "", f"volume {v.name}") for v in batch.volumes if v.secret is not None]
    return found
