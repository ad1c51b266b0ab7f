"""The root of every error chainloom raises on purpose.

Each package keeps its own errors in one module (``chainloom.<package>.errors``) that derive
from :class:`ChainloomError`, so a caller can catch "anything chainloom refused" in one place
and still tell a malformed VAA from a store outage::

    ChainloomError
    ├── InvalidBackoffError          a chainloom.backoff.Backoff with impossible settings
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
