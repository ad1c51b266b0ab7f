"""gap-backfill's flags, emitter lists and summary (no Spark, no server started)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from chainloom.eventstore.gaps import SequenceRange
from chainloom_spark.backfill_summary import BackfillSummary
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.jobs import JOBS, check_arguments
from chainloom_spark.jobs.gap_backfill import _first_sequences, main, parse_emitters, resolve

EMITTER = "0000000000000000000000003ee18b2214aff97000d974cf647e7c347e8fa585"


def test_the_job_is_registered_and_needs_one_source():
    assert JOBS["gap-backfill"] == "chainloom_spark.jobs.gap_backfill"
    check_arguments("gap-backfill", ["--table", "t", "--public-api", "h:1"])
    for argv in (
        ["--table", "t"],
        ["--table", "t", "--public-api", "h:1", "--files", "x"],
        ["--public-api", "h:1"],
    ):
        with pytest.raises(JobArgumentError):
            check_arguments("gap-backfill", argv)


def test_emitter_lists():
    assert parse_emitters("2:0x3ee18b2214aff97000d974cf647e7c347e8fa585, 1") == (
        (2, EMITTER),
        (1, None),
    )
    for bad in ("x:00", "70000", "2:zz", " , "):
        with pytest.raises(JobArgumentError):
            parse_emitters(bad)


def test_flags_become_settings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", "127.0.0.1:1")
    plan = resolve(
        [
            "--table",
            "t",
            "--public-api",
            "a:1, https://g.example",
            "--timeout",
            "0.5",
            "--rounds",
            "4",
            "--from-seq",
            "3",
            "--emitters",
            "2",
        ]
    )
    assert plan.public_rpc.endpoints == ("a:1", "https://g.example")
    assert (plan.public_rpc.timeout, plan.public_rpc.rounds) == (0.5, 4)
    assert (plan.first, plan.last, plan.emitters) == (3, None, ((2, None),))
    assert plan.location.table == "t"
    with pytest.raises(JobArgumentError, match=r"public_rpc\.endpoints is empty"):
        resolve(["--table", "t", "--public-api"])
    with pytest.raises(JobArgumentError, match="--from-seq must not exceed"):
        resolve(["--table", "t", "--files", ".", "--from-seq", "5", "--to-seq", "4"])


def test_bad_flags_exit_2_in_one_line(capsys: pytest.CaptureFixture[str]):
    assert main(["--table", "t", "--files", "/no/such/file"]) == 2
    assert main(["--table", "t", "--public-api", "h:1", "--max-missing", "0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "error: --files /no/such/file: does not exist",
        "error: --max-missing and --partitions must be at least 1",
    ]


def test_max_missing_keeps_the_first_sequences():
    ranges = [SequenceRange(0, 4), SequenceRange(10, 19)]
    assert _first_sequences(ranges, 7) == ([SequenceRange(0, 4), SequenceRange(10, 11)], 8)
    assert _first_sequences(ranges, 100) == (ranges, 0)


def test_summary_groups_still_missing_sequences_into_ranges(tmp_path: Path):
    summary = BackfillSummary("gap-backfill")
    report = summary.emitter(2, EMITTER)
    report.stored, report.lowest, report.highest, report.missing = 10, 0, 20, 11
    report.counts["found"] = report.counts["new"] = report.counts["written"] = 5
    summary.add_missing(
        2,
        EMITTER,
        [
            (9, "not_found", "n"),
            (7, "not_found", "n"),
            (8, "not_found", "n"),
            (10, "error", "e"),
            (12, "error", "e"),
            (13, "error", "e"),
        ],
    )
    summary.write_json(tmp_path / "s.json")
    document = json.loads((tmp_path / "s.json").read_text())
    assert document["still_missing"] == 6
    assert document["written"] == 5
    ranges = document["per_emitter"][0]["still_missing_ranges"]
    assert [(r["first"], r["last"], r["status"]) for r in ranges] == [
        (7, 9, "not_found"),
        (10, 10, "error"),
        (12, 13, "error"),
    ]
    text = "\n".join(summary.lines())
    assert "ethereum 2/" + EMITTER in text
    assert "missing 7-9: not_found: n" in text


def test_an_unreachable_store_exits_4_before_spark_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    with socket.socket() as bound:  # bound, never listening: connections are refused
        bound.bind(("127.0.0.1", 0))
        monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{bound.getsockname()[1]}")
        assert main(["--table", "t", "--public-api", "h:1", "--guardian-set", "dev"]) == 4
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: [sink unavailable] Bigtable emulator BIGTABLE_EMULATOR_HOST=")
