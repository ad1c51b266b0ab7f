"""The ledger-dump file format: one JSON object per line, one ledger per line.

Why JSON lines: a dump is written once (by ``chainloom ledger generate`` or by exporting from a
source) and read sequentially by the ETL; a text format is inspectable with ``head`` and ``jq``,
appends cleanly, and its cost (hex doubles the size) is small next to the database writes. Each
line is::

    {"sequence": 38130, "kind": "diff",
     "header": "<hex: 118-byte header + 32-byte ledger hash>",
     "transactions": [["<hex tx blob>", "<hex metadata blob>"], ...],
     "objects": [["<hex 32-byte key>", "<hex blob, empty = deleted>"], ...]}

The first line has ``"kind": "full"`` and ``objects`` is the complete state of that ledger;
every later line is the next ledger (sequence + 1) with ``objects`` its state diff. The
``sequence`` key comes first so a reader can index a file without parsing whole lines. The
format is documented for users in ``docs/ledger-etl.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.etl import SourceLedger
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


class DumpFile:
    """Random access to a dump's records by sequence (an index of line offsets)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise LedgerInputError(f"ledger dump {path} does not exist")
        self._offsets: dict[int, int] = {}
        self._order: list[int] = []
        self._end = 0
        self._lines = 0
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
                if not line.endswith(b"\n"):
                    break  # a line still being written: index it next time
                self._lines += 1
                if line.strip():
                    match = _SEQUENCE.match(line)
                    if match is None:
                        raise LedgerInputError(
                            f"{path}:{self._lines}: not a ledger-dump record (no leading sequence)"
                        )
                    sequence = int(match.group(1))
                    if sequence in self._offsets:
                        raise LedgerInputError(
                            f"{path}:{self._lines}: ledger {sequence} appears twice"
                        )
                    self._offsets[sequence] = self._end
                    self._order.append(sequence)
                self._end += len(line)
        return len(self._order) - before

    @property
    def sequences(self) -> list[int]:
        """The sequences in file order."""
        return list(self._order)

    def read(self, sequence: int) -> SourceLedger | None:
        """The record of ``sequence``, or None if the dump does not hold it."""
        offset = self._offsets.get(sequence)
        if offset is None:
            return None
        # Opened per read: a source may live long and be shared; no handle to leak.
        with self.path.open("rb") as handle:
            handle.seek(offset)
            line = handle.readline()
        found, ledger = decode_record(line, f"{self.path} (ledger {sequence})")
        if found != sequence:  # pragma: no cover - the index was built from the same bytes
            raise LedgerInputError(f"{self.path}: index points at ledger {found}")
        return ledger

    def __iter__(self) -> Iterator[tuple[int, SourceLedger]]:
        for sequence in self._order:
            ledger = self.read(sequence)
            assert ledger is not None
            yield sequence, ledger

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
