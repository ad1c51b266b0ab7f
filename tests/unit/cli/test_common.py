"""Shared CLI helpers: reading user files, finding the test vectors, redacting URLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainloom.cli import common as _common
from chainloom.cli.common import (
    check_input_file,
    read_text_file,
    resolve_vectors_file,
)
from chainloom.errors import InputFileError


def test_read_text_file_names_option_and_problem(tmp_path: Path):
    (tmp_path / "ok.txt").write_text("héllo")
    assert read_text_file(tmp_path / "ok.txt") == "héllo"
    (tmp_path / "bin").write_bytes(b"ab\xff")
    cases = {
        tmp_path / "absent": "does not exist",
        tmp_path: "is a directory, not a file",
        tmp_path / "bin": "not UTF-8 text (byte 0xff at offset 2; a binary file?)",
    }
    for path, problem in cases.items():
        with pytest.raises(InputFileError) as raised:
            read_text_file(path, option="--config")
        assert str(raised.value) == f"--config {path}: {problem}"


def test_check_input_file_reads_only_the_head(tmp_path: Path):
    late_binary = tmp_path / "dump"
    late_binary.write_bytes(b"1 {}\n" * 20_000 + b"\xff")
    check_input_file(late_binary, option="DUMP")  # the head is text: accepted
    early_binary = tmp_path / "early"
    early_binary.write_bytes(b"\xff" + b"x" * 10)
    with pytest.raises(InputFileError, match=r"^DUMP .*early: not UTF-8 text"):
        check_input_file(early_binary, option="DUMP")


def test_vectors_from_a_directory_or_a_file(tmp_path: Path):
    vectors = tmp_path / "xrpl_vectors.json"
    vectors.write_text(json.dumps([{"kind": "ledger_header"}]))
    assert resolve_vectors_file(tmp_path, "xrpl_vectors.json") == vectors
    assert resolve_vectors_file(vectors, "xrpl_vectors.json") == vectors
    vectors.write_text("{not json")
    with pytest.raises(InputFileError, match="not JSON"):
        resolve_vectors_file(tmp_path, "xrpl_vectors.json")


def test_default_vectors_say_where_they_were_looked_for(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(_common, "source_checkout_vectors", lambda: tmp_path / "nowhere")
    with pytest.raises(InputFileError) as raised:
        resolve_vectors_file(None, "xrpl_vectors.json")
    message = str(raised.value)
    assert str(tmp_path / "nowhere") in message
    assert "--vectors" in message
    assert "$CHAINLOOM_VECTORS" in message


def test_default_vectors_beside_the_checkout_do_not_depend_on_the_working_directory():
    checkout = Path(_common.__file__).resolve().parents[3]  # services/chainloom/cli/_common.py
    assert _common.source_checkout_vectors() == checkout.parent / "shared" / "vectors"
