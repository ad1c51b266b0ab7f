"""export's flags and the plan the driver resolves from them before Spark starts."""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainloom.settings import BigtableSettings
from chainloom_spark.arguments import (
    JobArgumentParser,
    add_summary_flag,
    add_table_flags,
    load_job_settings,
)
from chainloom_spark.errors import JobOutputError
from chainloom_spark.settings import SparkJobSettings

if TYPE_CHECKING:
    pass


JOB = "export"
"""The job's name."""


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = JobArgumentParser(prog=JOB, description="Export the events table to Parquet.")
    add_table_flags(p)
    p.add_argument("--output", required=True, help="Dataset root: events/ and daily/ below it.")
    add_summary_flag(p)
    return p


@dataclass(frozen=True, slots=True)
class ExportPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    output: str
    """The dataset root."""
    summary_path: str | None
    """Where the JSON summary goes."""

    @property
    def events_path(self) -> str:
        """Where the events dataset goes."""
        return self.output.rstrip("/") + "/events"

    @property
    def daily_path(self) -> str:
        """Where the daily aggregate goes."""
        return self.output.rstrip("/") + "/daily"


def check_output(path: str) -> None:
    """A local output must be a directory this process can create and write (exit 2)."""
    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" in local:
        return  # an object store: the first write says
    try:
        os.makedirs(local, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=local, prefix=".chainloom-probe-"):
            pass
    except OSError as error:
        raise JobOutputError(f"--output {path}: cannot write: {error.strerror or error}") from None


def resolve(argv: list[str] | None) -> ExportPlan:
    """Parse flags and settings; check the output (JobArgumentError / JobOutputError)."""
    args = parser().parse_args(argv)
    settings, location = load_job_settings(args)
    check_output(args.output)
    return ExportPlan(settings, location, args.output, args.summary)
