"""The Spark jobs, by the name ``chainloom spark run JOB`` and the manifests use.

Each job is a package with ``main(argv: list[str] | None = None) -> int`` and ``parser()`` (its
flags, built on the jobs' one parser, :class:`chainloom_spark.arguments.JobArgumentParser`,
which raises :class:`~chainloom_spark.errors.JobArgumentError` rather than exiting), its
sections in modules (``arguments``, ``tasks``, ``driver``), runnable as ``spark-submit
.../chainloom_spark/submit.py JOB ARGS``, ``python -m chainloom_spark.jobs.<module> ARGS`` or
``chainloom spark run JOB ARGS``. Entries are import paths, resolved on use; a job module
imports pyspark only inside functions, so listing jobs and checking their flags never needs it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

JOBS: dict[str, str] = {
    "vaa-ingest": "chainloom_spark.jobs.vaa_ingest",
    "ledger-load": "chainloom_spark.jobs.ledger_load",
    "gap-backfill": "chainloom_spark.jobs.gap_backfill",
    "enrich": "chainloom_spark.jobs.enrich",
    "export": "chainloom_spark.jobs.export",
}
"""Job name -> the module holding its ``main``."""


def job_main(name: str) -> Callable[[list[str] | None], int]:
    """The ``main`` of the job called ``name`` (KeyError if there is none)."""
    main: Callable[[list[str] | None], int] = importlib.import_module(JOBS[name]).main
    return main


def check_arguments(name: str, argv: list[str]) -> None:
    """Parse ``argv`` with the job's flags (raises JobArgumentError on a bad one)."""
    parser: argparse.ArgumentParser = importlib.import_module(JOBS[name]).parser()
    parser.parse_args(argv)
