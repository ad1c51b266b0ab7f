"""Every job, through ``chainloom spark run``, on an input it cannot read and a sink it cannot
reach: one line naming the problem and the exit code of docs/exit-codes.md (2 bad input, 4 a
store unreachable), never a traceback, and before any Spark work (so these are quick).

The command runs in-process (click's runner), so a job that did reach Spark would find the
shared session rather than start another.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from chainloom.cli.spark import spark as spark_cli


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, never listening)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def _spark_run(job: str, args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(spark_cli, ["run", job, *args], env=env)
    return result.exit_code, result.stderr


def _one_line(code: int, stderr: str, want_code: int, *needles: str) -> None:
    assert code == want_code, stderr
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), stderr
    for needle in needles:
        assert needle in last, stderr


def test_unreadable_inputs_exit_2(spark, bigtable_emulator, bigtable_table_name, tmp_path):
    missing = str(tmp_path / "missing")
    table = ["--table", bigtable_table_name]
    _one_line(*_spark_run("vaa-ingest", ["--input", missing, *table]), 2, missing,
              "does not exist")  # fmt: skip
    _one_line(*_spark_run("ledger-load", ["--input", missing, "--sqlite", str(tmp_path / "l.db")]),
              2, missing, "does not exist")  # fmt: skip
    _one_line(*_spark_run("ledger-load", ["--input", str(tmp_path), "--sqlite",
                                          str(tmp_path / "l.db")]), 2, "is not a file")  # fmt: skip
    _one_line(*_spark_run("gap-backfill", [*table, "--files", missing]), 2, missing,
              "does not exist")  # fmt: skip
    _one_line(*_spark_run("enrich", [*table, "--prices", missing]), 2, missing, "does not exist")
    # export's input is the events table.
    _one_line(*_spark_run("export", ["--table", "no-such-table", "--output", str(tmp_path / "o")]),
              2, "no-such-table", "does not exist")  # fmt: skip


def test_unreachable_sinks_exit_4_and_unwritable_ones_2(
    spark, bigtable_table_name, refused_port, tmp_path
):
    down = {"BIGTABLE_EMULATOR_HOST": f"127.0.0.1:{refused_port}"}
    table = ["--table", bigtable_table_name]
    (tmp_path / "vaas.txt").write_text("00\n")
    (tmp_path / "prices.csv").write_text("date,coingecko_id,price_usd\n")
    _one_line(*_spark_run("vaa-ingest", ["--input", str(tmp_path / "vaas.txt"), *table], down),
              4, "unreachable")  # fmt: skip
    _one_line(*_spark_run("gap-backfill", [*table, "--files", str(tmp_path / "vaas.txt")], down),
              4, "unreachable")  # fmt: skip
    _one_line(*_spark_run("enrich", [*table, "--prices", str(tmp_path / "prices.csv")], down),
              4, "unreachable")  # fmt: skip
    _one_line(*_spark_run("export", [*table, "--output", str(tmp_path / "out")], down),
              4, "unreachable")  # fmt: skip
    dump = tmp_path / "ledgers.jsonl"
    dump.write_text("{}\n")
    cassandra = ["--backend", "cassandra", "--cassandra-hosts", f"127.0.0.1:{refused_port}"]
    _one_line(*_spark_run("ledger-load", ["--input", str(dump), *cassandra]), 4,
              f"127.0.0.1:{refused_port}")  # fmt: skip
    # Sinks that are files: a path through a regular file cannot be written (bad input, 2).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    _one_line(*_spark_run("export", [*table, "--output", str(blocker / "lake")]), 2,
              f"--output {blocker / 'lake'}")  # fmt: skip
    _one_line(*_spark_run("ledger-load", ["--input", str(dump), "--sqlite",
                                          str(blocker / "l.db")]), 2)  # fmt: skip
