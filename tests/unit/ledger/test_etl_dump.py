"""The ledger-dump file format: round trip, random access, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.etl import SourceLedger
from chainloom.ledger.sources.dump import DumpFile, DumpWriter, decode_record, state_at
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.types import LedgerObject

K1, K2, K3 = (bytes([n]) * 32 for n in (1, 2, 3))


def _full() -> SourceLedger:
    return SourceLedger(
        header=b"\x00" * 150,
        transactions=((b"\x12\x00\x00", b"\x20\x1c\x00\x00\x00\x00"),),
        objects=(LedgerObject(K1, b"a"), LedgerObject(K2, b"b")),
        is_full_state=True,
    )


def _diff(objects: tuple[LedgerObject, ...]) -> SourceLedger:
    return SourceLedger(header=b"\x01" * 150, transactions=(), objects=objects, is_full_state=False)


def test_round_trip_random_access_and_state_replay(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with DumpWriter(path) as writer:
        writer.write(_full(), 10)
        writer.write(_diff((LedgerObject(K1, b""), LedgerObject(K3, b"c"))), 11)
        writer.write(_diff((LedgerObject(K2, b"B"),)), 12)
    dump = DumpFile(path)
    assert dump.sequences == [10, 11, 12]
    assert dump.read(10) == _full()
    assert dump.read(13) is None
    assert state_at(dump, 10) == {K1: b"a", K2: b"b"}
    assert state_at(dump, 12) == {K2: b"B", K3: b"c"}
    with pytest.raises(LedgerInputError, match="does not hold ledger 13"):
        state_at(dump, 13)
    source = FileLedgerSource(path)
    assert (source.first_sequence(), source.latest_sequence()) == (10, 12)
    full = source.fetch_full(11)
    assert full.is_full_state
    assert full.objects == (LedgerObject(K2, b"b"), LedgerObject(K3, b"c"))
    assert source.fetch_diff(12) == dump.read(12)


def test_the_writer_refuses_a_diff_first_and_gaps(tmp_path: Path) -> None:
    with DumpWriter(tmp_path / "a.jsonl") as writer, pytest.raises(LedgerInputError, match="first"):
        writer.write(_diff(()), 10)
    with DumpWriter(tmp_path / "b.jsonl") as writer:
        writer.write(_full(), 10)
        with pytest.raises(LedgerInputError, match="ledger 12 written after 10"):
            writer.write(_diff(()), 12)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("hello\n", ":1: not a ledger-dump record"),
        ('{"sequence": 5, "kind": "full"}\n{"sequence": 5}\n', ":2: ledger 5 appears twice"),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(LedgerInputError, match=message):
        DumpFile(path)


def test_bad_records_name_the_place() -> None:
    with pytest.raises(LedgerInputError, match=r"x\.jsonl:3: not a ledger-dump record"):
        decode_record('{"sequence": 1, "kind": "full", "header": "zz"}', "x.jsonl:3")
    with pytest.raises(LedgerInputError, match="kind 'other'"):
        decode_record('{"sequence": 1, "kind": "other"}', "x")
    with pytest.raises(LedgerInputError, match="does not exist"):
        DumpFile(Path("/nonexistent/dump.jsonl"))


def test_a_dump_starting_with_a_diff_is_not_a_source(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"sequence": 3, "kind": "diff", "header": "", "transactions": [], "objects": []}\n'
    )
    with pytest.raises(LedgerInputError, match="must hold a full state"):
        FileLedgerSource(path)


def test_records_appended_later_are_found_and_partial_lines_wait(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with DumpWriter(path) as writer:
        writer.write(_full(), 10)
    source = FileLedgerSource(path)
    assert source.fetch_diff(11) is None
    line = path.read_text()
    with path.open("a") as handle:
        handle.write(line.replace('"sequence":10,"kind":"full"', '"sequence":11,"kind":"diff"'))
        handle.write('{"sequence":12,"kind":"di')  # still being written
    record = source.fetch_diff(11)
    assert record is not None
    assert not record.is_full_state
    assert source.fetch_diff(12) is None
    assert source.latest_sequence() == 11
