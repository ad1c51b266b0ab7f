"""A :class:`~chainloom.ledger.sources.base.LedgerSource` reading a ledger-dump file."""

from __future__ import annotations

from pathlib import Path

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.dump import DumpFile, state_at
from chainloom.ledger.types import LedgerObject


class FileLedgerSource:
    """Serves the ledgers of one dump: the full state of its first, then each diff."""

    def __init__(self, path: Path | str) -> None:
        self._dump = DumpFile(Path(path))
        first = self._dump.sequences[0]
        record = self._dump.read(first)
        if record is None or not record.is_full_state:
            raise LedgerInputError(f"{path}: the first record must hold a full state")
        self._first = first

    def first_sequence(self) -> int:
        """The dump's full-state ledger."""
        return self._first

    def latest_sequence(self) -> int | None:
        """The dump's last ledger."""
        return max(self._dump.sequences)

    def fetch_full(self, sequence: int) -> SourceLedger:
        """The full state of any ledger of the dump (later ones by replaying diffs)."""
        record = self._dump.read(sequence)
        if record is None:
            raise LedgerInputError(f"{self._dump.path} does not hold ledger {sequence}")
        if record.is_full_state:
            return record
        state = state_at(self._dump, sequence)
        objects = tuple(LedgerObject(k, b) for k, b in sorted(state.items()))
        return SourceLedger(record.header, record.transactions, objects, is_full_state=True)

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        """The record of ``sequence``; None past the end of the dump (re-checked each time, so
        ``load --follow`` picks up ledgers appended to the file). Raises
        :class:`~chainloom.ledger.sources.errors.LedgerSequenceError` where the dump skips,
        reorders or repeats a ledger."""
        record = self._dump.read(sequence)
        if record is None:
            self._dump.refresh()  # may also find a break in the sequence, which read() raises
            record = self._dump.read(sequence)
        return record

    def close(self) -> None:
        """Close the file."""
        self._dump.close()
