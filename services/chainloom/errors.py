"""The root of every error chainloom raises on purpose.

Each package keeps its own errors in one module (``chainloom.<package>.errors``) that derive
from :class:`ChainloomError`, so a caller can catch "anything chainloom refused" in one place
and still tell a malformed VAA from a store outage::

    ChainloomError
    ├── UnavailableError             marker: a server or store cannot be reached (CLI exit 4)
    ├── ConflictError                marker: data contradicts what is stored (CLI exit 3)
    ├── InputFileError               a file the user named is missing, unreadable or not text
    ├── InvalidBackoffError          a chainloom.backoff.Backoff with impossible settings
    ├── Base58Error                  text that is not base58 in the alphabet given
    ├── chainloom.extensions.ExtensionMissingError      a dev-kit part named, none installed
    ├── chainloom.settings.errors.SettingsError
    ├── chainloom.wormhole.errors.WormholeError
    ├── chainloom.spy.errors.SpyError
    ├── chainloom.publicrpc.errors.PublicRpcError
    ├── chainloom.eventstore.errors.EventStoreError
    │   └── chainloom.eventstore.api.errors.ApiError
    ├── chainloom.indexer.errors.IndexerError
    ├── chainloom.ledger.errors.LedgerError
    ├── chainloom.relayer.errors.RelayerError
    ├── chainloom.evm.errors.EvmError
    ├── chainloom_operator.errors.OperatorError         (the operator package)
    └── chainloom_spark.errors.SparkJobError            (the Spark jobs package)

Each subtree is drawn in its own ``errors.py``. The dev kit (``chainloom_dev``, not part of
the product) derives its errors from these as well, so the CLI treats them alike:
``chainloom_dev.stack.errors.StackError`` from :class:`ChainloomError`, and
``chainloom_dev.sim.errors.DevGuardianError`` from ``WormholeError``.

The two markers carry no behaviour: a package error for an outage also derives from
:class:`UnavailableError` (``class StoreUnavailableError(EventStoreError, UnavailableError)``),
one for conflicting data from :class:`ConflictError`, so the CLI's error boundary
(:mod:`chainloom.cli.boundary`) can give every command the same exit code for the same kind of
failure without knowing each package's tree. Any other :class:`ChainloomError` is a refusal of
bad input or configuration.
"""

from __future__ import annotations


class ChainloomError(Exception):
    """Base class of every error chainloom raises deliberately."""


class UnavailableError(ChainloomError):
    """Marker base: a server or store could not be reached, or kept failing past its deadline.

    Package errors for outages derive from it next to their own package base; the message
    names the endpoint and the cause.
    """


class ConflictError(ChainloomError):
    """Marker base: input contradicts data already stored (what was stored is kept)."""


class InputFileError(ChainloomError):
    """A file named on the command line (or in the environment) cannot be used as input.

    The message names the option, the path and the problem (missing, a directory, unreadable,
    not UTF-8 text), never the file's content.
    """

    def __init__(self, path: str, problem: str, *, option: str | None = None) -> None:
        where = f"{option} {path}" if option else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        """The path as the user gave it."""
        self.problem = problem
        """What is wrong with it, in a few words."""
        self.option = option
        """The option or argument that named it (``--config``), when known."""


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
