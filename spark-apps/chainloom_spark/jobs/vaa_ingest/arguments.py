"""vaa-ingest's flags and the plan the driver resolves from them before Spark starts.

The parser is the jobs' one (:mod:`chainloom_spark.arguments`); what is vaa-ingest's own is
the input's format and the :class:`IngestPlan` the driver runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from chainloom.settings import BigtableSettings
from chainloom_spark.arguments import (
    JobArgumentParser,
    add_guardian_set_flag,
    add_summary_flag,
    add_table_flags,
    check_input,
    guardian_set_source,
    load_job_settings,
    local_path,
)
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.settings import SparkJobSettings

JOB = "vaa-ingest"
"""The job's name."""

FORMATS = ("auto", "lines", "parquet")
"""Values of ``--format``: ``auto`` picks Parquet for paths ending in .parquet (or local
directories holding .parquet files), lines otherwise."""


def parser() -> argparse.ArgumentParser:
    """The job's flags (the stable contract of docs/spark.md)."""
    p = JobArgumentParser(prog=JOB, description="Verify files of signed VAAs into the event store.")
    p.add_argument("--input", required=True, help="File, directory or glob Spark can read.")
    add_table_flags(p)
    add_guardian_set_flag(p)
    p.add_argument("--dead-letter", help="Parquet dataset the refused inputs are appended to.")
    add_summary_flag(p)
    p.add_argument("--format", choices=FORMATS, default="auto", help="Input format.")
    p.add_argument("--partitions", type=int, help="Partitions to split the input into.")
    return p


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """Everything the driver resolved before Spark starts."""

    input: str
    """The input path as given."""
    format: str
    """``lines`` or ``parquet``."""
    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    guardian_set_source: str
    """What ``--guardian-set`` (or the settings) named."""
    dead_letter: str | None
    """Where refusals go (None: counted and sampled only)."""
    summary_path: str | None
    """Where the JSON summary goes."""
    partitions: int | None
    """Requested partition count."""


def resolve(argv: list[str] | None) -> IngestPlan:
    """Parse flags and settings (JobArgumentError / SettingsError on bad ones)."""
    args = parser().parse_args(argv)
    if args.partitions is not None and args.partitions < 1:
        raise JobArgumentError("--partitions must be at least 1")
    check_input(args.input)
    settings, location = load_job_settings(args)
    return IngestPlan(
        input=args.input,
        format=input_format(args.input, args.format),
        settings=settings,
        location=location,
        guardian_set_source=guardian_set_source(args, settings),
        dead_letter=args.dead_letter,
        summary_path=args.summary,
        partitions=args.partitions,
    )


def input_format(path: str, chosen: str) -> str:
    """``lines`` or ``parquet`` for ``path`` (``auto`` looks at the name and, locally, inside)."""
    if chosen != "auto":
        return chosen
    stripped = path.rstrip("/")
    if stripped.endswith(".parquet"):
        return "parquet"
    local = local_path(stripped)
    if local is not None and Path(local).is_dir() and any(Path(local).rglob("*.parquet")):
        return "parquet"
    return "lines"
