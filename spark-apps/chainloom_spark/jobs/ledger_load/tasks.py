"""ledger-load's tasks: an executor checks what needs only the ledger itself (the transaction
tree, every blob), derives the ``account_tx`` and NFT rows, writes a range of ledgers through
:class:`~chainloom.ledger.backend.BackendInterface`, flushes it without touching the range and
reports how far it got."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import LedgerSettings
from chainloom.ledger.errors import (
    BackendError,
    LedgerError,
)
from chainloom.ledger.etl import (
    check_transactions,
    diff_rows,
    parse_header,
    write_rows,
)
from chainloom.ledger.service import open_backend
from chainloom.ledger.sources.base import SourceLedger


@dataclass(frozen=True, slots=True)
class LedgerTask:
    """One ledger as shipped to an executor."""

    ledger: SourceLedger
    """The dump's record (header, transactions, state diff)."""
    successors: list[tuple[bytes, bytes]]
    """Its successor rows, computed by the driver from the state before it."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What an executor did with one range of ledgers."""

    first: int
    """The range's first ledger."""
    last: int
    """The range's last ledger."""
    written_through: int
    """Every ledger from ``first`` up to this one is written and flushed (``first - 1``:
    none)."""
    transactions: int
    """Transactions written."""
    objects: int
    """Object versions written."""
    refused: str | None = None
    """Why the ledger after ``written_through`` was refused (bad input)."""
    unavailable: str | None = None
    """Why the database failed (an outage)."""


_BACKENDS: dict[str, BackendInterface] = {}
"""One open backend per executor process and database (Python workers are reused)."""


def _executor_backend(settings: LedgerSettings) -> BackendInterface:
    key = settings.database.model_dump_json()
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = open_backend(settings)
        _BACKENDS[key] = backend
    # A range exists (the driver committed the first ledger); reading it makes the backend
    # write the ``diff`` rows a later ledger has.
    backend.hard_fetch_ledger_range()
    return backend


def write_partition(
    settings: LedgerSettings,
) -> Callable[[Iterable[LedgerTask]], Iterator[PartitionReport]]:
    """The executor side: check and write a range of ledgers, flush, report."""

    def run(tasks: Iterable[LedgerTask]) -> Iterator[PartitionReport]:
        batch = list(tasks)
        if not batch:
            return
        first = parse_header(batch[0].ledger.header).sequence
        last = first + len(batch) - 1
        written = current = first - 1
        transactions = objects = 0
        per_ledger_commit = settings.database.type == "sqlite"
        backend: BackendInterface | None = None
        try:
            backend = _executor_backend(settings)
            for task in batch:
                current += 1
                header = parse_header(task.ledger.header)
                checked = check_transactions(header, task.ledger)
                prepared = diff_rows(header, task.ledger, task.successors, checked=checked)
                try:
                    write_rows(backend, prepared)
                    if per_ledger_commit:
                        backend.flush_writes()
                except BaseException:
                    backend.abandon_writes()
                    raise
                if per_ledger_commit:
                    written = header.sequence
                transactions += len(prepared.transactions)
                objects += len(prepared.objects)
            backend.flush_writes()
            written = last
        except BackendError as failed:
            yield PartitionReport(
                first, last, written, transactions, objects, unavailable=str(failed)
            )
            return
        except LedgerError as refused:
            try:
                if backend is not None:
                    backend.flush_writes()
                    written = current - 1
            except BackendError as failed:
                yield PartitionReport(
                    first, last, written, transactions, objects, unavailable=str(failed)
                )
                return
            yield PartitionReport(first, last, written, transactions, objects, refused=str(refused))
            return
        yield PartitionReport(first, last, written, transactions, objects)

    return run
