"""The ledger-dump file format: one JSON object per line, one ledger per line.

Why JSON lines: a dump is written once (by ``chainloom-dev ledger generate`` or by exporting from a
source) and read sequentially by the ETL; a text format is inspectable with ``head`` and ``jq``,
appends cleanly, and its cost (hex doubles the size) is small next to the database writes. Each
line is::

    {"sequence": 38130, "kind": "diff",
     "header": "<hex: 118-byte header + 32-byte ledger hash>",
     "transactions": [["<hex tx blob>", "<hex metadata blob>"], ...],
     "objects": [["<hex 32-byte key>", "<hex blob, empty = deleted>"], ...]}

The first line has ``"kind": "full"`` and ``objects`` is the complete state of that ledger;
every later line is the next ledger (sequence + 1) with ``objects`` its state diff. A line
that breaks the sequence (a gap, a ledger out of order, a duplicate) is an input error, raised
when a reader gets there -- never taken for the end of the dump. The
``sequence`` key comes first so a reader can index a file without parsing whole lines. The
format is documented for users in ``docs/ledger-etl.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.errors import LedgerSequenceError
from chainloom.ledger.types import LedgerObject

_SEQUENCE = re.compile(rb'^\{"sequence": ?(\d+)')


def encode_record(ledger: SourceLedger, sequence: int) -> str:
    """One dump line (without the newline)."""
    record = {
        "sequence": sequence,
        "kind": "full" if ledger.is_full_state else "diff",
        "header": ledger.header.hex().upper(),
        "transactions": [[t.hex().upper(), m.hex().upper()] for t, m in ledger.transactions],
        "objects": [[o.key.hex().upper(), o.blob.hex().upper()] for o in ledger.objects],
    }
    return json.dumps(record, separators=(",", ":"))


def decode_record(line: bytes | str, where: str) -> tuple[int, SourceLedger]:
    """Parse one dump line; ``where`` (file and line) names it in errors."""
    try:
        record: Any = json.loads(line)
        sequence = record["sequence"]
        kind = record["kind"]
        if kind not in ("full", "diff") or not isinstance(sequence, int):
            raise ValueError(f"kind {kind!r} / sequence {sequence!r}")
        ledger = SourceLedger(
            header=bytes.fromhex(record["header"]),
            transactions=tuple(
                (bytes.fromhex(t), bytes.fromhex(m)) for t, m in record["transactions"]
            ),
            objects=tuple(
                LedgerObject(bytes.fromhex(k), bytes.fromhex(b)) for k, b in record["objects"]
            ),
            is_full_state=kind == "full",
        )
    except (ValueError, KeyError, TypeError) as bad:
        raise LedgerInputError(f"{where}: not a ledger-dump record ({bad})") from None
    return sequence, ledger


class DumpWriter:
    """Writes a dump: the full-state ledger first, then consecutive diffs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] = path.open("w", encoding="ascii")
        self._next: int | None = None

    def write(self, ledger: SourceLedger, sequence: int) -> None:
        """Append one ledger (the first must be a full state, then sequence + 1 each time)."""
        if self._next is None and not ledger.is_full_state:
            raise LedgerInputError(f"{self.path}: the first ledger of a dump must be a full state")
        if self._next is not None and sequence != self._next:
            raise LedgerInputError(
                f"{self.path}: ledger {sequence} written after {self._next - 1}; a dump holds "
                "consecutive ledgers"
            )
        self._handle.write(encode_record(ledger, sequence) + "\n")
        self._next = sequence + 1

    def close(self) -> None:
        """Flush and close the file."""
        self._handle.close()

    def __enter__(self) -> DumpWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class SequenceBreak:
    """Where a dump stops being consecutive: records from ``line`` on are not served."""

    line: int
    """The 1-based line holding the record that does not follow."""
    expected: int
    """The ledger that should be on that line (the last good one + 1)."""
    found: int
    """The ledger that is there instead."""
    reason: str
    """The whole explanation, naming the file, the line and the sequences."""


