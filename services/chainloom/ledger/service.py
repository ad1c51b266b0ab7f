"""Building the ledger backend and the ETL's source: the one way every entry point opens them.

The CLI (``chainloom ledger load|range|header|...``), the operator's ETL pods and the Spark
jobs call :func:`open_backend` with a :class:`~chainloom.ledger.config.LedgerSettings`, so a
reader opened anywhere refuses writes the same way and a missing SQLite file is the same error.
:func:`open_source` chooses where ledgers come from (a dump file or rippled's gRPC API), so the
entry points only say which one they were given.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.cassandra import CassandraBackend
from chainloom.ledger.config import DatabaseSettings, LedgerSettings
from chainloom.ledger.errors import LedgerConfigError, LedgerInputError
from chainloom.ledger.sources.base import LedgerSource
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.sources.grpc import GrpcLedgerSource
from chainloom.ledger.sqlite import SqliteBackend


def make_backend(config: DatabaseSettings | Mapping[str, Any]) -> BackendInterface:
    """The backend ``database.type`` names, connected and with its range loaded.

    ``config`` is a :class:`DatabaseSettings` or a mapping of that shape (with or without the
    ``database`` key). Entry points use :func:`open_backend`, which also refuses to read a
    SQLite file that does not exist.
    """
    if not isinstance(config, DatabaseSettings):
        config = DatabaseSettings.from_mapping(config)
    backend: BackendInterface
    if config.type == "cassandra":
        backend = CassandraBackend(config.cassandra, read_only=config.read_only)
    else:
        backend = SqliteBackend(config.sqlite, read_only=config.read_only)
    backend.hard_fetch_ledger_range()
    return backend


def open_backend(
    settings: LedgerSettings, *, read_only: bool = False, existing: bool = False
) -> BackendInterface:
    """The configured backend, connected, with its range loaded.

    ``read_only`` (or ``database.read_only``) opens it for reading only; a SQLite file that
    does not exist is then an error rather than an empty database created on the spot. So it
    is with ``existing``, for a command that writes to a store it expects to find loaded.
    """
    database = settings.database
    if read_only and not database.read_only:
        database = database.model_copy(update={"read_only": True})
    must_exist = existing or database.read_only
    if must_exist and database.type == "sqlite" and not Path(database.sqlite.path).exists():
        raise LedgerConfigError(f"SQLite database {database.sqlite.path} does not exist")
    return make_backend(database)


def open_source(
    *, dump: Path | None = None, grpc: str | None = None, start: int | None = None
) -> LedgerSource:
    """The ledger source given: a ``dump`` file, or a rippled gRPC endpoint ``grpc``
    (host:port) whose first ledger for an empty store is ``start`` (default: its latest).

    Exactly one of ``dump`` and ``grpc`` is given (LedgerInputError otherwise); a dump that
    cannot be read raises the source's own error.
    """
    if (dump is None) == (grpc is None):
        raise LedgerInputError("give either a DUMP file or --grpc HOST:PORT")
    if dump is not None:
        return FileLedgerSource(dump)
    assert grpc is not None
    return GrpcLedgerSource(grpc, start=start)
