"""The RelayerPool's handlers: render and apply its Deployments, Service, ConfigMap and
NetworkPolicy; its status from the Deployments; its queue depths read by the recheck thread.

Its children are watched (``on.event`` filtered by the owner labels): a Deployment changing
refreshes the pool's status, any child deleted by hand is recreated.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import kopf

from chainloom_operator import _queues
from chainloom_operator._handlers.shared import (
    PLURALS,
    apply_all,
    child_labels,
    listed,
    now,
    on_child_event,
    owner_of,
    previous_conditions,
    reconciling,
    spec_of,
)
from chainloom_operator._kube import Cluster
from chainloom_operator._render.relayer import render_relayer_pool, secret_references
from chainloom_operator._render.status import (
    Failure,
    conditions,
    low_balance_verdict,
    previous_verdict,
    relayer_pool_status,
)
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import SpecError
from chainloom_operator.models import GROUP, VERSION, PoolCondition, RelayerPoolSpec

KIND = "RelayerPool"
POOL_KINDS = (("v1", "ConfigMap"), ("v1", "Service"), ("apps/v1", "Deployment"),
              ("networking.k8s.io/v1", "NetworkPolicy"))  # fmt: skip
"""The kinds a pool's children are."""
STATUS_SOURCES = ("Deployment",)
"""Children whose changes can change the pool's status."""
CHILD_LABELS = child_labels(KIND)


def reconcile_pool(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                   settings: OperatorSettings) -> float | None:  # fmt: skip
    owner = owner_of(KIND, body)
    spec = spec_of(RelayerPoolSpec, body["spec"])
    cluster.check_secrets(owner.namespace, secret_references(spec))
    rendered = render_relayer_pool(owner, spec, otlp_endpoint=settings.otlp_endpoint)
    apply_all(cluster, owner, rendered, POOL_KINDS)
    return refresh_pool_status(cluster, body, failure)


def refresh_pool_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> float | None:
    owner = owner_of(KIND, body)
    spec = spec_of(RelayerPoolSpec, body["spec"])
    deployments = cluster.children(owner, (("apps/v1", "Deployment"),))
    previous = previous_conditions(body)
    status = relayer_pool_status(spec, deployments, generation=owner.generation,
                                 previous=previous, now=now(), failure=failure,
                                 low_balance=previous_verdict(previous, "LowBalance"))  # fmt: skip
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name,
                         status.model_dump(mode="json", by_alias=True))  # fmt: skip
    return None


@kopf.on.resume(GROUP, VERSION, "relayerpools")
@kopf.on.create(GROUP, VERSION, "relayerpools")
@kopf.on.update(GROUP, VERSION, "relayerpools")
def relayer_pool(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Render and apply the pool's children; patch its status."""
    reconciling(KIND, body, memo, retry, reconcile=reconcile_pool, refresh=refresh_pool_status)


@kopf.on.event("apps", "v1", "deployments", labels=CHILD_LABELS)
@kopf.on.event("v1", "configmaps", labels=CHILD_LABELS)
@kopf.on.event("v1", "services", labels=CHILD_LABELS)
@kopf.on.event("networking.k8s.io", "v1", "networkpolicies", labels=CHILD_LABELS)
def pool_child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A pool's child changed: refresh the pool's status; a child deleted: reconcile the pool."""
    on_child_event(KIND, type, body, memo, status_sources=STATUS_SOURCES,
                   reconcile=reconcile_pool, refresh=refresh_pool_status)  # fmt: skip


def recheck_queues(cluster: Cluster, settings: OperatorSettings, stop: threading.Event) -> None:
    """Patch each RelayerPool's ``queueDepths`` and its LowBalance condition (pools whose
    Redis can be read); a wallet newly below its chain's ``minBalance`` is a Warning event."""
    for body in listed(cluster, KIND, settings.namespaces):
        if stop.is_set():
            return
        try:
            spec = spec_of(RelayerPoolSpec, body["spec"])
        except SpecError:
            continue
        readings = _queues.pool_readings(spec)
        if readings is None:
            continue
        depths, balances = readings
        patch: dict[str, Any] = {"queueDepths": depths}
        verdict = low_balance_verdict(spec, balances)
        previous = previous_conditions(body)
        before = previous_verdict(previous, "LowBalance")
        if verdict is not None and verdict != before:
            generation = body["metadata"].get("generation", 0)
            [changed] = conditions(
                {"LowBalance": verdict}, generation, previous, now(), PoolCondition
            )
            kept = [c for c in previous if c.get("type") != "LowBalance"]
            patch["conditions"] = [*kept, changed.model_dump(mode="json", by_alias=True)]
            if verdict.status == "True" and (before is None or before.status != "True"):
                cluster.post_event(body, "LowBalance", verdict.message)
        cluster.patch_status(PLURALS[KIND], body["metadata"]["namespace"],
                             body["metadata"]["name"], patch)  # fmt: skip
