"""Errors of the XRP Ledger history backend and its ETL.

One tree, so a caller can catch "the ledger package refused this" in one place and still tell
a bad configuration from corrupt input or a database outage. Every error names what a user
needs to act on: the configuration key, the ledger sequence, the object key::

    LedgerError
    ├── LedgerConfigError        bad or unknown configuration (database.type, a key, a value)
    │   ├── DatabaseFileError    the SQLite file cannot be used (a directory, unreadable, not
    │   │                        a database)
    │   └── CassandraRefusedError  Cassandra answered but refused us (credentials, TLS)
    ├── LedgerInputError         a value handed to the backend is malformed (key length, blob size)
    │   └── LedgerHeaderError    a ledger header that does not parse or whose hash does not match
    ├── SuccessorError           a state diff the successor list cannot apply (deleting a
    │                            missing key, creating an existing one)
    ├── LedgerCorruptionError    stored data contradicts itself (the successor list names a key
    │                            whose object is absent at that sequence)
    ├── LedgerIntegrityError     input that is inconsistent with what is stored or with itself
    │                            (a ledger out of order, a hash mismatch); raised by the ETL
    └── BackendError             the database failed (connection, timeout, write not acknowledged)
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class LedgerError(ChainloomError):
    """Base class of the ledger package's errors."""


class LedgerConfigError(LedgerError):
    """The backend configuration is invalid (names the offending key)."""


class DatabaseFileError(LedgerConfigError):
    """The SQLite database file cannot be used: a directory, unreadable, or not a database.

    A configuration error (exit 2), not an outage: the path given is wrong, and retrying will
    not help. A locked or busy database stays a :class:`BackendError`.
    """


class CassandraRefusedError(LedgerConfigError):
    """Cassandra answered but refused the connection: the credentials, a certificate, or a
    handshake in the wrong protocol (plain text to a TLS port, or the other way round).

    A configuration error (exit 2), not an outage: retrying with the same settings cannot help.
    The message names the cluster and the cause, never a password.
    """


class LedgerInputError(LedgerError):
    """A value passed to the backend is malformed (names the value and what was expected)."""


class LedgerHeaderError(LedgerInputError):
    """A ledger header blob does not parse, or its trailing hash is not the computed one."""


class SuccessorError(LedgerError):
    """A set of created / deleted keys cannot be applied to the current key set."""


class LedgerCorruptionError(LedgerError):
    """Stored data contradicts itself (for example the successor list names a deleted key)."""

    def __init__(self, message: str, *, sequence: int | None = None) -> None:
        super().__init__(message)
        self.sequence = sequence


class LedgerIntegrityError(LedgerError):
    """Input that contradicts the stored history or itself; names the ledger sequence."""

    def __init__(self, message: str, *, sequence: int | None = None) -> None:
        super().__init__(message)
        self.sequence = sequence


class BackendError(LedgerError, UnavailableError):
    """The database failed: unreachable, timed out, or a write was never acknowledged.

    Also an :class:`~chainloom.errors.UnavailableError`, so the CLI exits 4 on it.
    """
