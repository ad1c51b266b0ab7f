"""vaa-ingest end to end: real local Spark (one session for the run), the real Bigtable emulator.

One mixed input carries the shared mainnet vectors, a few hundred VAAs signed by the dev kit
(repeats with other signature subsets, conflicting bodies, some as JSON lines with a tx id)
and refusals of every rule; the guardian-set file holds mainnet's sets plus the dev kit's set
under index 100. The second run over the same input must write nothing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.queries import EventReader
from chainloom.settings import BigtableSettings
from chainloom.wormhole import GuardianSets, parse_vaa
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from chainloom_spark.jobs import vaa_ingest
from tests.integration.spark.job_process import kill_when, spark_job

DEV_SET = 100
TX_ID = "0x" + "ab" * 32


def _signed_mainnet(vaa_vectors: list[dict[str, Any]]) -> list[bytes]:
    return [
        bytes.fromhex(v["hex"])
        for v in vaa_vectors
        if v["expected"].get("num_signatures", 0) > 0
        and (v["expected"].get("verified_against") or "").startswith("mainnet")
    ]


def _bad_signature(raw: bytes) -> bytes:
    data = bytearray(raw)
    data[6 + 10] ^= 0xFF  # inside the first signature's r
    return bytes(data)


@pytest.fixture
def mixed_input(tmp_path: Path, vaa_vectors: list[dict[str, Any]]) -> dict[str, Any]:
    guardians = DevGuardians()
    sets_file = tmp_path / "guardian-sets.json"
    sets = GuardianSets.mainnet().with_set(guardians.guardian_set(DEV_SET))
    sets_file.write_text(json.dumps(sets.to_json()))
    mainnet = _signed_mainnet(vaa_vectors)
    dev = list(generate_vaas(300, 11, guardians, Mix(conflict=0.05), guardian_set_index=DEV_SET))
    lines = [raw.hex() for raw in mainnet]
    tx_message = parse_vaa(dev[0]).message_id
    for position, raw in enumerate(dev):
        if position % 4 == 0:
            lines.append(json.dumps({"vaa": raw.hex(), "tx_id": TX_ID, "observed_at": "x"}))
        else:
            lines.append(raw.hex())
    unknown_set = guardians.sign_body(parse_vaa(dev[1]).body, guardian_set_index=55)
    refused = {
        "zz-not-a-vaa": "encoding",
        "{broken json": "json",
        "0100": "vaa-format",
        _bad_signature(dev[2]).hex(): "signature",
        unknown_set.hex(): "guardian-set",
    }
    lines += list(refused)
    path = tmp_path / "vaas.txt"
    path.write_text("\n".join(lines) + "\n\n")
    ids = {parse_vaa(raw).message_id for raw in mainnet + dev}
    return {
        "path": path,
        "sets": sets_file,
        "lines": len(lines),
        "message_ids": ids,
        "refused": refused,
        "tx_message": tx_message,
        "vector_ids": [parse_vaa(raw).message_id for raw in mainnet],
    }


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = vaa_ingest.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_mixed_input_is_stored_once_and_a_rerun_writes_nothing(
    spark, bigtable_table_name, mixed_input, tmp_path, capsys
):
    dead_letter = tmp_path / "dead-letter"
    args = [
        *("--input", str(mixed_input["path"]), "--table", bigtable_table_name),
        *("--guardian-set", str(mixed_input["sets"]), "--dead-letter", str(dead_letter)),
        *("--partitions", "2"),
    ]
    code, output = _run([*args, "--summary", str(tmp_path / "first.json")], capsys)
    assert code == 0, output
    first = json.loads((tmp_path / "first.json").read_text())
    assert first["read"] == mixed_input["lines"]
    assert first["new"] == len(mixed_input["message_ids"])
    assert first["refused"] == len(mixed_input["refused"])
    assert first["conflicting"] > 0
    assert (
        first["new"]
        + first["updated"]
        + first["unchanged"]
        + first["conflicting"]
        + first["refused"]
        == first["read"]
    )
    assert sum(c["new"] for c in first["per_chain"].values()) == first["new"]
    assert first["per_chain"]["unknown"]["refused"] == 3  # unreadable: no chain
    assert f"new {first['new']}," in output

    code, output = _run([*args, "--summary", str(tmp_path / "second.json")], capsys)
    assert code == 0, output
    second = json.loads((tmp_path / "second.json").read_text())
    assert (second["new"], second["updated"], second["written"]) == (0, 0, 0)
    assert second["conflicting"] == first["conflicting"]  # still conflicts, nothing rewritten
    assert second["unchanged"] == first["read"] - first["refused"] - first["conflicting"]

    rows = spark.read.parquet(str(dead_letter)).collect()
    assert len(rows) == 2 * len(mixed_input["refused"])  # appended by both runs
    by_raw = {row.raw.decode(): row for row in rows}
    assert {raw: row.rule for raw, row in by_raw.items()} == mixed_input["refused"]
    assert all(row.location.endswith("vaas.txt") and row.job == "vaa-ingest" for row in rows)

    store = BigtableSettings(project="chainloom", instance="local", table=bigtable_table_name)
    with BigtableTables(store) as tables:
        reader = EventReader(tables)
        for message_id in mixed_input["vector_ids"]:
            assert reader.get(message_id) is not None, message_id
        indexed = {m.key.message_id for m in reader.by_tx(TX_ID)}
        assert mixed_input["tx_message"] in indexed


def test_every_copy_of_a_message_is_in_one_partition(spark, mixed_input):
    """The JVM partitions the keyed input by the message's row key: the copies of a message
    (other signature subsets, conflicting bodies, JSON and hex lines) meet in one task."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    plan = vaa_ingest.resolve(
        ["--input", str(mixed_input["path"]), "--table", "t", "--guardian-set", "dev"]
    )
    keyed = vaa_ingest.key_input(vaa_ingest.read_input(spark, plan), 3)
    groups = (
        keyed.withColumn("partition", F.spark_partition_id())
        .groupBy("key")
        .agg(F.countDistinct("partition").alias("partitions"), F.count("*").alias("copies"))
        .collect()
    )
    assert sum(g.copies for g in groups) == mixed_input["lines"]
    assert {g.partitions for g in groups} == {1}
    assert max(g.copies for g in groups if g.key) > 1  # the input does repeat messages
    assert len([g for g in groups if g.key]) == len(mixed_input["message_ids"])
    assert keyed.where("attestation").count() > 0


