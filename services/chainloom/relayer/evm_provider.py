"""A web3 provider over several JSON-RPC endpoints of one chain, failing over between them.

Why a provider: every call of the EVM adapter (reads, batches, sends) goes through one place,
so failover is added once, below the adapter, which keeps its single ``Web3``. A request that
fails at the transport (refused, reset, timed out, an HTTP error status) sets its endpoint
aside (:class:`~chainloom.relayer.evm_endpoints.EndpointPool`) and is sent to the next one; a
JSON-RPC error answer (a revert, ``nonce too low``) is an answer and is returned as is. Every
``health_interval`` seconds, before a request, every endpoint is asked ``eth_blockNumber`` and
one that lags is set aside too; a set-aside endpoint whose wait is over is asked the same
before it carries a request again, so a dead primary costs no request of the adapter's.

Resending a raw transaction to another endpoint is safe: the nodes share one chain, so the
second either takes it or answers ``already known`` / ``nonce too low``, which the adapter
already handles (the nonce is read again; the token bridge refuses a second redemption).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from web3 import HTTPProvider
from web3.providers import JSONBaseProvider
from web3.types import RPCEndpoint, RPCResponse

from chainloom.relayer.evm_endpoints import EndpointHealth, EndpointPool

_BLOCK_NUMBER = RPCEndpoint("eth_blockNumber")

T = TypeVar("T")


class FailoverProvider(JSONBaseProvider):
    """Sends each request to the first healthy endpoint of a :class:`EndpointPool`."""

    def __init__(
        self,
        pool: EndpointPool,
        *,
        timeout: float,
        health_interval: float,
        cacheable: set[RPCEndpoint] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.pool = pool
        self.health_interval = health_interval
        self._clock = clock
        self._providers = {
            endpoint.url: HTTPProvider(
                endpoint.url,
                request_kwargs={"timeout": timeout},
                exception_retry_configuration=None,  # failing over is the retry
                cache_allowed_requests=bool(cacheable),
                cacheable_requests=cacheable,
            )
            for endpoint in pool.endpoints
        }
        self._checked = -health_interval
        self._check_lock = threading.Lock()

    def __str__(self) -> str:
        return f"RPC failover over {len(self._providers)} endpoints of chain {self.pool.chain}"

    def make_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        return self._failing_over(lambda p: p.make_request(method, params))

    def make_batch_request(
        self, requests: list[tuple[RPCEndpoint, Any]]
    ) -> list[RPCResponse] | RPCResponse:
        return self._failing_over(lambda p: p.make_batch_request(requests))

    def is_connected(self, show_traceback: bool = False) -> bool:
        return any(p.is_connected(show_traceback) for p in self._providers.values())

    def check_health(self, endpoints: list[EndpointHealth] | None = None) -> None:
        """Ask every endpoint (or those given) its block number and set aside those not
        answering or behind; the rest count as healthy."""
        urls = list(self._providers) if endpoints is None else [e.url for e in endpoints]
        answers = {url: self._height(url) for url in urls}
        if endpoints is not None:  # judge the probed against the one in use
            current = self.pool.current
            if current.url not in answers and not current.failures:
                answers[current.url] = self._height(current.url)
        self.pool.heights(answers, self._clock())

    def _height(self, url: str) -> int | None:
        try:
            response = self._providers[url].make_request(_BLOCK_NUMBER, [])
            return int(response["result"], 16) if "result" in response else None
        except (OSError, ValueError, TypeError):
            return None

    def _failing_over(self, send: Callable[[HTTPProvider], T]) -> T:
        self._maybe_check_health()
        error: OSError | None = None
        for _ in self.pool.endpoints:
            endpoint = self.pool.choose(self._clock())
            try:
                answer = send(self._providers[endpoint.url])
            except OSError as failure:
                error = failure
                self._set_aside(endpoint, failure)
                continue
            self.pool.succeeded(endpoint)
            return answer
        assert error is not None
        raise error

    def _set_aside(self, endpoint: EndpointHealth, failure: OSError) -> None:
        self.pool.failed(endpoint, type(failure).__name__, self._clock())

    def _maybe_check_health(self) -> None:
        if len(self._providers) < 2:
            return
        now = self._clock()
        due = self.pool.due_probes(now)
        if not due and now - self._checked < self.health_interval:
            return
        if not self._check_lock.acquire(blocking=False):
            return  # another thread checks right now
        try:
            if now - self._checked >= self.health_interval:
                self._checked = now
                self.check_health()
            else:
                self.check_health(due)
        finally:
            self._check_lock.release()
