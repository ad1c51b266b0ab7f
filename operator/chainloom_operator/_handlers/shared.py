"""What the handlers of every kind share: bookkeeping, apply-and-prune, retry, child events.

Each reconcile is the same four steps: validate the spec with its model, render the children
(:mod:`chainloom_operator._render`), server-side apply them and delete the ones the rendering
no longer has (:mod:`chainloom_operator._kube`), and patch the status computed from what the
cluster reports. It is level-based and idempotent, so the same function serves create, update,
resume (operator restart) and the repair of a child someone deleted.

Failures a user can act on (a missing Secret, sink or CRD, an unreachable database) become a
Warning event on the resource and its ``Degraded`` condition, then a retry after a growing,
jittered wait, at most ``retries`` times; a spec the models refuse is not retried (only a new
spec can fix it).

A resource annotated ``chainloom.io/pause-reconciliation: "true"`` is held here, in one place
for every kind (:func:`held`): whatever triggers its reconcile or status refresh (a spec
change, a child's event, a wake-up, the recheck) only writes its ``ReconciliationPaused``
condition, and nothing touches its children until the annotation goes
(:mod:`chainloom_operator._render.pause`).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, cast

import kopf
from pydantic import ValidationError

from chainloom.settings.loader import describe_validation_error
from chainloom_operator._kube import Cluster
from chainloom_operator._render.common import (
    OWNER_KIND_LABEL,
    OWNER_NAME_LABEL,
    Owner,
    stale_children,
)
from chainloom_operator._render.pause import PAUSE_ANNOTATION, is_paused, paused_conditions
from chainloom_operator._render.status import Failure
from chainloom_operator.config import OperatorSettings
from chainloom_operator.errors import OperatorError, SpecError
from chainloom_operator.metrics import OperatorMetrics
from chainloom_operator.models import Spec

log = logging.getLogger("chainloom.operator")

PLURALS = {"IngestPipeline": "ingestpipelines", "RelayerPool": "relayerpools",
           "BackendTable": "backendtables"}  # fmt: skip
"""Kind -> plural of the custom resources."""
FINALIZER = "chainloom.io/finalizer"
"""The finalizer of a BackendTable with ``deletion_policy: Delete``."""
S = TypeVar("S", bound=Spec)
_random = random.Random()  # noqa: S311 (jitter, not secrets)


def child_labels(kind: str) -> dict[str, Any]:
    """The label filter of the watches on the children of ``kind``."""
    return {OWNER_KIND_LABEL: kind, OWNER_NAME_LABEL: kopf.PRESENT}


def now() -> str:
    """The current time as the conditions carry it (RFC 3339, seconds)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def owner_of(kind: str, body: Mapping[str, Any]) -> Owner:
    """The :class:`Owner` of the children of the resource ``body``."""
    meta = body["metadata"]
    return Owner(kind, meta["name"], meta["namespace"], meta["uid"], meta.get("generation", 0))


def spec_of(model: type[S], raw: Mapping[str, Any]) -> S:
    """``raw`` validated by ``model``; a SpecError naming the field when it is refused."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as error:
        raise SpecError(describe_validation_error(error, "spec")) from None


def previous_conditions(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conditions the resource's status holds now."""
    conditions: list[dict[str, Any]] = (body.get("status") or {}).get("conditions") or []
    return conditions


def _with_pause(essence: kopf.BodyEssence, source: Mapping[str, Any]) -> kopf.BodyEssence:
    """``essence`` with the pause annotation of ``source`` (a body or an essence) put back."""
    value = ((source.get("metadata") or {}).get("annotations") or {}).get(PAUSE_ANNOTATION)
    if value is not None:
        metadata: Any = essence.setdefault("metadata", {})
        metadata.setdefault("annotations", {})[PAUSE_ANNOTATION] = value
    return essence


class PauseAwareDiffBase(kopf.AnnotationsDiffBaseStorage):
    """kopf's diff base (what it compares to call an update handler), with the pause annotation
    kept in it: kopf leaves out every annotation under its own storage prefix
    (``chainloom.io``), so setting or removing the annotation would otherwise not be a change
    kopf reacts to, and a resource would stay paused until its next spec change."""

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        return _with_pause(super().build(body=body, extra_fields=extra_fields), body)


class PauseAwareProgress(kopf.AnnotationsProgressStorage):
    """kopf's progress storage, which also clears the annotations under its prefix out of
    the essence before the comparison: it keeps the pause annotation there (see
    :class:`PauseAwareDiffBase`)."""

    def clear(self, *, essence: kopf.BodyEssence) -> kopf.BodyEssence:
        return _with_pause(super().clear(essence=essence), cast(Mapping[str, Any], essence))


