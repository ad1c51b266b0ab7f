"""vaa-ingest's record decoding, refusal rules, flags and exit codes (no Spark started)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest

from chainloom.errors import UnavailableError
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_spark.errors import JobArgumentError, SinkUnavailableError
from chainloom_spark.jobs import check_arguments
from chainloom_spark.jobs.vaa_ingest import (
    Refusal,
    decode_record,
    main,
    message_key,
    partition_of,
)
from chainloom_spark.runner import JobExit, classify

VAA = DevGuardians().sign(emitter_chain=2, emitter_address=b"\x01" * 32, sequence=1, payload=b"x")
RAW = VAA.to_bytes()


@pytest.mark.parametrize(
    "text", [RAW.hex(), "0x" + RAW.hex(), base64.b64encode(RAW).decode(), f"  {RAW.hex()}  "]
)
def test_text_lines_are_hex_or_base64(text):
    assert decode_record(text, None) == (RAW, None)


def test_json_lines_carry_the_tx_id():
    line = json.dumps({"vaa": RAW.hex(), "tx_id": "0x" + "ab" * 32, "observed_at": "2024-01-01"})
    assert decode_record(line, None) == (RAW, "0x" + "ab" * 32)


def test_parquet_bytes_pass_through():
    assert decode_record(None, bytearray(RAW)) == (RAW, None)


def test_copies_of_a_message_share_a_key_whatever_their_signatures_or_encoding():
    guardians = DevGuardians()
    fewer = guardians.sign(
        emitter_chain=2, emitter_address=b"\x01" * 32, sequence=1, payload=b"x", signers=[0]
    )
    other = guardians.sign(emitter_chain=2, emitter_address=b"\x01" * 32, sequence=2, payload=b"x")
    copies = [
        Record(RAW.hex(), None),
        Record(None, bytearray(RAW)),
        Record(json.dumps({"vaa": fewer.to_bytes().hex()}), None),
    ]
    assert {message_key(r) for r in copies} == {VAA.row_key}
    assert message_key(Record(other.to_bytes().hex(), None)) == other.row_key != VAA.row_key
    assert message_key(Record("zzzz", None)) == ""  # unreadable: refused by the job later
    assert partition_of(VAA.row_key) == partition_of(str(VAA.row_key))  # no hash seed involved
    assert partition_of(VAA.row_key) != partition_of(other.row_key)


@dataclass
class Record:
    text: str | None
    data: bytearray | None


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("zzzz", "encoding"),
        ("{not json", "json"),
        ('{"tx_id": "x"}', "json"),
        ('{"vaa": 5}', "json"),
        (json.dumps({"vaa": RAW.hex(), "tx_id": 7}), "tx-id"),
    ],
)
def test_unreadable_records_are_refused_with_their_rule(text, rule):
    with pytest.raises(Refusal) as caught:
        decode_record(text, None)
    assert caught.value.rule == rule


def test_flags_are_checked_without_spark():
    check_arguments("vaa-ingest", ["--input", "x", "--table", "t"])
    with pytest.raises(JobArgumentError, match="--input"):
        check_arguments("vaa-ingest", ["--table", "t"])


def test_exit_codes(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("BIGTABLE_EMULATOR_HOST", raising=False)
    assert main(["--table", "t"]) == JobExit.BAD_INPUT
    assert main(["--input", str(tmp_path / "missing.txt"), "--table", "t"]) == JobExit.BAD_INPUT
    assert "missing.txt: does not exist" in capsys.readouterr().err
    assert classify(SinkUnavailableError("down"))[0] is JobExit.UNAVAILABLE
    assert classify(UnavailableError("down"))[0] is JobExit.UNAVAILABLE
    worker_text = RuntimeError("Traceback ...\nSinkUnavailableError: [sink unavailable] gone\n")
    assert classify(worker_text) == (JobExit.UNAVAILABLE, "error: [sink unavailable] gone")
    assert classify(ValueError("bug"))[0] is JobExit.FAILED
    assert classify(KeyboardInterrupt())[0] is JobExit.INTERRUPTED