class DumpFile:
    """Random access to a dump's records by sequence (an index of line offsets).

    Records must be consecutive. Indexing stops at the first record that does not follow the
    one before it (a gap, a ledger out of order, a duplicate): the records before it are
    served, and asking for any ledger from the expected one on raises
    :class:`~chainloom.ledger.sources.errors.LedgerSequenceError` naming it. So a loader
    stores everything up to the fault, then stops with an input error instead of taking the
    fault for the end of the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise LedgerInputError(f"ledger dump {path} does not exist")
        self._offsets: dict[int, int] = {}
        self._order: list[int] = []
        self._end = 0
        self._lines = 0
        self.broken: SequenceBreak | None = None
        """The first record that does not follow, once one is found."""
        self.refresh()
        if not self._order:
            raise LedgerInputError(f"ledger dump {path} is empty")

    def refresh(self) -> int:
        """Index records appended since the last look (complete lines only); return how many."""
        before = len(self._order)
        path = self.path
        with path.open("rb") as handle:
            handle.seek(self._end)
            for line in handle:
                if self.broken is not None or not line.endswith(b"\n"):
                    break  # past a fault, or a line still being written (indexed next time)
                self._lines += 1
                if line.strip():
                    sequence = self._sequence_of(line, self._lines)
                    expected = self._order[-1] + 1 if self._order else sequence
                    if sequence != expected:
                        self.broken = self._describe(handle, self._lines, expected, sequence)
                        break
                    self._offsets[sequence] = self._end
                    self._order.append(sequence)
                self._end += len(line)
        return len(self._order) - before

    def _sequence_of(self, line: bytes, number: int) -> int:
        match = _SEQUENCE.match(line)
        if match is None:
            raise LedgerInputError(
                f"{self.path}:{number}: not a ledger-dump record (no leading sequence)"
            )
        return int(match.group(1))

    def _describe(
        self, rest: Iterator[bytes], number: int, expected: int, found: int
    ) -> SequenceBreak:
        """Explain why ledger ``found`` on line ``number`` does not follow; ``rest`` is the file
        after that line (read to tell a ledger out of order from a missing one)."""
        where = f"ledger dump {self.path}:{number}"
        previous = expected - 1
        if found in self._offsets:
            reason = (
                f"{where}: ledger {found} appears a second time, where ledger {expected} should "
                f"follow ledger {previous}"
            )
        elif found < expected:
            reason = (
                f"{where}: ledger {found} is out of order: ledger {expected} should follow "
                f"ledger {previous}"
            )
        else:
            reason = (
                f"{where}: ledger {expected} is missing: ledger {previous} is followed by "
                f"ledger {found}"
            )
            later = number
            for line in rest:
                later += 1
                match = _SEQUENCE.match(line)
                if match is not None and int(match.group(1)) == expected:
                    reason = (
                        f"{where}: ledger {expected} is out of order: ledger {previous} is "
                        f"followed by ledger {found}, and {expected} comes later, on line {later}"
                    )
                    break
        return SequenceBreak(number, expected, found, reason)

    @property
    def sequences(self) -> list[int]:
        """The sequences in file order (up to a fault)."""
        return list(self._order)

    def read(self, sequence: int) -> SourceLedger | None:
        """The record of ``sequence``, or None if the dump does not hold it (yet).

        Raises :class:`LedgerSequenceError` for a ledger at or past a fault.
        """
        offset = self._offsets.get(sequence)
        if offset is None:
            self._check_break(sequence)
            return None
        # Opened per read: a source may live long and be shared; no handle to leak.
        with self.path.open("rb") as handle:
            handle.seek(offset)
            line = handle.readline()
        found, ledger = decode_record(line, f"{self.path} (ledger {sequence})")
        if found != sequence:  # pragma: no cover - the index was built from the same bytes
            raise LedgerInputError(f"{self.path}: index points at ledger {found}")
        return ledger

    def _check_break(self, sequence: int) -> None:
        broken = self.broken
        if broken is not None and sequence >= broken.expected:
            raise LedgerSequenceError(broken.reason, expected=broken.expected, found=broken.found)

    def __iter__(self) -> Iterator[tuple[int, SourceLedger]]:
        """Every record in order; raises :class:`LedgerSequenceError` after the last good one
        if the dump has a fault."""
        for sequence in self._order:
            ledger = self.read(sequence)
            assert ledger is not None
            yield sequence, ledger
        if self._order:
            self._check_break(self._order[-1] + 1)

    def close(self) -> None:
        """Nothing to release (kept for the source protocol)."""


def state_at(dump: DumpFile, sequence: int) -> dict[bytes, bytes]:
    """The full state at ``sequence``: the dump's full record with later diffs applied."""
    state: dict[bytes, bytes] | None = None
    for found, ledger in dump:
        if ledger.is_full_state:
            state = {o.key: o.blob for o in ledger.objects}
        elif state is not None:
            for obj in ledger.objects:
                if obj.blob:
                    state[obj.key] = obj.blob
                else:
                    state.pop(obj.key, None)
        if found == sequence:
            break
    else:
        raise LedgerInputError(f"{dump.path} does not hold ledger {sequence}")
    if state is None:
        raise LedgerInputError(f"{dump.path} has no full-state record before ledger {sequence}")
    return state
