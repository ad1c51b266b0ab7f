"""vaa-ingest's record decoding, refusal rules, flags and exit codes (no Spark started)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest

from chainloom.errors import UnavailableError
from chainloom.wormhole import all_known_emitters
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_spark.errors import JobArgumentError, SinkUnavailableError
from chainloom_spark.jobs import check_arguments
from chainloom_spark.jobs.vaa_ingest import Refusal, decode_record, main, message_key
from chainloom_spark.runner import JobExit, classify

VAA = DevGuardians().sign(emitter_chain=2, emitter_address=b"\x01" * 32, sequence=1, payload=b"x")
RAW = VAA.to_bytes()
EMITTERS = all_known_emitters()


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
        (RAW.hex(), None),
        (None, bytes(RAW)),
        (json.dumps({"vaa": fewer.to_bytes().hex()}), None),
    ]
    assert {message_key(text, data, EMITTERS) for text, data in copies} == {(VAA.row_key, False)}
    assert message_key(other.to_bytes().hex(), None, EMITTERS) == (other.row_key, False)
    assert other.row_key != VAA.row_key
    assert message_key("zzzz", None, EMITTERS) == ("", False)  # unreadable: refused later


def test_token_attestations_are_told_apart_for_the_first_pass():
    bridge = next(address for chain, address in EMITTERS.token_bridge if chain == 2)
    meta = b"\x02" + b"\x11" * 32 + (2).to_bytes(2, "big") + bytes((18,)) + b"T".ljust(32, b"\0")
    attestation = DevGuardians().sign(
        emitter_chain=2,
        emitter_address=bridge,
        sequence=9,
        payload=meta + b"Token".ljust(32, b"\0"),
    )
    assert message_key(attestation.to_bytes().hex(), None, EMITTERS) == (attestation.row_key, True)
    broken = DevGuardians().sign(
        emitter_chain=2, emitter_address=bridge, sequence=10, payload=b"\x02" + b"\x11" * 5
    )
    assert message_key(broken.to_bytes().hex(), None, EMITTERS) == (broken.row_key, False)


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
