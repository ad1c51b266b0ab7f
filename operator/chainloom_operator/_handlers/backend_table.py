"""The BackendTable's handlers: create the missing tables, report drift, drop the tables on
delete with ``deletion_policy: Delete``.

BackendTables are checked again every ``recheck_interval`` seconds by the recheck thread
(:mod:`chainloom_operator._handlers.startup`, :func:`recheck_tables`), not a kopf timer: a
timer would hold a finalizer on every table, and the finalizer belongs to ``deletion_policy:
Delete`` only.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import kopf

from chainloom_operator._handlers.shared import (
    PLURALS,
    Bookkeeping,
    give_up_or_retry,
    held,
    key_of,
    listed,
    log,
    now,
    owner_of,
    previous_conditions,
    reconciling,
    spec_of,
)
from chainloom_operator._kube import Cluster
from chainloom_operator._render.status import Failure, table_status
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import OperatorError
from chainloom_operator.models import GROUP, VERSION, BackendTableSpec

KIND = "BackendTable"


def reconcile_table(cluster: Cluster, body: Mapping[str, Any], failure: Failure | None,
                    settings: OperatorSettings) -> float | None:  # fmt: skip
    del settings  # nothing rendered: the backend's tables only
    from chainloom_operator import _backends  # noqa: PLC0415 (its clients cost ~40 MB: loaded with the first table)

    owner = owner_of(KIND, body)
    spec = spec_of(BackendTableSpec, body["spec"])
    outcome = _backends.ensure(spec)
    # Tables the operator has created over the resource's life (a later check creates none);
    # read afresh, as the recheck thread may have written the status since ``body`` was read.
    current = cluster.get_custom(PLURALS[KIND], owner.namespace, owner.name) or body
    before = (current.get("status") or {}).get("created") or []
    created = [t for t in dict.fromkeys([*before, *outcome.created]) if t in outcome.tables]
    status = table_status(outcome.tables, created, outcome.drift,
                          generation=owner.generation, previous=previous_conditions(body),
                          now=now(), failure=failure)  # fmt: skip
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name,
                         status.model_dump(mode="json", by_alias=True))  # fmt: skip
    return None


def refresh_table_status(
    cluster: Cluster, body: Mapping[str, Any], failure: Failure | None
) -> float | None:
    """Record ``failure`` on a table (its schema is not read again here)."""
    owner = owner_of(KIND, body)
    status = body.get("status") or {}
    found = table_status(status.get("tables", ()), status.get("created", ()), (),
                         generation=owner.generation, previous=previous_conditions(body),
                         now=now(), failure=failure)  # fmt: skip
    patch = found.model_dump(
        mode="json", by_alias=True, include={"conditions", "observed_generation"}
    )
    cluster.patch_status(PLURALS[KIND], owner.namespace, owner.name, patch)
    return None


@kopf.on.resume(GROUP, VERSION, "backendtables")
@kopf.on.create(GROUP, VERSION, "backendtables")
@kopf.on.update(GROUP, VERSION, "backendtables")
def backend_table(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Create the missing tables; report drift in status."""
    reconciling(KIND, body, memo, retry, reconcile=reconcile_table, refresh=refresh_table_status)


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
