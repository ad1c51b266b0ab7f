"""``chainloom vaa``: the decode output contract, exit statuses, generate and guardian-set."""

from __future__ import annotations

import base64
import json
from typing import Any

from click.testing import CliRunner, Result

from chainloom.cli.vaa import vaa
from chainloom.wormhole import parse_vaa
from chainloom_dev.cli.vaa import vaa as dev_vaa
from chainloom_dev.sim.dev_guardians import DevGuardians

DECODE_KEYS = {
    "version",
    "guardian_set_index",
    "signatures",
    "timestamp",
    "nonce",
    "emitter_chain",
    "emitter_chain_name",
    "emitter_address",
    "sequence",
    "consistency_level",
    "payload",
    "digest",
    "message_id",
    "row_key",
    "payload_decoded",
}
VERIFY_KEYS = {"signers", "quorum", "quorum_met", "valid"}


def _run(args: list[str], stdin: str | None = None) -> Result:
    group = dev_vaa if args[:1] == ["generate"] else vaa
    return CliRunner().invoke(group, args, input=stdin)


def _objects(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_decode_vector_with_verify(vaa_vectors):
    vector = vaa_vectors[0]
    expected = vector["expected"]
    result = _run(["decode", "--verify", "--guardian-set", "mainnet", vector["hex"]])
    assert result.exit_code == 0, result.output
    (view,) = _objects(result.stdout)
    assert set(view) >= DECODE_KEYS | VERIFY_KEYS
    assert view["digest"] == expected["digest"]
    assert view["message_id"] == expected["message_id"]
    assert view["row_key"] == expected["bigtable_row_key"]
    assert view["sequence"] == expected["sequence"]
    assert view["emitter_chain_name"] == "terra"
    assert view["signers"] == expected["recovered_signers"]
    assert view["valid"] is True
    assert view["quorum"] == 13
    assert [s["guardian_index"] for s in view["signatures"]] == expected[
        "signature_guardian_indices"
    ]
    decoded = view["payload_decoded"]
    assert decoded["type"] == "token_transfer"
    assert decoded["amount"] == "40006106"
    assert decoded["fee"] == "6106"
    assert decoded["to"] == expected["token_bridge"]["to"]
    assert decoded["token_address_native"] == "uluna"


def test_decode_reads_stdin_in_any_text_form(vaa_vectors):
    raws = [bytes.fromhex(v["hex"]) for v in vaa_vectors[:3]]
    lines = [raws[0].hex(), "0x" + raws[1].hex(), base64.b64encode(raws[2]).decode()]
    result = _run(["decode"], stdin="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    views = _objects(result.stdout)
    assert [v["digest"] for v in views] == [v["expected"]["digest"] for v in vaa_vectors[:3]]
    assert all("valid" not in v for v in views)


def test_malformed_inputs_exit_2_and_others_still_print(vaa_vectors):
    good = vaa_vectors[0]["hex"]
    truncated = good[:200]
    bad_version = "02" + good[2:]
    out_of_order = DevGuardians(count=4).sign(
        emitter_chain=2, emitter_address=bytes(32), sequence=1, payload=b"", signers=[0, 1, 2]
    )
    raw = bytearray(out_of_order.to_bytes())
    raw[6 + 66] = 0  # second signature now claims guardian 0 again
    result = _run(["decode", "nothex!", truncated, good, bad_version, raw.hex(), good + "00"])
    assert result.exit_code == 2
    views = _objects(result.stdout)
    assert len(views) == 2  # the good one, and the good one with one more payload byte
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 4
    assert errors[0].startswith("error: input 1 (nothex!): bad hex")
    assert errors[1].startswith("error: input 2 (")
    assert "truncated at byte 100" in errors[1]
    assert errors[2].startswith("error: input 4 (")
    assert "unsupported version 2" in errors[2]
    assert errors[3].startswith("error: input 5 (")
    assert "index out of order" in errors[3]


def test_generate_is_deterministic_and_verifies_with_the_dev_set():
    first = _run(["generate", "--count", "12", "--seed", "7", "--guardians", "7"])
    second = _run(["generate", "--count", "12", "--seed", "7", "--guardians", "7"])
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    lines = first.stdout.split()
    assert len(lines) == 12
    decoded = _run(["decode", "--verify", "--guardian-set", "dev:7"], stdin=first.stdout)
    assert decoded.exit_code == 0, decoded.output
    views = _objects(decoded.stdout)
    assert all(v["valid"] for v in views)
    assert all(len(v["signers"]) >= 5 for v in views)


def test_generate_rejects_a_bad_mix():
    result = _run(["generate", "--count", "1", "--seed", "1", "--mix", "bogus=1"])
    assert result.exit_code == 2
    assert "unknown message kinds ['bogus']" in result.stderr


def test_verify_against_a_guardian_set_file(tmp_path):
    kit = DevGuardians(count=5, seed=b"file")
    signed = kit.sign(emitter_chain=2, emitter_address=bytes(32), sequence=9, payload=b"x")
    path = tmp_path / "sets.json"
    path.write_text(json.dumps(kit.sets(0).to_json()))
    ok = _run(["decode", "--verify", "--guardian-set", str(path), signed.to_bytes().hex()])
    assert ok.exit_code == 0, ok.output
    assert _objects(ok.stdout)[0]["valid"] is True
    other = _run(["decode", "--verify", "--guardian-set", "dev:5", signed.to_bytes().hex()])
    view = _objects(other.stdout)[0]
    assert view["valid"] is False
    assert "does not match guardian set 0" in view["reason"]


def test_missing_guardian_set_file_exits_2(tmp_path):
    result = _run(["decode", "--verify", "--guardian-set", str(tmp_path / "nope.json"), "00"])
    assert result.exit_code == 2
    assert "nope.json" in result.stderr


def test_guardian_set_command_prints_the_mainnet_sets():
    result = _run(["guardian-set"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    indices = [s["index"] for s in document["guardian_sets"]]
    assert indices == list(range(len(indices)))
    assert document["guardian_sets"][0]["addresses"] == [
        "0x58CC3AE5C097b213cE3c81979e1B9f9570746AA5"
    ]


def test_base64_output_round_trips():
    result = _run(["generate", "--count", "3", "--seed", "3", "--format", "base64"])
    assert result.exit_code == 0
    for line in result.stdout.split():
        assert parse_vaa(base64.b64decode(line)).version == 1
