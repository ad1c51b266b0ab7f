"""Forwarding calls to rippled, with failover across the configured endpoints.

Each call goes to the first endpoint not in its backoff (:class:`.forwarding.EndpointPool`);
one that cannot be connected to, breaks the exchange, takes longer than ``request_timeout`` or
answers something that is not JSON-RPC is left out for a backoff and the next one is asked,
so a call is lost only when every endpoint fails. rippled's answer, success or error, is
returned as it came, marked ``forwarded``. When none answers, the call gets Clio's error for
the most telling failure (``connectionError``, ``requestError``, ``timeout``,
``invalidResponse``); such an outage is logged once when it begins and once when it ends, and
an endpoint once when it starts failing and once when it answers again, never per call.

An ``http(s)://`` endpoint is rippled's JSON-RPC API, asked with httpx (the HTTP client the
project already ships, through xrpl-py) on one connection pool per server, made in the serving
event loop on first use; a ``ws(s)://`` endpoint is its WebSocket API, one connection per call
as Clio forwards (the ``websockets`` library uvicorn already serves with). Proxy variables of
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
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as websocket_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.forwarding import (
    EndpointPool,
    InvalidAnswerError,
    forwarded_body,
    forwarded_message,
    forwarded_result,
    forwarded_websocket_result,
    worst,
)
from chainloom.ledger.config import ForwardingSettings
from chainloom.urls import redact_url

log = logging.getLogger(__name__)

KEEPALIVE_CONNECTIONS = 64
"""Idle connections to the rippled endpoints kept open for the next calls. Connections in use
are not capped here but by the calls in flight (``max_in_flight``), so a call never waits for
a connection of our own and mistakes that wait for a slow endpoint."""
CLOSE_TIMEOUT = 2.0
"""Seconds a WebSocket's closing handshake may take (in the background, after the answer)."""
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""Largest WebSocket answer read from rippled (a whole ledger with its transactions fits)."""


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
        self,
        settings: ForwardingSettings,
        *,
        max_in_flight: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._urls = settings.rippled
        self._shown = [redact_url(url) for url in self._urls]
        self._timeout = settings.request_timeout
        self._pool = EndpointPool(len(self._urls), settings.backoff.schedule())
        self._clock = clock
        self._client: httpx.AsyncClient | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._max_in_flight = max_in_flight
        self._in_flight = 0
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
        :class:`RpcError` with Clio's forwarding error when no endpoint answers, ``tooBusy``
        when ``max_in_flight`` calls are already waiting for rippled (a wait for a connection
        of our own is never taken for a slow endpoint)."""
        if self._in_flight >= self._max_in_flight:
            raise RpcError("tooBusy")
        self._in_flight += 1
        try:
            return await self._forward(method, params, client)
        finally:
            self._in_flight -= 1

    async def _forward(
        self, method: str, params: Mapping[str, Any], client: str
    ) -> tuple[dict[str, Any], int]:
        failures: list[str] = []
        for index in self._pool.usable(self._clock()):
            try:
                answer = await self._ask(index, method, params, client)
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

    async def _ask(
        self, index: int, method: str, params: Mapping[str, Any], client: str
    ) -> tuple[dict[str, Any], int]:
        """One endpoint's answer, or :class:`_EndpointError` saying how asking it failed."""
        url = self._urls[index]
        try:
            async with asyncio.timeout(self._timeout):
                if url.startswith(("ws://", "wss://")):
                    return await self._ask_websocket(url, method, params, client)
                return await self._ask_http(url, method, params, client)
        except TimeoutError:
            raise _EndpointError("timeout", f"no answer within {self._timeout:g} s") from None

    async def _ask_http(
        self, url: str, method: str, params: Mapping[str, Any], client: str
    ) -> tuple[dict[str, Any], int]:
        """rippled's JSON-RPC API: one POST on the pooled connections."""
        body = orjson.dumps(forwarded_body(method, params))
        headers = {"Content-Type": "application/json", "Forwarded": forwarded_for(client)}
        try:
            reply = await self._http().post(url, content=body, headers=headers)
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

    async def _ask_websocket(
        self, url: str, method: str, params: Mapping[str, Any], client: str
    ) -> tuple[dict[str, Any], int]:
        """rippled's WebSocket API: one connection per call, as Clio forwards."""
        message = orjson.dumps(forwarded_message(method, params)).decode()
        try:
            socket = await websocket_connect(
                url,
                additional_headers={"Forwarded": forwarded_for(client)},
                max_size=MAX_ANSWER_BYTES,
                proxy=None,
                open_timeout=None,
                close_timeout=CLOSE_TIMEOUT,
            )
        except (OSError, InvalidHandshake) as refused:
            raise _EndpointError(
                "connectionError", str(refused) or type(refused).__name__
            ) from None
        try:
            await socket.send(message)
            answer = await socket.recv()
        except ConnectionClosed as broken:
            raise _EndpointError("requestError", str(broken)) from None
        finally:
            self._close_later(socket)
        try:
            return forwarded_websocket_result(orjson.loads(answer)), 200
        except orjson.JSONDecodeError:
            raise _EndpointError("invalidResponse", "a message that is not JSON") from None
        except InvalidAnswerError as bad:
            raise _EndpointError("invalidResponse", str(bad)) from None

    def _close_later(self, socket: ClientConnection) -> None:
        """Close a WebSocket in the background: the call has its answer, and a slow closing
        handshake must not turn it into a timeout (and the call into a second one)."""
        closing = asyncio.create_task(socket.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout),
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=KEEPALIVE_CONNECTIONS
                ),
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
        if self._closing:
            await asyncio.wait(self._closing)
