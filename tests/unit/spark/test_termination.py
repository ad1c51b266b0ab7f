"""The summary as a termination message: compact JSON that always fits Kubernetes' 4 KiB."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from chainloom_spark.runner import run_table_job
from chainloom_spark.summary import UNKNOWN_CHAIN, JobSummary
from chainloom_spark.termination import (
    DEFAULT_TERMINATION_LOG,
    MESSAGE_LIMIT,
    TERMINATION_LOG_ENV,
    termination_message,
    write_termination_message,
)


def _summary(chains: int) -> JobSummary:
    summary = JobSummary("vaa-ingest")
    counts = {"new": 3, "updated": 1, "unchanged": 2, "conflicting": 1, "refused": 0, "written": 4}
    summary.merge_counts((chain, counts) for chain in range(1, chains + 1))
    summary.merge_counts([(UNKNOWN_CHAIN, {**dict.fromkeys(counts, 0), "refused": 2})])
    summary.conflicts = [(f"2/{'00' * 32}/{n}", "0xab") for n in range(500)]
    summary.details = {"table": "events", "seconds": 1.5}
    return summary


def test_a_small_summary_keeps_its_totals_and_per_chain_counts() -> None:
    message = termination_message(_summary(3).as_dict())
    document = json.loads(message)
    assert document["job"] == "vaa-ingest"
    assert (document["read"], document["new"], document["refused"]) == (23, 9, 2)
    assert document["per_chain"]["solana"] == {
        "chain_id": 1, "new": 3, "updated": 1, "unchanged": 2, "conflicting": 1, "refused": 0,
        "written": 4,
    }  # fmt: skip
    assert "conflicts" not in document  # 500 of them: their count is at the top
    assert "table" not in document  # only counts
    assert "seconds" not in document


def test_too_many_chains_are_summarised_to_fit() -> None:
    big = _summary(200).as_dict()
    assert len(json.dumps(big)) > MESSAGE_LIMIT
    message = termination_message(big)
    assert len(message.encode()) <= MESSAGE_LIMIT
    document = json.loads(message)
    assert document["new"] == 600
    assert "per_chain" not in document
    assert document["per_chain_entries"] == 201


def test_even_too_many_top_level_counts_fit() -> None:
    wide = {"job": "export", **{f"counter_{n}": n for n in range(1000)}}
    message = termination_message(wide, limit=256)
    assert len(message.encode()) <= 256
    document = json.loads(message)
    assert document["job"] == "export"
    assert document["counter_0"] == 0


def test_written_where_configured_and_nowhere_outside_a_container(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "termination-log"
    monkeypatch.setenv(TERMINATION_LOG_ENV, str(target))
    assert write_termination_message({"job": "export", "messages": 7}) == target
    assert json.loads(target.read_text()) == {"job": "export", "messages": 7}
    monkeypatch.setenv(TERMINATION_LOG_ENV, str(tmp_path / "missing-dir" / "log"))
    assert write_termination_message({"job": "export"}) is None  # logged, not raised
    monkeypatch.delenv(TERMINATION_LOG_ENV)
    if not Path(DEFAULT_TERMINATION_LOG).exists():  # not inside a container
        assert write_termination_message({"job": "export"}) is None


def test_a_table_job_leaves_its_summary_as_the_termination_message(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @dataclass(frozen=True)
    class Plan:
        summary_path: str | None = None

    def run(plan: Plan) -> JobSummary:
        del plan
        return _summary(2)

    target = tmp_path / "termination-log"
    monkeypatch.setenv(TERMINATION_LOG_ENV, str(target))
    assert run_table_job([], lambda argv: Plan(), run) == 0
    assert "vaa-ingest: read 16" in capsys.readouterr().out
    assert json.loads(target.read_text())["read"] == 16
