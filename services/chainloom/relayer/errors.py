"""Every error the relayer raises on purpose, in one tree.

The listener, the tables and the workers fail in different ways and callers act differently on
each: a malformed request is the sender's fault, a lost lease means this worker must stop, a
submission error is retried with backoff. Keeping them in one module (as httpx does) lets a
caller catch "anything the relayer refused" in one place and still tell them apart::

    ChainloomError
    └── RelayerError
        ├── RequestFormatError        a stored or supplied RelayRequest is malformed
        ├── ConfigError               the relayer configuration is invalid (names the field)
        ├── WalletError               a wallet file is missing, unreadable or not a key
        ├── TableError                the Redis tables refused an operation
        │   ├── TablesUnavailableError  Redis cannot be reached or failed (names address and cause)
        │   ├── TablesRefusedError    Redis answered but refused us (credentials, TLS)
        │   └── LeaseLostError        this worker no longer holds its lease: stop, do not submit
        └── AdapterError              a chain adapter failed
            ├── SubmitError           a submission was refused or failed (retried with backoff)
            │   ├── RefusedForGoodError   the chain refuses this transfer for good: Failed, no retry
            │   └── AlreadyRedeemedError  the chain says it is already redeemed: done, counted
            └── UnknownSubmissionError  finality asked about a submission the chain never saw

No error message ever contains wallet key material: errors about a wallet name the file and
the shape that was expected, never its content.
"""

from __future__ import annotations

from chainloom.errors import ChainloomError, UnavailableError


class RelayerError(ChainloomError):
    """Base class of every error the relayer raises deliberately."""


class RequestFormatError(RelayerError):
    """A relay request (from Redis or from a caller) is malformed; the message names the field."""


class ConfigError(RelayerError):
    """The relayer configuration (file or environment) is invalid; the message names the field."""


class WalletError(RelayerError):
    """A wallet file is missing, unreadable or does not hold a usable key (never shows the key)."""


class TableError(RelayerError):
    """The Redis tables refused an operation."""


class TablesUnavailableError(TableError, UnavailableError):
    """Redis could not be reached or failed mid-operation (refused, timed out, reset).

    Raised by :mod:`chainloom.relayer.tables` in place of the client library's own errors, so
    callers (the listener, the workers) never import ``redis`` to tell an outage from a refusal.
    The message names the server's address and the cause. Also an
    :class:`~chainloom.errors.UnavailableError`, so the CLI exits 4 on it.
    """


class TablesRefusedError(TableError):
    """Redis answered but refused us: the credentials, its certificate, or a handshake in the
    wrong protocol (plain text to a TLS port, or the other way round).

    A configuration error (CLI exit 2), not an outage: the same settings will be refused again.
    The message names the server and the cause, never a password.
    """


class LeaseLostError(TableError):
    """This worker's lease expired or was taken over: it must stop before submitting anything."""


class AdapterError(RelayerError):
    """A chain adapter failed."""


class SubmitError(AdapterError):
    """A submission was refused or failed; the worker retries it with backoff."""


class RefusedForGoodError(SubmitError):
    """The chain refuses this transfer for good (a bad signature, an unknown emitter, another
    target chain): the worker moves it to Failed with this reason at once, without retrying."""


class AlreadyRedeemedError(SubmitError):
    """Submitting showed the transfer is already redeemed (another submission won a race):
    the worker completes it as already redeemed, as if ``is_redeemed`` had said so."""


class UnknownSubmissionError(AdapterError):
    """Finality was asked about a submission id the chain does not know."""
