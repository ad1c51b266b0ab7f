"""export end to end: real local Spark (the shared session), the real Bigtable emulator.

The events dataset is read back with Spark and compared with the VAAs written (rows per
chain and UTC day) and with the table itself (every row, its notional); the daily aggregate's
sums are recomputed here from the table's cells. A rerun replaces the output instead of adding
to it, and an output that cannot be written is one line and exit 2.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from google.cloud.bigtable.data.mutations import DeleteRangeFromColumn

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.schema import (
    MESSAGE_PUBLICATION,
    TOKEN_TRANSFER_DETAILS,
    TOKEN_TRANSFER_PAYLOAD,
)
from chainloom.wormhole import chain_name
from chainloom_spark.jobs import export
from chainloom_spark.runner import setup_logging
from tests.integration.spark.job_process import kill_when, spark_job
from tests.integration.spark.table_workload import populate, row_key, timestamp_of, utc_day


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = export.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _read(spark: Any, path: Path) -> list[dict[str, Any]]:
    """The dataset's rows (read with Spark: partition columns included, ``epoch`` added)."""
    frame = spark.read.parquet(str(path))
    if "timestamp" in frame.columns:
        frame = frame.withColumn("epoch", frame["timestamp"].cast("long"))
    return [row.asDict() for row in frame.collect()]


def test_export_writes_the_table_as_partitioned_parquet(
    spark, bigtable_table_name, vaa_vectors, tmp_path, capsys, caplog
):
    workload = populate(bigtable_table_name, vaa_vectors, tmp_path, enrich_at_ingest=True)
    written: dict[str, bytes] = {}
    for raw in workload.raws:
        written.setdefault(row_key(raw), raw)
    per_chain_day = Counter((int(k.split(":")[0]), utc_day(timestamp_of(r)))
                            for k, r in written.items())  # fmt: skip
    with BigtableTables(workload.location) as tables:
        table = dict(tables.scan_events([("", "")], end_inclusive=False))
    assert set(table) == set(written)

    output = tmp_path / "lake"
    args = ["--table", bigtable_table_name, "--output", str(output)]
    code, text = _run([*args, "--summary", str(tmp_path / "summary.json")], capsys)
    assert code == 0, text
    summary = json.loads((tmp_path / "summary.json").read_text())

    events = _read(spark, output / "events")
    assert len(events) == len(table)
    assert Counter((r["emitter_chain"], str(r["day"])) for r in events) == per_chain_day
    assert summary["messages"] == len(table)
    assert summary["per_chain"][chain_name(2)]["days"] == len(
        {day for chain, day in per_chain_day if chain == 2}
    )
    assert (output / "events" / "emitter_chain=2").is_dir()
    assert [column for column, _, _ in export.EVENT_COLUMNS] == [
        c for c in events[0] if c != "epoch"
    ]

    by_key = {r["row_key"]: r for r in events}
    transfers = 0
    volume: dict[tuple[Any, ...], Decimal] = defaultdict(Decimal)
    messages: Counter[tuple[Any, ...]] = Counter()
    for key, row in table.items():
        exported = by_key[key]
        publication = row[MESSAGE_PUBLICATION]
        assert exported["payload"] == publication["Payload"]
        moment = dt.datetime.strptime(publication["Timestamp"].decode(), "%Y-%m-%dT%H:%M:%SZ")
        assert exported["epoch"] == int(moment.replace(tzinfo=dt.UTC).timestamp())
        assert exported["sequence"] == int(key.rsplit(":", 1)[1])
        assert exported["signed_vaa"] == row.get("QuorumState", {}).get("SignedVAA")
        day = publication["Timestamp"].decode()[:10]
        chain = int(publication["EmitterChain"])
        payload = row.get(TOKEN_TRANSFER_PAYLOAD)
        if payload is None:
            messages[(day, chain, None, None, None)] += 1
            continue
        transfers += 1
        group = (day, chain, int(payload["TargetChain"]), int(payload["OriginChain"]),
                 payload["OriginAddress"].decode())  # fmt: skip
        messages[group] += 1
        assert exported["amount"] == payload["Amount"].decode()
        notional = row.get(TOKEN_TRANSFER_DETAILS, {}).get("NotionalUSD")
        if notional is None:
            assert exported["notional_usd"] is None
        else:
            assert exported["notional_usd"] == Decimal(notional.decode())
            volume[group] += Decimal(notional.decode())
    assert sum(volume.values()) > 0
    assert transfers == summary["transfers"]

    daily = _read(spark, output / "daily")
    assert sum(r["messages"] for r in daily) == len(table)
    assert sum(r["transfers"] for r in daily) == transfers
    got = {
        (
            str(r["day"]),
            r["source_chain"],
            r["target_chain"],
            r["token_chain"],
            r["token_address"],
        ): r
        for r in daily
    }
    assert {k: v["messages"] for k, v in got.items()} == dict(messages)
    for group, row in got.items():
        assert row["volume_usd"] == volume.get(group, Decimal(0)), group

    # The volume rollups the writer kept agree with the export's sums.
    transfer_days = {k[:2] for k in messages if k[2] is not None}
    assert summary["rollup_chain_days_checked"] == len(transfer_days)
    assert (summary["rollup_differences"], summary["rollup_differing"]) == (0, [])

    # One transfer's rollup cell lost: the rerun reports its (day, chain), and only it.
    with BigtableTables(workload.location) as tables:
        row_key_, cells = tables.scan_index("vol:chain:", "vol:chain;", limit=1)[0]
        lost = next(iter(cells))
        tables.index.mutate_row(row_key_, DeleteRangeFromColumn("i", lost.encode()))
    _, _, lost_day, lost_chain = row_key_.split(":")

    # A rerun replaces the partitions: the same rows, not twice as many. The jobs' logger keeps
    # the stderr it was set up with (another test's capture), so its warning is caught here.
    jobs_logger = setup_logging()
    jobs_logger.addHandler(caplog.handler)
    try:
        code, text = _run([*args, "--summary", str(tmp_path / "second.json")], capsys)
    finally:
        jobs_logger.removeHandler(caplog.handler)
    assert code == 0, text
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["rollup_differences"] == 1
    differing = second["rollup_differing"][0]
    assert (differing["day"], differing["chain"]) == (
        f"{lost_day[:4]}-{lost_day[4:6]}-{lost_day[6:]}",
        int(lost_chain),
    )
    assert differing["export"]["transfers"] == differing["rollups"]["transfers"] + 1
    assert "volume rollups differ" in caplog.text
    assert len(_read(spark, output / "events")) == len(table)
    assert sum(r["messages"] for r in _read(spark, output / "daily")) == len(table)