def held(kind: str, body: Mapping[str, Any], cluster: Cluster, trigger: str) -> bool:
    """True when the resource ``body`` is paused: then its ``ReconciliationPaused`` condition
    is written (unless the status has it for this generation already), a log line says what
    was left alone (``trigger``), and the caller does nothing else."""
    if not is_paused(body):
        return False
    meta = body["metadata"]
    log.info("%s %s/%s: paused (%s): %s left alone", kind, meta["namespace"], meta["name"],
             PAUSE_ANNOTATION, trigger)  # fmt: skip
    conditions = paused_conditions(previous_conditions(body),
                                   generation=meta.get("generation", 0), now=now())  # fmt: skip
    if conditions is not None:
        cluster.patch_status(PLURALS[kind], meta["namespace"], meta["name"],
                             {"conditions": conditions})  # fmt: skip
    return True


Reconcile = Callable[[Cluster, Mapping[str, Any], Failure | None, OperatorSettings], float | None]
"""A kind's reconcile: render and apply its children (with the operator's settings: the OTLP
endpoint the pods get), then patch its status; returns what its status refresh returned."""
Refresh = Callable[[Cluster, Mapping[str, Any], Failure | None], float | None]
"""A kind's status refresh: patch the status from what the cluster reports (and ``failure``);
returns the seconds after which it must run again although nothing changes (a deadline in the
status passes then), or None."""


class Bookkeeping:
    """Per-resource locks and last failures, shared by the handler threads of one operator.

    A reconcile and a status refresh triggered by a child's event must not interleave (the
    refresh could patch a stale Degraded over a fresh Ready), so both hold the resource's
    lock; the failure of the last reconcile is kept here, not read back from the status.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self.failures: dict[tuple[str, str, str], Failure] = {}

        self._timers: dict[tuple[str, str, str], threading.Timer] = {}

    def lock(self, key: tuple[str, str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def wake(self, key: tuple[str, str, str], after: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` in ``after`` seconds (in a thread of its own), instead of any wake-up
        of ``key`` still pending."""
        timer = threading.Timer(after, callback)
        timer.daemon = True
        with self._guard:
            pending = self._timers.pop(key, None)
            if pending is not None:
                pending.cancel()
            self._timers[key] = timer
        timer.start()

    def stop(self) -> None:
        """Cancel every pending wake-up."""
        with self._guard:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()


