"""Which replica of the following ledger ETL writes, and when a takeover deserves an event.

Each replica says its role on ``/status`` (:mod:`chainloom.ledger.follow_probes`); the operator
asks every running pod and keeps the answer in ``status.writer``. These are the pure parts:
which pods to ask, the writer from their answers, and the Event a change of writer posts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TAKEOVER_REASON = "WriterChanged"
"""The Event's reason when another replica took over writing."""


def pods_to_ask(pods: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``pod name -> pod IP`` of the running pods not being deleted."""
    found: dict[str, str] = {}
    for pod in pods:
        status = pod.get("status") or {}
        meta = pod.get("metadata") or {}
        if (
            status.get("phase") == "Running"
            and status.get("podIP")
            and not meta.get("deletionTimestamp")
        ):
            found[meta["name"]] = status["podIP"]
    return found


def writer_of(roles: Mapping[str, str | None]) -> str:
    """The pod that says it writes; several (for the moment a paused old writer has not yet
    learnt it lost the fence) are listed sorted, comma-separated; none: ``""``."""
    return ",".join(sorted(name for name, role in roles.items() if role == "writer"))


def takeover_event(previous: str, current: str) -> tuple[str, str] | None:
    """``(reason, message)`` of the Event when ``current`` replaced ``previous``, the last pod
    seen writing alone (kept across the fallback, when nobody writes), else None (the first
    writer, no writer for a moment, or two at once are not a takeover yet)."""
    if not previous or not current or previous == current or "," in previous + current:
        return None
    return TAKEOVER_REASON, f"pod {current} took over writing the ledger from pod {previous}"
