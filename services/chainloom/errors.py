"""The root of every error chainloom raises on purpose.

Each package keeps its own errors in one module (``chainloom.<package>.errors``) that derive
from :class:`ChainloomError`, so a caller can catch "anything chainloom refused" in one place
and still tell a malformed VAA from a store outage::

    ChainloomError
    ├── InvalidBackoffError          a chainloom.backoff.Backoff with impossible settings
    ├── Base58Error                  text that is not base58 in the alphabet given
    ├── chainloom.stack.errors.StackError
    ├── chainloom.wormhole.errors.WormholeError
    ├── chainloom.eventstore.errors.EventStoreError
    ├── chainloom.ledger.errors.LedgerError
    └── chainloom.relayer.errors.RelayerError
"""

from __future__ import annotations


class ChainloomError(Exception):
    """Base class of every error chainloom raises deliberately."""


class InvalidBackoffError(ChainloomError, ValueError):
    """A :class:`chainloom.backoff.Backoff` was given settings it cannot honour.

    Also a :class:`ValueError`, so callers that caught ``ValueError`` keep working.
    """


class Base58Error(ChainloomError, ValueError):
    """Text is not base58 in the alphabet given (or the alphabet itself is unusable).

    Also a :class:`ValueError`, so callers that caught ``ValueError`` keep working.
    """

    def __init__(self, message: str, *, character: str | None = None) -> None:
        super().__init__(message)
        self.character = character
        """The first character outside the alphabet, when that is the problem."""
