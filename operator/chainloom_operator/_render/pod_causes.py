"""Why a pod cannot start, read from its status (pure): the cause an IngestPipeline's condition
names instead of a silent Pending.

The kubelet and the scheduler say it in the pod's status: a container waiting with
``ErrImagePull``/``ImagePullBackOff`` (the image cannot be pulled), ``CreateContainerConfigError``
(a Secret, a key or a ConfigMap the container refers to is missing), or the ``PodScheduled``
condition False with reason ``Unschedulable`` (no node has room or matches the placement). Their
messages are the kubelet's and the scheduler's own; they name objects, never a Secret's value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

IMAGE_PULL_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)
"""Waiting reasons of a container whose image cannot be had."""
CONFIG_REASONS = frozenset({"CreateContainerConfigError"})
"""Waiting reason of a container whose environment or mounts refer to something missing."""
START_REASONS = frozenset({"CreateContainerError", "RunContainerError"})
"""Waiting reasons of a container the runtime could not create or start."""


@dataclass(frozen=True, slots=True)
class PodCause:
    """Why a pod does not start."""

    reason: str
    """CamelCase: ImagePullFailed, Unschedulable, MissingSecret, MissingConfigMap,
    ContainerConfigError or ContainerStartFailed."""
    message: str
    """What the kubelet or the scheduler said, with the pod's name."""


def _config_reason(message: str) -> str:
    lowered = message.lower()
    if "secret" in lowered and ("not found" in lowered or "couldn't find" in lowered):
        return "MissingSecret"
    if "configmap" in lowered and ("not found" in lowered or "couldn't find" in lowered):
        return "MissingConfigMap"
    return "ContainerConfigError"


def _waiting(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], str]]:
    """``(container, waiting state, image)`` of each waiting container, init containers first."""
    status = pod.get("status") or {}
    found = []
    for field in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(field) or []:
            waiting = (container.get("state") or {}).get("waiting")
            if waiting:
                found.append((container.get("name", ""), waiting, container.get("image", "")))
    return found


def start_failure(pod: Mapping[str, Any] | None) -> PodCause | None:
    """Why ``pod`` cannot start, or None (no pod, a pod that runs or ended, or one that is
    only slow: pulling, being scheduled)."""
    if not pod:
        return None
    name = (pod.get("metadata") or {}).get("name", "")
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "Pending"):
        return None
    for condition in status.get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            said = condition.get("message") or "no node fits it"
            return PodCause("Unschedulable", f"pod {name} cannot be scheduled: {said}")
    for container, waiting, image in _waiting(pod):
        cause = _container_cause(name, container, waiting, image)
        if cause is not None:
            return cause
    return None


def _container_cause(
    pod: str, container: str, waiting: Mapping[str, Any], image: str
) -> PodCause | None:
    reason = waiting.get("reason", "")
    said = waiting.get("message") or reason
    if reason in IMAGE_PULL_REASONS:
        return PodCause(
            "ImagePullFailed",
            f"pod {pod}: container {container} cannot pull image {image} ({reason}): {said}",
        )
    if reason in CONFIG_REASONS:
        return PodCause(_config_reason(said), f"pod {pod}: container {container}: {said}")
    if reason in START_REASONS:
        return PodCause(
            "ContainerStartFailed", f"pod {pod}: container {container} ({reason}): {said}"
        )
    return None
