"""Which JSON-RPC endpoint of an EVM chain a worker talks to: the first healthy one, in order.

Why: one node is one point of failure, and a node that answers but lags behind the chain is
worse (receipts not found, nonces stale). A chain may list several endpoints; this pool keeps,
for each, whether it may be used now. An endpoint whose request failed (refused, reset, timed
out) or whose block number is more than ``max_lag_blocks`` behind the best answer is set aside
for a wait from :mod:`chainloom.backoff` that grows with its consecutive failures. Once the
wait is over it is probed (``eth_blockNumber``) and carries traffic again once it answers; the
first healthy one in order wins, so traffic returns to the primary when it is back. Every
change of the endpoint in use is one log line, with the reason.

Pure: no client, no clock of its own (callers pass ``now``); the web3 provider in
:mod:`chainloom.relayer.evm_provider` does the requests.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from chainloom.backoff import Backoff

logger = logging.getLogger("chainloom.relayer.evm")


def redacted(url: str) -> str:
    """``scheme://host:port`` of an endpoint URL: paths and user info may carry API keys."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


@dataclass(slots=True)
class EndpointHealth:
    """What the pool knows of one endpoint."""

    url: str
    """The endpoint's URL (never logged whole: see :func:`redacted`)."""
    failures: int = 0
    """Consecutive failures (a request error or lagging); 0 when healthy."""
    down_until: float = 0.0
    """Monotonic time before which it is skipped."""
    reason: str = ""
    """Why it was last set aside."""


class EndpointPool:
    """The endpoints of one chain, in order of preference (see the module docstring)."""

    def __init__(
        self,
        chain: int,
        urls: Sequence[str],
        backoff: Backoff,
        *,
        max_lag_blocks: int = 5,
        rng: random.Random | None = None,
    ) -> None:
        if not urls:
            raise ValueError(f"evm chain {chain}: no RPC endpoint")
        self.chain = chain
        self.endpoints = [EndpointHealth(url) for url in urls]
        self.backoff = backoff
        self.max_lag_blocks = max_lag_blocks
        self.switches = 0
        """How many times the endpoint in use changed."""
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not a secret
        self._current = 0
        self._lock = threading.Lock()

    @property
    def current(self) -> EndpointHealth:
        """The endpoint last chosen."""
        return self.endpoints[self._current]

    def due_probes(self, now: float) -> list[EndpointHealth]:
        """Set-aside endpoints whose wait is over: probe them (:meth:`succeeded` or
        :meth:`failed`) before they carry traffic again."""
        with self._lock:
            return [e for e in self.endpoints if e.failures and e.down_until <= now]

    def choose(self, now: float) -> EndpointHealth:
        """The first healthy endpoint; else the first whose wait is over; else the one back
        soonest. A change of endpoint is logged once, with the reason."""
        with self._lock:
            order = range(len(self.endpoints))
            healthy = [i for i in order if not self.endpoints[i].failures]
            waited = [i for i in order if self.endpoints[i].down_until <= now]
            if healthy or waited:
                index = (healthy or waited)[0]
            else:
                index = min(order, key=lambda i: self.endpoints[i].down_until)
            if index != self._current:
                previous = self.endpoints[self._current]
                why = previous.reason if previous.failures else "preferred endpoint answers again"
                logger.warning(
                    "evm chain %s: switching RPC endpoint %s -> %s (%s)",
                    self.chain,
                    redacted(previous.url),
                    redacted(self.endpoints[index].url),
                    why,
                )
                self._current = index
                self.switches += 1
            return self.endpoints[index]

    def failed(self, endpoint: EndpointHealth, reason: str, now: float) -> None:
        """A request to ``endpoint`` failed at ``now``: set it aside for a backoff."""
        with self._lock:
            endpoint.failures += 1
            endpoint.reason = reason
            endpoint.down_until = now + self.backoff.after_failures(endpoint.failures, self._rng)

    def succeeded(self, endpoint: EndpointHealth) -> None:
        """A request to ``endpoint`` was answered: its failures are forgiven."""
        if endpoint.failures:
            with self._lock:
                endpoint.failures = 0
                endpoint.reason = ""

    def heights(self, answers: Mapping[str, int | None], now: float) -> None:
        """Judge a health check: each URL's block number (None: it did not answer). One
        more than ``max_lag_blocks`` behind the highest is set aside like a failure."""
        known = [height for height in answers.values() if height is not None]
        best = max(known, default=None)
        for endpoint in self.endpoints:
            if endpoint.url not in answers:
                continue
            height = answers[endpoint.url]
            if height is None:
                self.failed(endpoint, "no answer to eth_blockNumber", now)
            elif best is not None and best - height > self.max_lag_blocks:
                self.failed(endpoint, f"{best - height} blocks behind", now)
            else:
                self.succeeded(endpoint)
