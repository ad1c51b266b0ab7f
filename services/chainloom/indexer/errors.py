"""Errors of the streaming indexer.

Outages of the spy or the store while running are not errors: the indexer retries them and
reports them through ``/readyz``. What ends it is here::

    IndexerError
    ├── IndexerConfigError    settings that cannot be used (bad guardian sets, spy address)
    └── DrainTimeoutError     SIGTERM's drain ran out of time with VAAs still unwritten (exit 4)
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class IndexerError(ChainloomError):
    """Base class of the indexer's errors."""


class IndexerConfigError(IndexerError):
    """The settings name something that cannot be used; the message names the setting."""


class DrainTimeoutError(IndexerError, UnavailableError):
    """The shutdown drain ended before every buffered VAA was written (the store was down).

    The VAAs it names were lost by this process; the spy will not send them again, so gap
    detection (or a restart that replays them) must find them.
    """

    def __init__(self, unwritten: int, seconds: float, cause: str) -> None:
        super().__init__(
            f"drain timed out after {seconds:g} s with {unwritten} VAAs unwritten: {cause}"
        )
        self.unwritten = unwritten
        """VAAs still buffered when the drain gave up."""
        self.seconds = seconds
        """The drain's time bound (``drain_timeout``)."""
        self.cause = cause
        """Why the last write failed (one line), or ``"no write finished"``."""
