"""Building the ledger backend from its settings: the one way every entry point opens it.

The CLI (``chainloom ledger load|range|header|...``), the operator's ETL pods and the Spark
jobs call :func:`open_backend` with a :class:`~chainloom.ledger.config.LedgerSettings`, so a
reader opened anywhere refuses writes the same way and a missing SQLite file is the same error.
"""

from __future__ import annotations

from pathlib import Path

from chainloom.ledger.backend import BackendInterface, make_backend
from chainloom.ledger.config import LedgerSettings
from chainloom.ledger.errors import LedgerConfigError


def open_backend(settings: LedgerSettings, *, read_only: bool = False) -> BackendInterface:
    """The configured backend, connected, with its range loaded.

    ``read_only`` (or ``database.read_only``) opens it for reading only; a SQLite file that
    does not exist is then an error rather than an empty database created on the spot.
    """
    database = settings.database
    if read_only and not database.read_only:
        database = database.model_copy(update={"read_only": True})
    if database.read_only and database.type == "sqlite" and not Path(database.sqlite.path).exists():
        raise LedgerConfigError(f"SQLite database {database.sqlite.path} does not exist")
    return make_backend(database)
