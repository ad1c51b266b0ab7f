"""The BackendTable's handlers: create the missing tables, report drift, drop the tables on
delete with ``deletion_policy: Delete``; with ``spec.api``, render the API serving them
(Deployment, Service, PodDisruptionBudget, ConfigMap) and report its readiness.

BackendTables are checked again every ``recheck_interval`` seconds by the recheck thread
(:mod:`chainloom_operator._handlers.startup`, :func:`recheck_tables`), not a kopf timer: a
timer would hold a finalizer on every table, and the finalizer belongs to ``deletion_policy:
Delete`` only. The API's children are watched as the other kinds' are: its Deployment
changing refreshes the status, a child deleted by hand is recreated.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import kopf

from chainloom_operator._handlers.shared import (
    PLURALS,
    Bookkeeping,
    apply_all,
    child_labels,
    give_up_or_retry,
    held,
    key_of,
    listed,
    log,
    now,
    on_child_event,
    owner_of,
    previous_conditions,
    reconciling,
    spec_of,
)
from chainloom_operator._kube import Cluster
from chainloom_operator._render.api import api_name, api_status, render_api, secret_references
from chainloom_operator._render.common import Owner
from chainloom_operator._render.google import service_account
from chainloom_operator._render.status import Failure, deployment_available, table_status
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import OperatorError
from chainloom_operator.models import GROUP, VERSION, ApiStatus, BackendTableSpec, Drift

KIND = "BackendTable"
CHILD_KINDS = (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Service"),
               ("policy/v1", "PodDisruptionBudget"), ("v1", "ServiceAccount"))  # fmt: skip
"""The kinds the table's children are: the API's, and the Workload Identity ServiceAccount."""
STATUS_SOURCES = ("Deployment",)
"""Children whose changes can change the table's status."""
CHILD_LABELS = child_labels(KIND)


def _api(cluster: Cluster, owner: Owner, spec: BackendTableSpec
         ) -> tuple[tuple[str, ApiStatus | None], bool]:  # fmt: skip
    """The API's part of the status (:func:`api_status`) and whether it is available."""
    if spec.api is None:
        return ("", None), True
    found = next((d for d in cluster.children(owner, (("apps/v1", "Deployment"),))
                  if d["metadata"]["name"] == api_name(owner)), None)  # fmt: skip
    return api_status(owner, spec, found), found is not None and deployment_available(found)


def reconcile_table(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                    settings: OperatorSettings) -> float | None:  # fmt: skip
    from chainloom_operator import _backends  # noqa: PLC0415 (its clients cost ~40 MB: loaded with the first table)

    owner = owner_of(KIND, body)
    spec = spec_of(BackendTableSpec, body["spec"])
    cluster.check_secrets(owner.namespace, secret_references(spec))
    outcome = _backends.ensure(spec)
    children = [*service_account(owner, spec.google),
                *render_api(owner, spec, otlp_endpoint=settings.otlp_endpoint)]  # fmt: skip
    apply_all(cluster, owner, children, CHILD_KINDS)
    # Tables the operator has created over the resource's life (a later check creates none);
    # read afresh, as the recheck thread may have written the status since ``body`` was read.
    current = cluster.get_custom(PLURALS[KIND], owner.namespace, owner.name) or body
    before = (current.get("status") or {}).get("created") or []
    created = [t for t in dict.fromkeys([*before, *outcome.created]) if t in outcome.tables]
    api, available = _api(cluster, owner, spec)
    status = table_status(outcome.tables, created, outcome.drift,
                          generation=owner.generation, previous=previous_conditions(current),
                          now=now(), failure=failure, api=api,
                          api_available=available)  # fmt: skip
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name,
                         status.model_dump(mode="json", by_alias=True))  # fmt: skip
    return None


def refresh_table_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> float | None:
    """Record ``failure`` and the API's readiness (the schema is not read again here)."""
    owner = owner_of(KIND, body)
    spec = spec_of(BackendTableSpec, body["spec"])
    status = body.get("status") or {}
    drift = [Drift.model_validate(d) for d in status.get("drift") or ()]
    api, available = _api(cluster, owner, spec)
    found = table_status(status.get("tables", ()), status.get("created", ()), drift,
                         generation=owner.generation, previous=previous_conditions(body),
                         now=now(), failure=failure, api=api,
                         api_available=available)  # fmt: skip
    patch = found.model_dump(
        mode="json", by_alias=True,
        include={"conditions", "observed_generation", "api_ready", "api"},
    )  # fmt: skip
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name, patch)
    return None


@kopf.on.resume(GROUP, VERSION, "backendtables")
@kopf.on.create(GROUP, VERSION, "backendtables")
@kopf.on.update(GROUP, VERSION, "backendtables")
def backend_table(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Create the missing tables; report drift in status."""
    reconciling(KIND, body, memo, retry, reconcile=reconcile_table, refresh=refresh_table_status)


@kopf.on.event("apps", "v1", "deployments", labels=CHILD_LABELS)
@kopf.on.event("v1", "configmaps", labels=CHILD_LABELS)
@kopf.on.event("v1", "services", labels=CHILD_LABELS)
@kopf.on.event("policy", "v1", "poddisruptionbudgets", labels=CHILD_LABELS)
def table_child_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A child of the table's API changed: refresh the table's status; a child deleted:
    reconcile the table."""
    on_child_event(KIND, type, body, memo, status_sources=STATUS_SOURCES,
                   reconcile=reconcile_table, refresh=refresh_table_status)  # fmt: skip


@kopf.on.delete(GROUP, VERSION, "backendtables", field="spec.deletion_policy", value="Delete")
def drop_backend_table(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """deletion_policy Delete: drop the tables, then kopf removes the finalizer."""
    from chainloom_operator import _backends  # noqa: PLC0415 (see reconcile_table)

    try:
        _backends.drop(spec_of(BackendTableSpec, body["spec"]))
    except OperatorError as error:
        give_up_or_retry(body, error, retry, memo["settings"])


def recheck_tables(cluster: Cluster, settings: OperatorSettings, stop: threading.Event,
                   books: Bookkeeping) -> None:  # fmt: skip
    """Check each BackendTable's schema (in the watched namespaces) and patch its status."""
    for body in listed(cluster, KIND, settings.namespaces):
        if body["metadata"].get("deletionTimestamp") or stop.is_set():
            continue
        key = key_of(KIND, body)
        with books.lock(key):
            fresh = cluster.get_custom(PLURALS[KIND], key[1], key[2])  # after the lock
            if fresh is None or fresh["metadata"].get("deletionTimestamp"):
                continue
            try:
                if held(KIND, fresh, cluster, "the schema check"):
                    continue
                reconcile_table(cluster, fresh, None, settings)
            except OperatorError as error:
                log.warning("BackendTable %s/%s: %s", key[1], key[2], error)
                refresh_table_status(cluster, fresh, Failure(error.reason, str(error)))
            except Exception:
                log.exception("BackendTable recheck failed")
