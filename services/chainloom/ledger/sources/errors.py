"""Errors of the ledger sources (the ETL's inputs)::

chainloom.ledger.errors.LedgerError
└── LedgerSourceError      a source failed to answer (gRPC unavailable, a malformed reply)
"""

from __future__ import annotations

from chainloom.ledger.errors import LedgerError


class LedgerSourceError(LedgerError):
    """A ledger source could not deliver a ledger (names the source and the ledger)."""
