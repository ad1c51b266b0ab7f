"""Pausing reconciliation: the annotation read, the ReconciliationPaused condition rendered
beside the others, and the annotation kept in what kopf compares (its diff base, cleared by its
progress storage), so setting or removing it is a change kopf hands to the update handler."""

from __future__ import annotations

from typing import Any, cast

import kopf
import pytest

from chainloom_operator._handlers.shared import PauseAwareDiffBase, PauseAwareProgress
from chainloom_operator._render.pause import (
    PAUSE_ANNOTATION,
    PAUSED,
    is_paused,
    paused_conditions,
)
from chainloom_operator.models import GROUP, BackendTableStatus, IngestPipelineStatus


def _body(value: str | None) -> dict[str, Any]:
    annotations = {} if value is None else {PAUSE_ANNOTATION: value}
    return {"metadata": {"name": "x", "annotations": annotations}, "spec": {"a": 1}}


@pytest.mark.parametrize(
    ("value", "paused"),
    [("true", True), ("True", True), (" TRUE ", True), ("false", False), ("", False),
     ("yes", False), (None, False)],
)  # fmt: skip
def test_only_true_pauses(value: str | None, paused: bool) -> None:
    assert is_paused(_body(value)) is paused


def test_no_metadata_is_not_paused() -> None:
    assert not is_paused({})
    assert not is_paused({"metadata": {"annotations": None}})


READY = {"type": "Ready", "status": "True", "reason": "InSync", "message": "13 tables",
         "observedGeneration": 2, "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip


def test_the_paused_condition_joins_the_others() -> None:
    conditions = paused_conditions([READY], generation=3, now="2026-02-02T00:00:00Z")
    assert conditions is not None
    assert conditions[0] == READY  # kept as it was
    assert conditions[1] == {
        "type": PAUSED,
        "status": "True",
        "reason": PAUSED,
        "message": f"annotation {PAUSE_ANNOTATION} is true: the operator leaves the children "
        "alone; remove it to resume",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-02-02T00:00:00Z",
    }
    # The status models (and so the CRDs' schemas) take the condition.
    BackendTableStatus.model_validate({"conditions": conditions})
    IngestPipelineStatus.model_validate({"conditions": conditions})


def test_nothing_to_write_while_it_says_so_and_the_time_is_kept_across_generations() -> None:
    first = paused_conditions([READY], generation=3, now="2026-02-02T00:00:00Z")
    assert first is not None
    assert paused_conditions(first, generation=3, now="2026-03-03T00:00:00Z") is None
    later = paused_conditions(first, generation=4, now="2026-03-03T00:00:00Z")
    assert later is not None
    assert [c["type"] for c in later] == ["Ready", PAUSED]
    assert later[1]["observedGeneration"] == 4
    assert later[1]["lastTransitionTime"] == "2026-02-02T00:00:00Z"


def test_a_false_paused_condition_turns_true_with_a_new_time() -> None:
    old = {**READY, "type": PAUSED, "status": "False", "reason": "x"}
    found = paused_conditions([old], generation=2, now="2026-02-02T00:00:00Z")
    assert found is not None
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in found] == [
        (PAUSED, "True", "2026-02-02T00:00:00Z")
    ]


def test_the_diff_base_keeps_the_pause_annotation_and_drops_kopfs_own() -> None:
    storage = PauseAwareDiffBase(prefix=GROUP)
    raw = _body("true")
    raw["metadata"]["annotations"] |= {
        f"{GROUP}/kopf-managed": "yes",
        f"{GROUP}/last-handled-configuration": "{}",
        "team.example/owner": "a",
    }
    raw["metadata"]["annotations"][f"{GROUP}/relayer_pool"] = '{"started": "x"}'  # progress
    # What kopf compares: the essence built, then cleared of the progress storage's keys.
    progress = PauseAwareProgress(prefix=GROUP)
    essence = progress.clear(essence=storage.build(body=kopf.Body(cast(kopf.RawBody, raw))))
    assert essence.get("metadata", {}).get("annotations") == {
        PAUSE_ANNOTATION: "true",
        "team.example/owner": "a",
    }
    unpaused = progress.clear(
        essence=storage.build(
            body=kopf.Body(cast(kopf.RawBody, {"metadata": {"name": "x"}, "spec": {"a": 1}}))
        )
    )
    assert unpaused != essence  # removing the annotation is a change kopf sees
    assert "annotations" not in unpaused.get("metadata", {})
