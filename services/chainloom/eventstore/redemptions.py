"""What is known of a transfer's redemption on its target chain, for the operations routes.

The event store records the source side of a transfer (the VAA and its publication); whether it
was redeemed is known to the relayer, whose tables (:mod:`chainloom.relayer.tables`) hold every
request it took: Completed (with the submission's transaction id), Pending Confirmation
(submitted, awaiting finality), Failed (with the last error), or still queued. The API reads
them when ``api.relay_redis`` is set; :func:`from_relay` turns one entry into a
:class:`Redemption` (pure, here); the Redis adapter behind the :class:`Redemptions` Protocol is
:class:`~chainloom.eventstore.redemptions_redis.RelayRedemptions`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chainloom.relayer.model import RelayRequest, Table

COMPLETED = "completed"
PENDING = "pending"
QUEUED = "queued"
FAILED = "failed"
STATES = (COMPLETED, PENDING, QUEUED, FAILED)
"""The redemption states the relay tables can tell."""


@dataclass(frozen=True, slots=True)
class Redemption:
    """A transfer's redemption as the relayer knows it."""

    status: str
    """One of :data:`STATES`."""
    tx_hash: str | None = None
    """The target-chain transaction that redeemed it (or awaits finality), when known."""
    timestamp: str | None = None
    """When the relayer completed it, RFC 3339 UTC (completed only)."""
    outcome: str | None = None
    """How it completed: confirmed, already_redeemed or dropped (completed only)."""
    reason: str | None = None
    """The last error (failed; or queued again after a failed attempt)."""


class Redemptions(Protocol):
    """Looks a transfer's redemption up by its VAA digest and target chain."""

    def lookup(self, digest: str, target_chain: int) -> Redemption | None: ...


def _rfc3339(unix: object) -> str | None:
    if not isinstance(unix, int | float) or isinstance(unix, bool):
        return None
    moment = dt.datetime.fromtimestamp(unix, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def from_relay(
    table: Table | None,
    request: RelayRequest | None,
    completed: Mapping[str, Any] | None,
) -> Redemption | None:
    """The redemption one relay-table entry tells: its Completed log record if it has one,
    else its request in ``table``; None when the relayer never took it."""
    if completed is not None:
        return Redemption(
            COMPLETED,
            tx_hash=_text(completed.get("submission_id")),
            timestamp=_rfc3339(completed.get("completed_at")),
            outcome=_text(completed.get("outcome")),
        )
    if table is None or request is None:
        return None
    if table is Table.PENDING_CONFIRMATION:
        return Redemption(PENDING, tx_hash=request.submission_id)
    if table is Table.FAILED:
        return Redemption(FAILED, reason=request.last_error)
    return Redemption(QUEUED, reason=request.last_error)
