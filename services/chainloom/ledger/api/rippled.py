"""Forwarding calls to rippled's JSON-RPC API, with failover across the configured endpoints.

Each call goes to the first endpoint not in its backoff (:class:`.forwarding.EndpointPool`);
one that cannot be connected to, breaks the exchange, takes longer than ``request_timeout`` or
answers something that is not JSON-RPC is left out for a backoff and the next one is asked,
so a call is lost only when every endpoint fails. rippled's answer, success or error, is
returned as it came, marked ``forwarded``. When none answers, the call gets Clio's error for
the most telling failure (``connectionError``, ``requestError``, ``timeout``,
``invalidResponse``); such an outage is logged once when it begins and once when it ends, and
an endpoint once when it starts failing and once when it answers again, never per call.

The client is httpx (the HTTP client the project already ships, through xrpl-py), one
connection pool per server, made in the serving event loop on first use. Proxy variables of
the environment are not used: a forwarded ``submit`` goes to the URL configured, nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson

from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.forwarding import (
    EndpointPool,
    InvalidAnswerError,
    forwarded_body,
    forwarded_result,
    worst,
)
from chainloom.ledger.config import ForwardingSettings
from chainloom.urls import redact_url

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64
"""Connections to each rippled at most (calls past it wait for one, within the timeout)."""


def forwarded_for(client: str) -> str:
    """The ``Forwarded`` header naming the caller's address (RFC 7239), as Clio sends it, so a
    rippled that lists chainloom as its ``secure_gateway`` accounts for each client apart."""
    if ":" in client:
        return f'for="[{client}]"'
    return f"for={client}" if client and client != "?" else "for=unknown"


class _EndpointError(Exception):
    """Asking one endpoint failed; ``token`` is Clio's name for how."""

    def __init__(self, token: str, detail: str) -> None:
        super().__init__(detail)
        self.token = token


class RippledForwarder:
    """Sends calls to the configured rippled endpoints, in order, with failover."""

    def __init__(
        self, settings: ForwardingSettings, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._urls = settings.rippled
        self._shown = [redact_url(url) for url in self._urls]
        self._timeout = settings.request_timeout
        self._pool = EndpointPool(len(self._urls), settings.backoff.schedule())
        self._clock = clock
        self._client: httpx.AsyncClient | None = None
        self._outage_since: float | None = None
        self._refused_in_outage = 0

    @property
    def configured(self) -> bool:
        """Whether any rippled endpoint is configured."""
        return bool(self._urls)

    async def forward(
        self, method: str, params: Mapping[str, Any], client: str = "?"
    ) -> tuple[dict[str, Any], int]:
        """rippled's ``result`` for the call, marked ``forwarded``, and its HTTP status;
        :class:`RpcError` with Clio's forwarding error when no endpoint answers."""
        body = orjson.dumps(forwarded_body(method, params))
        failures: list[str] = []
        for index in self._pool.usable(self._clock()):
            try:
                answer = await self._ask(index, body, client)
            except _EndpointError as failed:
                failures.append(failed.token)
                if self._pool.failed(index, failed.token, self._clock()):
                    log.warning(
                        "ledger api: rippled %s failed (%s: %s); it is left out for a while",
                        self._shown[index],
                        failed.token,
                        failed,
                    )
                continue
            if self._pool.answered(index):
                log.info("ledger api: rippled %s answers again", self._shown[index])
            self._end_outage(index)
            return answer
        token = worst(failures) if failures else self._pool.latest_failure
        self._begin_outage(token)
        raise RpcError(token)

    async def _ask(self, index: int, body: bytes, client: str) -> tuple[dict[str, Any], int]:
        """One endpoint's answer, or :class:`_EndpointError` saying how asking it failed."""
        headers = {"Content-Type": "application/json", "Forwarded": forwarded_for(client)}
        try:
            async with asyncio.timeout(self._timeout):
                reply = await self._http().post(self._urls[index], content=body, headers=headers)
        except TimeoutError:
            raise _EndpointError("timeout", f"no answer within {self._timeout:g} s") from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as refused:
            detail = str(refused) or type(refused).__name__
            raise _EndpointError("connectionError", detail) from None
        except httpx.TimeoutException:
            raise _EndpointError("timeout", f"no answer within {self._timeout:g} s") from None
        except httpx.HTTPError as broken:
            raise _EndpointError("requestError", str(broken) or type(broken).__name__) from None
        try:
            return forwarded_result(orjson.loads(reply.content)), reply.status_code
        except orjson.JSONDecodeError:
            detail = f"HTTP {reply.status_code}, not JSON"
            raise _EndpointError("invalidResponse", detail) from None
        except InvalidAnswerError as bad:
            raise _EndpointError("invalidResponse", f"HTTP {reply.status_code}, {bad}") from None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout),
                limits=httpx.Limits(max_connections=MAX_CONNECTIONS * len(self._urls)),
                trust_env=False,
            )
        return self._client

    def _begin_outage(self, token: str) -> None:
        self._refused_in_outage += 1
        if self._outage_since is None:
            self._outage_since = self._clock()
            log.error(
                "ledger api: no rippled answers (%s): forwarded calls are answered %s until "
                "one does",
                ", ".join(self._shown),
                token,
            )

    def _end_outage(self, index: int) -> None:
        if self._outage_since is None:
            return
        log.warning(
            "ledger api: rippled %s answers after an outage of %.1f s (%d forwarded calls "
            "refused meanwhile)",
            self._shown[index],
            self._clock() - self._outage_since,
            self._refused_in_outage,
        )
        self._outage_since = None
        self._refused_in_outage = 0

    async def close(self) -> None:
        """Close the connections (after the server stopped)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
