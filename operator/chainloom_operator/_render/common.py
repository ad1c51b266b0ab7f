"""What every child object carries: owner reference, labels, security context.

Owner references make the garbage collector delete the children with their resource; the
labels let the operator find its children (and prune those a spec change left behind) without
keeping any state of its own.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from chainloom_operator.models import API_VERSION, Placement, PodPlacement

MANAGED_BY = "chainloom-operator"
"""``app.kubernetes.io/managed-by`` of every child; also the server-side apply field manager."""
OWNER_KIND_LABEL = "chainloom.io/owner-kind"
"""Label naming the kind of a child's owner."""
OWNER_NAME_LABEL = "chainloom.io/owner-name"
"""Label naming a child's owner (with the kind, the selector of the owner's children)."""
CONFIG_HASH_ANNOTATION = "chainloom.io/config-hash"
"""Pod-template annotation: changes with the rendered configuration, so pods roll."""
RUN_AS_USER = 10001
"""The non-root user (and group) of every container (the image's ``chainloom`` user)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """The custom resource a set of children belongs to."""

    kind: str
    """IngestPipeline, RelayerPool or BackendTable."""
    name: str
    """metadata.name."""
    namespace: str
    """metadata.namespace (children live in the same namespace)."""
    uid: str
    """metadata.uid (the owner reference points at this incarnation)."""
    generation: int = 0
    """metadata.generation of the spec being rendered."""

    def selector(self) -> dict[str, str]:
        """Labels shared by all of this owner's children."""
        return {OWNER_KIND_LABEL: self.kind, OWNER_NAME_LABEL: self.name}


def owner_reference(owner: Owner) -> dict[str, Any]:
    """The controller owner reference of a child of ``owner``."""
    return {
        "apiVersion": API_VERSION,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def labels(owner: Owner, component: str, **extra: str) -> dict[str, str]:
    """The labels of a child: the recommended app.kubernetes.io set plus the owner's."""
    return {
        "app.kubernetes.io/name": "chainloom",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "chainloom",
        "app.kubernetes.io/managed-by": MANAGED_BY,
        **owner.selector(),
        **extra,
    }


def metadata(owner: Owner, name: str, child_labels: dict[str, str]) -> dict[str, Any]:
    """``metadata`` of a child named ``name``."""
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": dict(child_labels),
        "ownerReferences": [owner_reference(owner)],
    }


def content_hash(data: Any) -> str:
    """A short, stable hash of JSON-able ``data`` (config-hash annotations)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pod_security() -> dict[str, Any]:
    """The pod-level security context (non-root, runtime-default seccomp)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security() -> dict[str, Any]:
    """The container security context (the restricted Pod Security Standard)."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def placement(where: Placement) -> dict[str, Any]:
    """The pod-spec fields of a :class:`Placement` (none when it says nothing); a
    :class:`PodPlacement`'s affinity as Kubernetes' object, copied as written."""
    fields: dict[str, Any] = {}
    if where.node_selector:
        fields["nodeSelector"] = dict(where.node_selector)
    if where.tolerations:
        fields["tolerations"] = [
            {
                name: value
                for name, value in (
                    ("key", t.key), ("operator", t.operator), ("value", t.value),
                    ("effect", t.effect),
                )
                if value
            }
            for t in where.tolerations
        ]  # fmt: skip
    if isinstance(where, PodPlacement) and where.affinity is not None:
        affinity = where.affinity.kubernetes()
        if affinity:
            fields["affinity"] = copy.deepcopy(affinity)
    return fields


def telemetry_environment(
    otlp_endpoint: str | None, service_name: str, owner: Owner
) -> list[dict[str, Any]]:
    """The standard ``OTEL_*`` variables of a pod that exports to ``otlp_endpoint`` (none
    when it is None: telemetry stays off in the pod). The resource names the owner, so pods
    of two pools are told apart in the collector."""
    if otlp_endpoint is None:
        return []
    where = f"k8s.namespace.name={owner.namespace},chainloom.owner={owner.kind}/{owner.name}"
    return [
        {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": otlp_endpoint},
        {"name": "OTEL_SERVICE_NAME", "value": service_name},
        {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": where},
    ]


def resources(cpu: str, memory: str) -> dict[str, Any]:
    """Requests, with the memory request as the limit (no CPU limit: no throttling)."""
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}


def child_key(manifest: dict[str, Any]) -> tuple[str, str, str]:
    """``(apiVersion, kind, name)`` of a manifest: what identifies a child in a namespace."""
    return manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"]


def stale_children(
    rendered: list[dict[str, Any]], observed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Observed children (found by the owner's labels) that the rendering no longer contains."""
    wanted = {child_key(m) for m in rendered}
    return [m for m in observed if child_key(m) not in wanted]
