"""Errors of the Wormhole event store.

Malformed and unverifiable VAAs are refused with the core library's own errors
(:mod:`chainloom.wormhole.errors`); the errors here are about the store itself: a key a user
typed that is not a message id (:class:`chainloom.wormhole.errors.MessageKeyError`, since a
message id is the Wormhole core's), a table that is not there, a Bigtable outage that outlived
the retries, a price source that cannot answer::

    EventStoreError
    ├── StoreConfigError       project / instance / table missing from options and environment
    ├── TableMissingError      the events or index table does not exist (run `events init`)
    ├── StoreUnavailableError  Bigtable unreachable or failing past the deadline (CLI exit 4)
    ├── UnverifiedVAAError     a VAA whose signatures do not match its guardian set
    └── PriceSourceError       a price file is malformed or a price API failed
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class EventStoreError(ChainloomError):
    """Base class of the event store's errors."""


class StoreConfigError(EventStoreError):
    """The connection settings are incomplete."""


class TableMissingError(EventStoreError):
    """A table the store needs does not exist."""

    def __init__(self, table: str) -> None:
        super().__init__(
            f"Bigtable table {table!r} does not exist; create it with `chainloom events init`"
        )
        self.table = table


class StoreUnavailableError(EventStoreError, UnavailableError):
    """Bigtable could not be reached, or kept failing, until the deadline
    (``bigtable.operation_timeout``) ran out.

    The message is one line naming the endpoint and the cause. A writer keeps the inputs it
    had not written queued (``pending_rows``); flushing the same writer again retries them.
    """

    def __init__(self, endpoint: str, cause: str, *, pending_rows: int = 0) -> None:
        super().__init__(f"Bigtable unavailable at {endpoint}: {cause}")
        self.endpoint = endpoint
        """``emulator HOST:PORT`` or ``projects/P/instances/I``."""
        self.cause = cause
        """Why, as one line (the last error the client saw, and the time spent)."""
        self.pending_rows = pending_rows
        """Inputs still queued in the writer that raised it (0 for reads)."""


class UnverifiedVAAError(EventStoreError):
    """A VAA's signatures do not match the guardian set it names."""

    def __init__(self, message_id: str, reason: str) -> None:
        super().__init__(f"VAA {message_id} does not verify: {reason}")
        self.message_id = message_id
        self.reason = reason


class PriceSourceError(EventStoreError):
    """A price source is misconfigured, malformed or failed to answer."""
