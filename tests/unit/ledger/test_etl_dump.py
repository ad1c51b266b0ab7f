"""The ledger-dump file format: round trip, random access, clear errors for bad files, and
``ledger load`` of a dump that skips, reorders or repeats a ledger (exit 2, the ledgers before
it stored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chainloom.cli.ledger import ledger
from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.dump import (
    DumpFile,
    DumpWriter,
    decode_record,
    encode_record,
    state_at,
)
from chainloom.ledger.sources.errors import LedgerSequenceError
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.ledger.types import LedgerObject
from tests.ledger_support import FIRST, generate_dump

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
        ('{"sequence": 5, "kind": "full"}\nhello\n', ":2: not a ledger-dump record"),
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


def _write_sequences(path: Path, sequences: list[int]) -> None:
    """A dump whose lines hold ``sequences`` in that order (the first a full state)."""
    lines = [encode_record(_full(), sequences[0])]
    lines += [encode_record(_diff((LedgerObject(K3, bytes([n])),)), n) for n in sequences[1:]]
    path.write_text("".join(line + "\n" for line in lines))


@pytest.mark.parametrize(
    ("sequences", "expected", "found", "message"),
    [
        (
            [10, 11, 13, 14],
            12,
            13,
            r":3: ledger 12 is missing: ledger 11 is followed by ledger 13$",
        ),
        (
            [10, 11, 13, 12, 14],
            12,
            13,
            r":3: ledger 12 is out of order: ledger 11 is followed by ledger 13, and 12 comes "
            r"later, on line 4$",
        ),
        (
            [10, 11, 11, 12],
            12,
            11,
            r":3: ledger 11 appears a second time, where ledger 12 should follow ledger 11$",
        ),
        ([10, 11, 9], 12, 9, r":3: ledger 9 is out of order: ledger 12 should follow ledger 11$"),
    ],
    ids=["gap", "out-of-order", "duplicate", "before-the-first"],
)
def test_a_break_in_the_sequence_serves_what_comes_before_then_names_it(
    tmp_path: Path, sequences: list[int], expected: int, found: int, message: str
) -> None:
    path = tmp_path / "d.jsonl"
    _write_sequences(path, sequences)
    dump = DumpFile(path)
    assert dump.sequences == [10, 11]
    assert dump.read(11) is not None
    assert state_at(dump, 11) == {K1: b"a", K2: b"b", K3: bytes([11])}
    for beyond in (expected, expected + 1, 14):
        with pytest.raises(LedgerSequenceError, match=message) as refused:
            dump.read(beyond)
    assert (refused.value.expected, refused.value.found) == (expected, found)
    with pytest.raises(LedgerSequenceError, match=message):
        list(dump)
    source = FileLedgerSource(path)
    assert source.latest_sequence() == 11
    assert source.fetch_diff(11) == dump.read(11)
    with pytest.raises(LedgerSequenceError, match=f"ledger dump {path}:3: "):
        source.fetch_diff(12)


def test_a_gap_appended_to_a_followed_dump_is_named(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    _write_sequences(path, [10, 11])
    source = FileLedgerSource(path)
    assert source.fetch_diff(12) is None
    with path.open("a") as handle:
        handle.write(encode_record(_diff(()), 13) + "\n")
    with pytest.raises(LedgerSequenceError, match=":3: ledger 12 is missing"):
        source.fetch_diff(12)


@pytest.fixture(scope="module")
def real_lines(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a real dump: ledger FIRST's state and 6 generated ledgers."""
    path = tmp_path_factory.mktemp("dump") / "ledgers.jsonl"
    generate_dump(vectors_dir, path, seed=3, ledgers=6, txs=10)
    return path.read_text().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (
            [0, 1, 2, 3, 5, 6],
            ":5: ledger 38133 is missing: ledger 38132 is followed by ledger 38134",
        ),
        ([0, 1, 2, 3, 5, 4, 6], ":5: ledger 38133 is out of order"),
        ([0, 1, 2, 3, 3, 4, 5, 6], ":5: ledger 38132 appears a second time"),
    ],
    ids=["gap", "out-of-order", "duplicate"],
)
def test_load_stops_at_a_break_with_exit_2_keeping_the_ledgers_before_it(
    real_lines: list[str], tmp_path: Path, order: list[int], message: str
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(real_lines[i] for i in order))
    db = ["--sqlite-path", str(tmp_path / "l.db")]
    runner = CliRunner()
    result = runner.invoke(ledger, ["load", str(broken), "--quiet", *db], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: ledger dump {broken}{message}")
    stored = runner.invoke(ledger, ["range", "--json", *db], catch_exceptions=False)
    assert json.loads(stored.stdout) == {"min": FIRST, "max": FIRST + 3}
    # The repaired dump continues from there.
    intact = tmp_path / "intact.jsonl"
    intact.write_text("".join(real_lines))
    result = runner.invoke(ledger, ["load", str(intact), "--json", *db], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    loaded = json.loads(result.stdout)
    assert (loaded["resumed_from"], loaded["last_committed"]) == (FIRST + 3, FIRST + 6)