def key_of(kind: str, body: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(kind, namespace, name)``: the key of a resource in :class:`Bookkeeping`."""
    return kind, body["metadata"]["namespace"], body["metadata"]["name"]


def apply_all(cluster: Cluster, owner: Owner, rendered: list[dict[str, Any]],
              kinds: tuple[tuple[str, str], ...]) -> None:  # fmt: skip
    """Apply every rendered child; delete the owner's children of ``kinds`` no longer rendered."""
    for manifest in rendered:
        cluster.apply(manifest)
    for stale in stale_children(rendered, cluster.children(owner, kinds)):
        log.info("deleting %s/%s no longer rendered", stale["kind"], stale["metadata"]["name"])
        cluster.delete(stale)


def give_up_or_retry(
    body: kopf.Body, error: OperatorError, retry: int, settings: OperatorSettings
) -> None:
    """Tell the user (event), then stop (bad spec, or ``retries`` attempts made) or retry later."""
    kopf.warn(body, reason=error.reason, message=str(error))
    if isinstance(error, SpecError):
        raise kopf.PermanentError(str(error)) from None
    if retry + 1 >= settings.retries:
        raise kopf.PermanentError(f"gave up after {retry + 1} attempts: {error}") from None
    delay = settings.backoff.schedule().delay(retry, _random)
    raise kopf.TemporaryError(str(error), delay=delay) from None


def reconciling(
    kind: str, body: kopf.Body, memo: kopf.Memo, retry: int, *,
    reconcile: Reconcile, refresh: Refresh,
) -> None:  # fmt: skip
    """Run ``reconcile``; on an OperatorError record it in status (``refresh``), then retry or
    give up."""
    cluster: Cluster = memo["cluster"]
    books: Bookkeeping = memo["books"]
    metrics: OperatorMetrics = memo["metrics"]
    key = key_of(kind, body)
    started = time.monotonic()
    with books.lock(key):
        if held(kind, body, cluster, f"generation {body['metadata'].get('generation')}"):
            return
        try:
            after = reconcile(cluster, body, None, memo["settings"])
        except OperatorError as error:
            settings: OperatorSettings = memo["settings"]
            outcome = (
                "invalid"
                if isinstance(error, SpecError)
                else ("gave_up" if retry + 1 >= settings.retries else "retry")
            )
            metrics.reconciled(kind, outcome, time.monotonic() - started, error.reason)
            log.warning("%s %s/%s: %s", kind, key[1], key[2], error)
            failure = books.failures[key] = Failure(error.reason, str(error))
            # With a spec the models refuse not even the status can be computed: the event
            # says it.
            with contextlib.suppress(OperatorError):
                refresh(cluster, body, failure)
            failed = error
        else:
            books.failures.pop(key, None)
            metrics.reconciled(kind, "ok", time.monotonic() - started, None)
            refresh_later(kind, key, after, cluster, books=books, refresh=refresh)
            return
    give_up_or_retry(body, failed, retry, memo["settings"])


def refresh_later(
    kind: str, key: tuple[str, str, str], after: float | None, cluster: Cluster, *,
    books: Bookkeeping, refresh: Refresh,
) -> None:  # fmt: skip
    """In ``after`` seconds (None: never), refresh the status of the resource ``key`` again,
    read afresh, under its lock; and again if that refresh asks for it."""
    if after is None:
        return

    def wake() -> None:
        with books.lock(key):
            body = cluster.get_custom(PLURALS[kind], key[1], key[2])
            if body is None or body["metadata"].get("deletionTimestamp"):
                return
            try:
                if held(kind, body, cluster, "a status wake-up"):
                    return
                again = refresh(cluster, body, books.failures.get(key))
            except OperatorError as error:
                log.warning("%s %s/%s: %s", kind, key[1], key[2], error)
                return
            except Exception:
                log.exception("%s %s/%s: the status refresh failed", kind, key[1], key[2])
                return
        refresh_later(kind, key, again, cluster, books=books, refresh=refresh)

    books.wake(key, after, wake)


def refresh_owner(kind: str, key: tuple[str, str, str], *, books: Bookkeeping,
                  cluster: Cluster, refresh: Refresh) -> None:  # fmt: skip
    """Refresh the status of the ``kind`` resource ``namespace/name`` (read afresh, under its
    lock), if it exists: something it does not own directly changed (a pod of its child), or
    the recheck thread's round came. ``key``: ``(kind, namespace, name)``."""
    with books.lock(key):
        owner = cluster.get_custom(PLURALS[kind], key[1], key[2])
        if owner is None or owner["metadata"].get("deletionTimestamp"):
            return
        try:
            if held(kind, owner, cluster, "a status refresh"):
                return
            after = refresh(cluster, owner, books.failures.get(key))
        except OperatorError as error:
            log.warning("%s %s/%s: %s", kind, key[1], key[2], error)
            return
    refresh_later(kind, key, after, cluster, books=books, refresh=refresh)


def on_child_event(
    kind: str, type: str, body: kopf.Body, memo: kopf.Memo, *,
    status_sources: tuple[str, ...], reconcile: Reconcile, refresh: Refresh,
) -> None:  # fmt: skip
    """A child of a ``kind`` resource changed: refresh its owner's status (when the child is
    one of ``status_sources``); a child deleted: reconcile the owner."""
    name = body["metadata"].get("labels", {}).get(OWNER_NAME_LABEL)
    if type != "DELETED" and body.get("kind") not in status_sources:
        return
    cluster: Cluster = memo["cluster"]
    books: Bookkeeping = memo["books"]
    key = (kind, body["metadata"]["namespace"], name)
    with books.lock(key):
        owner = cluster.get_custom(PLURALS[kind], key[1], name)
        if owner is None or owner["metadata"].get("deletionTimestamp"):
            return
        references = body["metadata"].get("ownerReferences") or []
        if not any(r.get("uid") == owner["metadata"]["uid"] for r in references):
            return  # a child of an earlier incarnation of the owner: the GC takes it
        try:
            if held(kind, owner, cluster, f"{type} {body.get('kind')} {body['metadata']['name']}"):
                return
            if type == "DELETED":
                log.info("%s %s deleted: reconciling %s %s", body.get("kind"),
                         body["metadata"]["name"], kind, name)  # fmt: skip
                after = reconcile(cluster, owner, books.failures.get(key), memo["settings"])
            else:
                after = refresh(cluster, owner, books.failures.get(key))
        except OperatorError as error:
            log.warning("%s %s/%s: %s", kind, key[1], key[2], error)
            return
    refresh_later(kind, key, after, cluster, books=books, refresh=refresh)


def listed(cluster: Cluster, kind: str, namespaces: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The resources of ``kind``, a page at a time; an error listing them ends the pass with
    a warning (the API may be away: the next round tries again)."""
    pages = cluster.list_custom(PLURALS[kind], namespaces)
    while True:
        try:
            body = next(pages)
        except StopIteration:
            return
        except Exception as error:
            log.warning("cannot list %ss: %s", kind, error)
            return
        yield body