def test_an_unwritable_output_is_one_line_and_exit_2(bigtable_table_name, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, text = _run(["--table", bigtable_table_name, "--output", str(blocker / "lake")], capsys)
    assert code == 2
    assert text.strip().splitlines()[-1].startswith(f"error: --output {blocker / 'lake'}: ")


def _parquet_files(root: Path) -> list[str]:
    """Every Parquet file under ``root``, Spark's hidden staging directories included."""
    return [name for _, _, files in os.walk(root) for name in files if name.endswith(".parquet")]


def _sorted_rows(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in _read(spark, path)), key=repr)


@pytest.mark.slow
def test_a_killed_job_rerun_equals_a_clean_run(
    spark, bigtable_emulator, bigtable_table_name, vaa_vectors, tmp_path, capsys
):
    """SIGKILL the driver once it writes Parquet files, run again into the same output: both
    datasets equal a clean run's, no row lost or twice."""
    workload = populate(bigtable_table_name, vaa_vectors, tmp_path, enrich_at_ingest=True)
    with BigtableTables(workload.location) as tables:
        rows = sum(1 for _ in tables.scan_events([("", "")], end_inclusive=False))
    output, reference = tmp_path / "lake", tmp_path / "reference"
    log = tmp_path / "killed.log"
    argv = ["--master", "local[2]", "--table", bigtable_table_name, "--output", str(output)]
    with spark_job("export", argv, log, {"BIGTABLE_EMULATOR_HOST": bigtable_emulator}) as driver:
        kill_when(driver, "export", log, lambda: bool(_parquet_files(output)))
    assert not (output / "daily" / "_SUCCESS").exists(), "the job was not killed mid-write"

    code, text = _run(["--table", bigtable_table_name, "--output", str(output)], capsys)
    assert code == 0, text
    code, text = _run(["--table", bigtable_table_name, "--output", str(reference)], capsys)
    assert code == 0, text
    events = _sorted_rows(spark, output / "events")
    assert len(events) == rows
    assert events == _sorted_rows(spark, reference / "events")
    assert _sorted_rows(spark, output / "daily") == _sorted_rows(spark, reference / "daily")
