"""gap-backfill end to end: real local Spark (the shared session), the real Bigtable emulator
and the harness's public-API server on loopback.

A run of dev-kit token transfers over several chains is written with holes; the server holds
some of the missing VAAs, withholds others (NOT_FOUND) and fails on a few (INTERNAL). The job
must write exactly the held ones, report the rest with their reasons, and a rerun must find
nothing new.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.service import locate
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.publicrpc_server import (
    PublicRpcServer,
    PublicRpcServicer,
    message_id_of,
)
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from chainloom_spark.jobs import gap_backfill
from tests.integration.spark.job_process import kill_when, spark_job

MessageId = tuple[int, str, int]

TRANSFERS = Mix(weights={"token_transfer": 1.0}, duplicate=0.0, conflict=0.0)


@pytest.fixture
def store(bigtable_table_name: str) -> dict[str, Any]:
    """A table holding a run of transfers with holes, and the VAAs that are missing."""
    guardians = DevGuardians()
    vaas = {message_id_of(raw): raw for raw in generate_vaas(160, 5, guardians, TRANSFERS)}
    ids = sorted(vaas)
    # Every 5th sequence is missing, and a block of four; never an emitter's first or last
    # (a missing tail is not a hole the store can see without --to-seq).
    last = {i[:2]: i[2] for i in ids}
    holes = {
        i for i in ids if (i[2] % 5 == 3 or (i[0] == 2 and 10 <= i[2] < 14)) and i[2] < last[i[:2]]
    }
    location = locate(
        EventStoreSettings(
            bigtable=BigtableSettings(
                table=bigtable_table_name, index_table=f"{bigtable_table_name}-index"
            )
        )
    )
    ensure_schema(location)
    with BigtableTables(location) as tables:
        EventWriter(tables, guardians.sets(0)).put_many(vaas[i] for i in ids if i not in holes)
    return {"location": location, "vaas": vaas, "holes": holes, "ids": ids}


def _stored(location: BigtableSettings) -> set[MessageId]:
    with BigtableTables(location) as tables:
        reader = EventReader(tables)
        return {
            (chain, emitter, sequence)
            for chain, emitter in reader.emitters()
            for sequence in reader.sequences(chain, emitter)
        }


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = gap_backfill.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _ranges_of(summary: dict[str, Any], status: str) -> set[MessageId]:
    named = set()
    for report in summary["per_emitter"]:
        for item in report["still_missing_ranges"]:
            if item["status"] == status:
                named |= {
                    (report["chain_id"], report["emitter"], s)
                    for s in range(item["first"], item["last"] + 1)
                }
    return named


def test_public_api_fills_what_it_holds_and_reports_the_rest(
    spark: Any, store: dict[str, Any], bigtable_table_name: str, tmp_path: Path, capsys: Any
) -> None:
    holes = sorted(store["holes"])
    withheld = set(holes[::4])
    failing = set(holes[1::7]) - withheld
    served = set(holes) - withheld - failing
    servicer = PublicRpcServicer(store["vaas"], withhold=withheld, fail=failing)
    args = ["--table", bigtable_table_name, "--guardian-set", "dev", "--partitions", "3",
            "--timeout", "2", "--rounds", "2"]  # fmt: skip
    with PublicRpcServer(servicer, "127.0.0.1:0") as server:
        first_args = [*args, "--public-api", server.target, "--summary", str(tmp_path / "1.json")]
        code, output = _run(first_args, capsys)
        assert code == 0, output
        first = json.loads((tmp_path / "1.json").read_text())
        assert _stored(store["location"]) == set(store["ids"]) - withheld - failing
        assert first["missing"] == len(holes)
        assert first["found"] == first["new"] == first["written"] == len(served)
        assert first["still_missing"] == len(withheld) + len(failing)
        assert _ranges_of(first, "not_found") == withheld
        assert _ranges_of(first, "error") == failing
        assert all(
            "INTERNAL" in item["reason"]
            for report in first["per_emitter"]
            for item in report["still_missing_ranges"]
            if item["status"] == "error"
        )
        assert f"still missing {len(withheld) + len(failing)}" in output
        calls_after_first = servicer.counters.calls

        second_args = [*args, "--public-api", server.target, "--summary", str(tmp_path / "2.json")]
        code, output = _run(second_args, capsys)
        assert code == 0, output
        second = json.loads((tmp_path / "2.json").read_text())
    assert second["missing"] == len(withheld) + len(failing)
    assert second["found"] == second["written"] == 0
    assert _ranges_of(second, "not_found") == withheld
    assert _ranges_of(second, "error") == failing
    # Only the still-missing were asked again: failing ones once per round.
    assert servicer.counters.calls - calls_after_first == len(withheld) + 2 * len(failing)
    assert _stored(store["location"]) == set(store["ids"]) - withheld - failing


def test_files_fill_the_named_emitters_and_bounds_count_the_tail(
    spark: Any, store: dict[str, Any], bigtable_table_name: str, tmp_path: Path, capsys: Any
) -> None:
    holes = sorted(store["holes"])
    chain, emitter = holes[0][0], holes[0][1]
    mine = [h for h in holes if h[:2] == (chain, emitter)]
    highest = max(i[2] for i in store["ids"] if i[:2] == (chain, emitter))
    in_files = mine[1:]  # the first hole is not in the files
    path = tmp_path / "vaas.txt"
    path.write_text("\n".join(store["vaas"][i].hex() for i in in_files) + "\nnot a vaa\n")
    summary_path = tmp_path / "files.json"
    args = [
        *("--table", bigtable_table_name, "--guardian-set", "dev", "--files", str(path)),
        *("--emitters", f"{chain}:0x{emitter.lstrip('0')}", "--from-seq", "0"),
        *("--to-seq", str(highest + 2), "--summary", str(summary_path)),
    ]
    code, output = _run(args, capsys)
    assert code == 0, output
    summary = json.loads(summary_path.read_text())
    assert summary["emitters"] == 1
    tail = {(chain, emitter, highest + 1), (chain, emitter, highest + 2)}
    assert summary["missing"] == len(mine) + 2
    assert summary["written"] == len(in_files)
    assert _ranges_of(summary, "not_found") == {mine[0]} | tail
    stored = _stored(store["location"])
    assert set(in_files) <= stored
    assert mine[0] not in stored


def test_unreachable_sources_and_bad_flags_exit_with_one_line(
    spark: Any, store: dict[str, Any], bigtable_table_name: str, tmp_path: Path, capsys: Any
) -> None:
    args = ["--table", bigtable_table_name, "--guardian-set", "dev"]
    code, output = _run([*args, "--public-api", "127.0.0.1:1", "--timeout", "0.5"], capsys)
    assert code == 4
    assert output.strip().splitlines()[-1].startswith("error: no public API endpoint reachable")
    code, output = _run([*args, "--files", str(tmp_path / "nope.txt")], capsys)
    assert code == 2, output
    code, output = _run([*args, "--public-api", "not an endpoint"], capsys)
    assert code == 2, output
    assert "Traceback" not in output


def _contents(location: BigtableSettings) -> tuple[dict[str, Any], list[Any]]:
    with BigtableTables(location) as tables:
        index = tables.scan_index("", "~")
        # feed: rows are keyed by their write time (the event stream's order)
        return dict(tables.scan_events([("", "~")])), [
            r for r in index if r[0] < "feed:" or r[0] >= "feed;"
        ]


@pytest.mark.slow
def test_a_killed_job_rerun_equals_a_clean_run(
    spark: Any, bigtable_emulator: str, tmp_path: Path, capsys: Any
) -> None:
    """SIGKILL the driver while it writes what the public API returned, run again: the table
    equals a clean run's on the same store, cell for cell, index included."""
    guardians = DevGuardians(count=1)  # one signature per VAA: cheap to make and verify
    vaas = {message_id_of(raw): raw for raw in generate_vaas(1200, 9, guardians, TRANSFERS)}
    ids = sorted(vaas)
    first = {i[:2]: i[2] for i in reversed(ids)}
    last = {i[:2]: i[2] for i in ids}
    holes = {i for i in ids if i[2] % 2 == 1 and first[i[:2]] < i[2] < last[i[:2]]}
    locations = []
    for name in ("killed", "clean"):
        table = f"gap-{name}-{uuid.uuid4().hex[:8]}"
        location = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
        ensure_schema(location)
        with BigtableTables(location) as tables:
            EventWriter(tables, guardians.sets(0)).put_many(vaas[i] for i in ids if i not in holes)
        locations.append(location)
    killed, clean = locations
    before = len(_stored(killed))
    common = ["--guardian-set", "dev:1", "--partitions", "2", "--timeout", "5"]
    with PublicRpcServer(PublicRpcServicer(vaas), "127.0.0.1:0") as server:
        source = ["--public-api", server.target]
        log = tmp_path / "killed.log"
        # Small flushes: the found VAAs reach the table a few at a time.
        env = {"BIGTABLE_EMULATOR_HOST": bigtable_emulator, "CHAINLOOM_WRITER__FLUSH_ROWS": "5"}
        argv = ["--master", "local[2]", *common, *source, "--table", killed.table]
        with spark_job("gap-backfill", argv, log, env) as driver:
            kill_when(driver, "gap-backfill", log, lambda: len(_stored(killed)) >= before + 10)
        partial = len(_stored(killed)) - before
        assert 10 <= partial < len(holes), "the job was not killed mid-write"

        summary = tmp_path / "rerun.json"
        code, output = _run([*common, *source, "--table", killed.table, "--summary",
                             str(summary)], capsys)  # fmt: skip
        assert code == 0, output
        rerun = json.loads(summary.read_text())
        # Writes the emulator had received before the kill may land after they were counted.
        assert 0 < rerun["missing"] <= len(holes) - partial
        assert rerun["written"] == rerun["missing"]
        assert rerun["still_missing"] == 0
        code, output = _run([*common, *source, "--table", clean.table], capsys)
        assert code == 0, output
    assert _stored(killed) == set(ids)
    assert _contents(killed) == _contents(clean)
