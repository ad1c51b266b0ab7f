"""The parts every custom resource's models are made of: the API group, the spec base with its
CEL rules, small shared spec parts (Secret keys, resources, placement) and the status base.

Apart from :mod:`chainloom_operator.models` so that the Spark application's options
(:mod:`chainloom_operator.spark_models`) build on them without importing the kinds' models.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from chainloom.settings.parts import Part

GROUP = "chainloom.io"
"""API group of the custom resources."""
VERSION = "v1alpha1"
"""Their one served and stored version."""
API_VERSION = f"{GROUP}/{VERSION}"
"""``apiVersion`` of every custom resource."""

DnsLabel = Annotated[
    str, Field(min_length=1, max_length=30, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
"""A short DNS label (it becomes part of child object names)."""
ResourceName = Annotated[
    str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")
]
"""The name of another object in the same namespace (a Secret, a BackendTable)."""
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")]
"""A Kubernetes resource quantity (``250m``, ``128Mi``)."""


def reused(model: type[BaseModel], name: str) -> Any:
    """Field ``name`` of a service's settings ``model``, to declare again in a spec model.

    The copy keeps the field's constraints, default and description; the spec model repeats
    only the annotation (for the type checker), which ``tests/unit/operator/test_models.py``
    compares with the original.
    """
    return copy.deepcopy(model.model_fields[name])


class Spec(Part):
    """Base of every spec model: frozen, unknown keys refused (as in the settings models)."""

    def cel_checks(self) -> list[str]:
        """Messages of the CEL rules this object breaks (checked here as the server does)."""
        return []

    @model_validator(mode="after")
    def _cel_rules(self) -> Spec:
        broken = self.cel_checks()
        if broken:
            raise ValueError("; ".join(broken))
        return self


CEL_RULES: dict[type[BaseModel], list[dict[str, str]]] = {}
"""CEL ``x-kubernetes-validations`` per model, mirrored by the model's :meth:`Spec.cel_checks`."""


def cel(model_type: type[Spec], *rules: tuple[str, str]) -> None:
    """Declare ``(rule, message)`` CEL rules of ``model_type``."""
    CEL_RULES[model_type] = [{"rule": rule, "message": message} for rule, message in rules]


# --------------------------------------------------------------------------------------------
# Shared


class SecretKeyRef(Spec):
    """One key of a Secret in the resource's namespace."""

    name: ResourceName = Field(description="Name of the Secret.")
    key: str = Field(
        default="key",
        min_length=1,
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="Key inside the Secret.",
    )


class Resources(Spec):
    """CPU and memory of a container (requests; the limit is the memory request)."""

    cpu: Quantity = Field(default="100m", description="CPU request.")
    memory: Quantity = Field(default="128Mi", description="Memory request and limit.")


class Toleration(Spec):
    """A taint the pods tolerate (Kubernetes' ``Toleration``, the fields a placement needs)."""

    key: str = Field(default="", max_length=253, description="Taint key; empty matches every key.")
    operator: Literal["Exists", "Equal"] = Field(
        default="Equal", description="Exists (any value) or Equal (the value below)."
    )
    value: str = Field(default="", max_length=63, description="Taint value, for Equal.")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="", description="Taint effect; empty matches every effect."
    )


class Placement(Spec):
    """Where the pods may run: copied into every pod template the resource renders."""

    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels a node must carry (nodeSelector)."
    )
    tolerations: tuple[Toleration, ...] = Field(
        default=(), description="Taints the pods tolerate (e.g. dedicated nodes)."
    )


class Affinity(Spec):
    """Kubernetes' ``affinity`` of a pod, its three parts as in a pod spec (camelCase inside)."""

    node_affinity: dict[str, Any] | None = Field(
        default=None, description="nodeAffinity (requiredDuringScheduling..., preferred...)."
    )
    pod_affinity: dict[str, Any] | None = Field(default=None, description="podAffinity.")
    pod_anti_affinity: dict[str, Any] | None = Field(default=None, description="podAntiAffinity.")

    def kubernetes(self) -> dict[str, Any]:
        """The pod-spec ``affinity`` object."""
        parts = (("nodeAffinity", self.node_affinity), ("podAffinity", self.pod_affinity),
                 ("podAntiAffinity", self.pod_anti_affinity))  # fmt: skip
        return {name: value for name, value in parts if value is not None}


class PodPlacement(Placement):
    """Where the pods may run: node selector, tolerations, and node and pod (anti-)affinity."""

    affinity: Affinity | None = Field(default=None, description="Node and pod (anti-)affinity.")


class StatusPart(BaseModel):
    """Base of the status models: camelCase on the wire, as Kubernetes tools read status.

    ``kubectl wait --for=condition=Ready`` and kstatus-based tools (Helm, Flux, Argo CD) look
    for ``status.observedGeneration`` and ``status.conditions``; the spec keeps the settings'
    names (see the module docstring), the status follows the Kubernetes convention.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel,
                              populate_by_name=True)  # fmt: skip


class Condition(StatusPart):
    """One condition of a resource's status (the Kubernetes ``metav1.Condition`` fields)."""

    type: Literal["Ready", "Progressing", "Degraded", "ReconciliationPaused"] = Field(
        description="Condition type (ReconciliationPaused: the pause annotation is set)."
    )
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="One CamelCase word for the state.")
    message: str = Field(default="", description="What is going on, for a person.")
    observed_generation: int = Field(
        default=0, description="metadata.generation of the spec this condition describes."
    )
    last_transition_time: str = Field(
        default="", description="When status last changed (RFC 3339)."
    )


class Status(StatusPart):
    """Fields every status has."""

    observed_generation: int = Field(
        default=0, description="metadata.generation of the spec last reconciled."
    )
    conditions: tuple[Condition, ...] = Field(
        default=(), description="Ready, Progressing, Degraded (and ReconciliationPaused)."
    )
