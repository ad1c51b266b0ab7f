"""Which calls go to a live rippled, and what comes back: pure, so the rules are tested as data.

The API answers from the stored (validated) history; what only a server on the network knows
is forwarded, as Clio decides it (``ForwardingProxy::shouldForward``): the methods that need
the open ledger or the peer network (:data:`PROXIED`), any call naming the ``current`` or
``closed`` ledger, and ``account_info`` / ``ledger`` asking for the ``queue``. Clio's own
methods (:data:`LOCAL_ONLY`) and subscriptions never are, nor (unlike Clio) a method this
server does not know, so no admin method reaches rippled through it. Without a rippled
configured, the proxied methods answer rippled's ``notEnabled`` and the rest are answered from
the store (``current`` and ``closed`` meaning the newest stored ledger, as before).

:class:`EndpointPool` keeps the order endpoints are asked in and leaves one that failed out for
a while (the project's one backoff, :mod:`chainloom.backoff`); the network side is
:mod:`.rippled`.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainloom.backoff import Backoff
from chainloom.ledger.api.errors import RpcError

PROXIED = frozenset(
    {
        "server_definitions",
        "server_state",
        "submit",
        "submit_multisigned",
        "fee",
        "ledger_closed",
        "ledger_current",
        "ripple_path_find",
        "manifest",
        "channel_authorize",
        "channel_verify",
    }
)
"""Methods always forwarded: only a server on the network can answer them (Clio's list)."""

LOCAL_ONLY = frozenset(
    {
        "ledger_index",
        "ledger_range",
        "nft_history",
        "nft_info",
        "nfts_by_issuer",
        "mpt_holders",
        "subscribe",
        "unsubscribe",
    }
)
"""Methods never forwarded: Clio's own (rippled does not have them) and the subscriptions."""

LIVE_LEDGERS = ("current", "closed")
"""``ledger_index`` values that name a ledger the stored history does not hold yet."""

FAILURE_ORDER = ("connectionError", "requestError", "timeout", "invalidResponse")
"""Clio's forwarding errors, least to most telling: when every endpoint failed, the answer is
the most telling of their failures (Clio keeps the greatest of its error codes)."""


class Route(enum.Enum):
    """What the server does with one call."""

    LOCAL = "local"
    """Answered from the stored history."""
    FORWARD = "forward"
    """Sent to rippled unchanged; its answer is returned marked ``forwarded``."""
    NOT_ENABLED = "not_enabled"
    """Only rippled answers it and none is configured: ``notEnabled``."""


def needs_live_server(method: str, params: Mapping[str, Any]) -> bool:
    """Whether ``method`` with ``params`` asks what only a server on the network knows."""
    if method in LOCAL_ONLY:
        return False
    if method in PROXIED:
        return True
    if params.get("ledger_index") in LIVE_LEDGERS:
        return True
    return method in ("account_info", "ledger") and params.get("queue") is True


def route(
    method: str,
    params: Mapping[str, Any],
    *,
    rippled_configured: bool,
    local_methods: Container[str],
) -> Route:
    """Where one call goes: forwarded when it needs a live server and one is configured;
    without one, the proxied methods are refused and the others answered from the store.

    A method that is neither proxied nor among ``local_methods`` (those this server answers) is
    never forwarded, whatever its ``ledger_index``: it gets ``unknownCmd`` here, so no admin
    method (``stop``, ``ledger_accept``) reaches rippled through the API."""
    if method not in PROXIED and method not in local_methods:
        return Route.LOCAL
    if not needs_live_server(method, params):
        return Route.LOCAL
    if rippled_configured:
        return Route.FORWARD
    return Route.NOT_ENABLED if method in PROXIED else Route.LOCAL


def not_enabled(method: str) -> RpcError:
    """The answer to a method only rippled answers, with no rippled configured."""
    return RpcError(
        "notEnabled",
        f"'{method}' needs a live rippled server and none is configured "
        "(chainloom ledger api --rippled URL).",
    )


def forwarded_body(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-RPC request sent to rippled: the call's parameters unchanged (``api_version``
    included), without the WebSocket envelope's ``id``/``command``/``method`` fields."""
    kept = {k: v for k, v in params.items() if k not in ("id", "command", "method")}
    return {"method": method, "params": [kept]}


def forwarded_message(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The call as a message of rippled's WebSocket API (``command`` beside the parameters,
    as Clio sends it)."""
    kept = {k: v for k, v in params.items() if k not in ("id", "command", "method")}
    return {**kept, "command": method}


class InvalidAnswerError(ValueError):
    """rippled's answer is not a JSON-RPC answer (``invalidResponse``)."""


def forwarded_result(document: Any) -> dict[str, Any]:
    """The ``result`` of rippled's JSON-RPC answer, marked ``forwarded: true``;
    :class:`InvalidAnswerError` when ``document`` is not ``{"result": {...}}``."""
    if not isinstance(document, dict):
        raise InvalidAnswerError("the answer is not a JSON object")
    result = document.get("result")
    if not isinstance(result, dict):
        raise InvalidAnswerError("the answer has no result object")
    return {**result, "forwarded": True}


def forwarded_websocket_result(document: Any) -> dict[str, Any]:
    """rippled's WebSocket answer as the ``result`` a JSON-RPC answer has, marked
    ``forwarded: true``: a success's ``result`` with its ``status``, or an error's fields
    (without the envelope's ``id``, ``type`` and ``api_version``); :class:`InvalidAnswerError`
    when ``document`` is neither."""
    if not isinstance(document, dict) or document.get("type") != "response":
        raise InvalidAnswerError("the message is not a response")
    if document.get("status") == "error" or "error" in document:
        envelope = ("id", "type", "api_version", "result")
        fields = {k: v for k, v in document.items() if k not in envelope}
        return {**fields, "status": "error", "forwarded": True}
    result = document.get("result")
    if not isinstance(result, dict):
        raise InvalidAnswerError("the response has no result object")
    return {**result, "status": document.get("status", "success"), "forwarded": True}


def envelope_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """Fields beside ``result`` in the answer: ``forwarded: true`` for a forwarded call (where
    Clio puts it; it is also inside ``result``, the part a client library hands over)."""
    return {"forwarded": True} if result.get("forwarded") is True else {}


def worst(failures: Sequence[str]) -> str:
    """The failure the answer names when every endpoint failed (see :data:`FAILURE_ORDER`)."""
    return max(failures, key=FAILURE_ORDER.index, default="connectionError")


@dataclass(slots=True)
class _Health:
    failures: int = 0
    """Failures in a row (0: healthy)."""
    skip_until: float = 0.0
    """Monotonic time before which the endpoint is not asked."""


class EndpointPool:
    """The endpoints in their configured order, each left out for a backoff after it fails.

    Pure: the caller passes the time. :meth:`usable` lists the endpoints to try, in order;
    :meth:`failed` and :meth:`answered` record the outcome of asking one."""

    def __init__(self, count: int, backoff: Backoff, rng: random.Random | None = None) -> None:
        self._health = [_Health() for _ in range(count)]
        self._latest = "connectionError"
        self._backoff = backoff
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not a secret

    def usable(self, now: float) -> list[int]:
        """Endpoints to ask now, in the configured order (those in their backoff left out)."""
        return [i for i, health in enumerate(self._health) if health.skip_until <= now]

    def failed(self, index: int, failure: str, now: float) -> bool:
        """Record a failure of endpoint ``index``; whether it was healthy until now."""
        health = self._health[index]
        health.failures += 1
        self._latest = failure
        health.skip_until = now + self._backoff.after_failures(health.failures, self._rng)
        return health.failures == 1

    def answered(self, index: int) -> bool:
        """Record an answer of endpoint ``index``; whether it was failing until now."""
        health = self._health[index]
        was_failing = health.failures > 0
        health.failures = 0
        health.skip_until = 0.0
        return was_failing

    @property
    def latest_failure(self) -> str:
        """How the endpoint that failed most recently failed (what a call answers when every
        endpoint is in its backoff and none is asked)."""
        return self._latest