def test_parquet_input_with_a_binary_vaa_column(spark, bigtable_table_name, tmp_path, capsys):
    guardians = DevGuardians()
    vaas = list(generate_vaas(40, 3, guardians, Mix(duplicate=0, conflict=0)))
    path = str(tmp_path / "vaas.parquet")
    spark.createDataFrame([(raw, None) for raw in vaas], "vaa BINARY, tx_id STRING").write.parquet(
        path
    )
    args = ["--input", path, "--table", bigtable_table_name, "--guardian-set", "dev"]
    code, output = _run([*args, "--summary", str(tmp_path / "s.json")], capsys)
    assert code == 0, output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["read"], summary["new"], summary["refused"]) == (40, 40, 0)


def test_unusable_input_or_store_exits_with_one_line(spark, bigtable_emulator, tmp_path, capsys):
    code, output = _run(["--input", str(tmp_path / "nope"), "--table", "t"], capsys)
    assert code == 2
    assert output.strip().endswith("nope: does not exist")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    try:
        os.environ["BIGTABLE_EMULATOR_HOST"] = f"127.0.0.1:{listener.getsockname()[1]}"
        (tmp_path / "in.txt").write_text("00\n")
        code, output = _run(["--input", str(tmp_path / "in.txt"), "--table", "t"], capsys)
    finally:
        os.environ["BIGTABLE_EMULATOR_HOST"] = bigtable_emulator
        listener.close()
    assert code == 4, output
    assert "unreachable" in output
    assert "Traceback" not in output


