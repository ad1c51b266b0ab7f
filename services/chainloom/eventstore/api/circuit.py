"""The store's circuit: while Bigtable is known to be down, requests are answered at once.

Why: during an outage every read waits its whole ``bigtable.operation_timeout`` before failing,
so a server under load fills its thread pool with reads that cannot succeed, queues the rest
behind them, and keeps failing slowly after the store is back. The first read that finds the
store unreachable (or a table missing) opens the circuit; from then on requests are answered
503 without a read, and one probe (the start-up check: one row of each table) runs every
``probe_interval`` on a thread of its own until it succeeds, which closes the circuit. One log
line when it opens, one when it closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable

from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError

log = logging.getLogger(__name__)


class StoreCircuit:
    """Open while the store is known down; a background probe closes it."""

    def __init__(self, probe: Callable[[], None], interval: float) -> None:
        self.probe = probe
        self.interval = interval
        self.error: StoreUnavailableError | TableMissingError | None = None
        """Why the store is down (None: the circuit is closed)."""
        self._since = 0.0
        self._prober: asyncio.Task[None] | None = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "events-api-probe")

    @property
    def open(self) -> bool:
        return self.error is not None

    def refusal(self) -> StoreUnavailableError | TableMissingError:
        """What a request is answered while the circuit is open: the store's last error."""
        error = self.error
        if not isinstance(error, StoreUnavailableError):
            return error or StoreUnavailableError("the store", "down")
        seconds = time.monotonic() - self._since
        return StoreUnavailableError(
            error.endpoint,
            f"{error.cause} (down for {seconds:.0f} s, probed every {self.interval:g} s)",
        )

    def trip(self, error: StoreUnavailableError | TableMissingError) -> None:
        """A read found the store down: open the circuit and start probing."""
        if self.open:
            return
        self.error = error
        self._since = time.monotonic()
        log.warning("events api: the store is down, answering 503 until it is back: %s", error)
        self._prober = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            try:
                await loop.run_in_executor(self._thread, self.probe)
            except (StoreUnavailableError, TableMissingError) as still:
                self.error = still
                continue
            seconds = time.monotonic() - self._since
            log.warning("events api: the store is back after %.1f s", seconds)
            self.error = None
            return

    def close(self) -> None:
        """Stop probing (the server stopped)."""
        if self._prober is not None:
            self._prober.cancel()
        self._thread.shutdown(wait=False, cancel_futures=True)
