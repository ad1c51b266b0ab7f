"""A real Spark job's driver-side stage spans, received by the stack's real OpenTelemetry Collector.

``chainloom spark run vaa-ingest`` runs in its own process (its spans are set up per process,
by ``chainloom.telemetry.setup`` from the standard ``OTEL_*`` variables, as a driver pod gets
them from the operator) in local mode against the Bigtable emulator. After it exits (its
exporter flushes at the end of the job) the collector's JSON-lines file holds one trace: a
``spark.job`` root carrying the job's name and the summary's counts, and the stages under it in
order. This run is told apart from other runs by a resource attribute of its own, as in the
relayer's telemetry test.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from tests.integration.relayer.test_telemetry import RUN_ATTRIBUTE, _spans, _wait, collector
from tests.integration.spark.job_process import job_env

__all__ = ["collector"]

VAAS = 30


def test_a_spark_jobs_driver_stages_arrive_at_the_collector(
    collector: dict[str, str], bigtable_emulator: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")
    run = uuid.uuid4().hex
    vaas = list(generate_vaas(VAAS, 1515, DevGuardians(), Mix(duplicate=0, conflict=0)))
    path = tmp_path / "vaas.txt"
    path.write_text("".join(raw.hex() + "\n" for raw in vaas) + "zz-not-a-vaa\n")
    summary_path = tmp_path / "summary.json"
    env = job_env(
        {
            "BIGTABLE_EMULATOR_HOST": bigtable_emulator,
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector["endpoint"],
            "OTEL_RESOURCE_ATTRIBUTES": f"{RUN_ATTRIBUTE}={run}",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
    )
    table = f"otel-{run[:10]}"
    job = subprocess.run(
        [sys.executable, "-m", "chainloom", "spark", "run", "vaa-ingest", "--master", "local[2]",
         "--input", str(path), "--guardian-set", "dev", "--table", table, "--partitions", "2",
         "--summary", str(summary_path)],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr[-3000:]
    summary = json.loads(summary_path.read_text())
    assert (summary["read"], summary["new"], summary["refused"]) == (VAAS + 1, VAAS, 1)

    traces = Path(collector["traces_file"])
    names = {"spark.job", "spark.read", "spark.verify_write", "spark.summary"}

    def arrived() -> list[dict[str, Any]]:
        return [span for span in _spans(traces, run) if span["name"] in names]

    _wait(lambda: any(span["name"] == "spark.job" for span in arrived()), "the job's spans")
    spans = arrived()
    assert {span["service"] for span in spans} == {"chainloom-spark-vaa-ingest"}
    (root,) = [span for span in spans if span["name"] == "spark.job"]
    assert not root.get("parentSpanId")
    assert root["attrs"]["chainloom.job"] == "vaa-ingest"
    # The root carries the summary's counts (OTLP JSON writes 64-bit integers as strings).
    for name in ("read", "new", "updated", "unchanged", "conflicting", "refused", "written"):
        assert int(root["attrs"][f"chainloom.{name}"]) == summary[name], name
    assert int(root["attrs"]["chainloom.written"]) == VAAS

    stages = sorted(
        (span for span in spans if span is not root),
        key=lambda span: int(span["startTimeUnixNano"]),
    )
    assert [span["name"] for span in stages] == [
        "spark.read", "spark.verify_write", "spark.verify_write", "spark.summary",
    ]  # fmt: skip
    assert stages[0]["attrs"]["chainloom.format"] == "lines"
    assert [span["attrs"]["chainloom.phase"] for span in stages[1:3]] == [
        "attestations", "messages",
    ]  # fmt: skip
    for span in stages:
        assert span["traceId"] == root["traceId"]
        assert span["parentSpanId"] == root["spanId"]
        assert int(root["startTimeUnixNano"]) <= int(span["startTimeUnixNano"])
        assert int(span["endTimeUnixNano"]) <= int(root["endTimeUnixNano"])
    for before, after in itertools.pairwise(stages):
        assert int(before["endTimeUnixNano"]) <= int(after["startTimeUnixNano"])
