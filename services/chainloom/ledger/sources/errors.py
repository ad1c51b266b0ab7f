"""Errors of the ledger sources (the ETL's inputs)::

chainloom.ledger.errors.LedgerError
└── LedgerSourceError        a source failed to answer (gRPC unavailable, a malformed reply)
    └── LedgerSequenceError  the source's ledgers are not consecutive: one is missing, out of
                             order or repeated (an input error, not a reason to stop quietly)
"""

from __future__ import annotations

from chainloom.ledger.errors import LedgerError


class LedgerSourceError(LedgerError):
    """A ledger source could not deliver a ledger (names the source and the ledger)."""


class LedgerSequenceError(LedgerSourceError):
    """The source skips, reorders or repeats a ledger: the next one cannot be delivered.

    Raised when the ETL asks for the ledger after the last good one, so everything before the
    fault is loaded and committed; the message names the source, where, and the sequence.
    ``expected`` is the ledger that should come next, ``found`` the one the source holds in
    its place (``None`` if it does not say).
    """

    def __init__(self, message: str, *, expected: int, found: int | None = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found