def test_cli_contract_end_to_end(bigtable_emulator, bigtable_table_name, tmp_path):
    """``chainloom spark run`` as a process, then the table read back with ``chainloom events``."""
    guardians = DevGuardians()
    vaas = list(generate_vaas(30, 5, guardians, Mix(duplicate=0, conflict=0)))
    path = tmp_path / "vaas.txt"
    path.write_text("".join(raw.hex() + "\n" for raw in vaas) + "nonsense\n")
    summary = tmp_path / "summary.json"
    env = os.environ | {"BIGTABLE_EMULATOR_HOST": bigtable_emulator}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "chainloom", "spark", "run", "vaa-ingest"),
            *("--master", "local[1]", "--input", str(path), "--table", bigtable_table_name),
            *("--guardian-set", "dev", "--dead-letter", str(tmp_path / "dl")),
            *("--summary", str(summary)),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(summary.read_text())
    assert {k: document[k] for k in ("new", "updated", "unchanged", "conflicting", "refused")} == {
        "new": 30, "updated": 0, "unchanged": 0, "conflicting": 0, "refused": 1,
    }  # fmt: skip
    message_id = parse_vaa(vaas[0]).message_id
    shown = subprocess.run(
        [sys.executable, "-m", "chainloom", "events", "--table", bigtable_table_name, "get",
         message_id, "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["message_id"] == message_id


def _table_contents(table: str) -> tuple[dict[str, Any], list[Any]]:
    store = BigtableSettings(project="chainloom", instance="local", table=table)
    with BigtableTables(store) as tables:
        index = tables.scan_index("", "~")
        # feed: rows are keyed by their write time (the event stream's order)
        return dict(tables.scan_events([("", "~")])), [
            r for r in index if r[0] < "feed:" or r[0] >= "feed;"
        ]


def _rows(table: str) -> int:
    from chainloom.eventstore.errors import TableMissingError

    try:
        return len(_table_contents(table)[0])
    except TableMissingError:
        return 0


@pytest.mark.slow
def test_a_killed_job_rerun_equals_a_clean_run(spark, bigtable_emulator, tmp_path, capsys):
    """SIGKILL the driver mid-write, run again: the tables equal a clean run's, cell for cell.

    Each message appears once in the input (no repeats, no conflicts), so the stored cells do
    not depend on arrival order and the two tables can be compared exactly.
    """
    import uuid

    guardians = DevGuardians()
    vaas = list(generate_vaas(1000, 21, guardians, Mix(duplicate=0, conflict=0)))
    path = tmp_path / "vaas.txt"
    path.write_text("".join(raw.hex() + "\n" for raw in vaas))
    killed, clean = f"k-{uuid.uuid4().hex[:10]}", f"c-{uuid.uuid4().hex[:10]}"
    common = ["--input", str(path), "--guardian-set", "dev", "--partitions", "4"]
    # Small flushes, so the kill lands between writes of the second pass (transfers), not
    # only after the first (attestations).
    env = {"BIGTABLE_EMULATOR_HOST": bigtable_emulator, "CHAINLOOM_WRITER__FLUSH_ROWS": "20"}
    log = tmp_path / "killed.log"
    with spark_job("vaa-ingest", ["--master", "local[2]", *common, "--table", killed], log,
                   env) as driver:  # fmt: skip
        # Killed early (a loaded machine can write hundreds of rows while one count runs).
        kill_when(driver, "vaa-ingest", log, lambda: _rows(killed) >= 60)
    partial_rows = _rows(killed)
    assert 60 <= partial_rows < len(vaas), "the job was not killed mid-write"

    code, output = _run([*common, "--table", killed, "--summary", str(tmp_path / "r.json")], capsys)
    assert code == 0, output
    rerun = json.loads((tmp_path / "r.json").read_text())
    # Requests the emulator had received before the kill may land after it was counted.
    assert 0 < rerun["new"] <= len(vaas) - partial_rows
    assert rerun["new"] + rerun["updated"] + rerun["unchanged"] == len(vaas)
    code, output = _run([*common, "--table", clean], capsys)
    assert code == 0, output

    killed_events, killed_index = _table_contents(killed)
    clean_events, clean_index = _table_contents(clean)
    assert len(clean_events) == len(vaas)
    assert killed_events == clean_events
    assert killed_index == clean_index
