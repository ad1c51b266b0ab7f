"""Pausing a resource's reconciliation, decided from its body (pure).

An annotation ``chainloom.io/pause-reconciliation: "true"`` on any of the three kinds tells the
operator to leave the resource's children alone (no create, update or delete, whatever
triggers it), as Strimzi's ``strimzi.io/pause-reconciliation`` does; the status says so with a
``ReconciliationPaused`` condition (status True) beside the conditions it had when paused.
Removing the annotation (or any value but ``true``) resumes: the next reconcile renders the
current spec, and its status no longer carries the condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from chainloom_operator.models import Condition

PAUSE_ANNOTATION = "chainloom.io/pause-reconciliation"
"""The annotation that pauses a resource's reconciliation (value ``"true"``)."""
PAUSED: Final = "ReconciliationPaused"
"""The type (and reason) of the condition a paused resource carries."""


def is_paused(body: Mapping[str, Any]) -> bool:
    """The resource carries the pause annotation with the value ``true`` (any case)."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PAUSE_ANNOTATION, "")).strip().lower() == "true"


def paused_conditions(
    previous: Sequence[Mapping[str, Any]], *, generation: int, now: str
) -> list[dict[str, Any]] | None:
    """The conditions of a paused resource: the ones it had, and ``ReconciliationPaused``
    True for ``generation`` (its transition time kept while it stays True); None when
    ``previous`` says exactly that already (nothing to write)."""
    others = [dict(c) for c in previous if c.get("type") != PAUSED]
    old = next((c for c in previous if c.get("type") == PAUSED), {})
    if old.get("status") == "True" and old.get("observedGeneration") == generation:
        return None
    since = old.get("lastTransitionTime") if old.get("status") == "True" else None
    condition = Condition(
        type=PAUSED,
        status="True",
        reason=PAUSED,
        message=f"annotation {PAUSE_ANNOTATION} is true: the operator leaves the children "
        "alone; remove it to resume",
        observed_generation=generation,
        last_transition_time=since or now,
    )
    return [*others, condition.model_dump(mode="json", by_alias=True)]
