"""The interface every ledger source gives the ETL, apart from the loop that drives it.

A source (a dump file, rippled's gRPC API, the dev kit's replay server behind that API) hands
over validated ledgers as :class:`SourceLedger` records: the full state of the first one, then
one diff per ledger. The ETL (:mod:`chainloom.ledger.etl`) only knows this Protocol, and which
source runs is chosen by :func:`chainloom.ledger.service.open_source`, as Clio keeps its ETL
source interface apart from the ETL loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from chainloom.ledger.types import LedgerObject


@dataclass(frozen=True, slots=True)
class SourceLedger:
    """One ledger as a source delivers it."""

    header: bytes
    """The header: 118 bytes, or 150 with the ledger hash appended."""
    transactions: tuple[tuple[bytes, bytes], ...]
    """``(transaction blob, metadata blob)`` pairs."""
    objects: tuple[LedgerObject, ...]
    """The full state (``is_full_state``) or the diff to the previous ledger (empty blob =
    deleted)."""
    is_full_state: bool
    """Whether ``objects`` is the complete state (the first ledger) rather than a diff."""


class LedgerSource(Protocol):
    """Where ledgers come from: a dump file, a rippled gRPC endpoint, a replay server."""

    def first_sequence(self) -> int:
        """The ledger this source offers the full state of (where an empty store starts)."""
        ...

    def latest_sequence(self) -> int | None:
        """The newest ledger the source has (for the lag), ``None`` if unknown."""
        ...

    def fetch_full(self, sequence: int) -> SourceLedger:
        """Header, transactions and the complete state of ``sequence``."""
        ...

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        """Header, transactions and state diff of ``sequence``; ``None`` if not available yet."""
        ...

    def close(self) -> None:
        """Release files or connections."""
        ...
