"""Flags the jobs share: an argparse that raises instead of exiting, and the table flags.

A bad flag must end a job with exit 2 and one line through
:func:`chainloom_spark.runner.run_job`, so the parser raises
:class:`~chainloom_spark.errors.JobArgumentError` rather than printing usage and exiting. The
table flags name the same settings as ``chainloom events`` (``bigtable.table``, ...), so every
job that reads or writes the event store is pointed at it the same way.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import StoreConfigError
from chainloom.eventstore.service import locate
from chainloom.settings import BigtableSettings, SettingsError, load_settings
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.settings import SparkJobSettings


class JobArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`JobArgumentError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(f"{self.prog}: {message}")


def add_table_flags(parser: argparse.ArgumentParser) -> None:
    """``--table`` (required), ``--index-table``, ``--project``, ``--instance``, ``--master``
    and ``--config``."""
    parser.add_argument("--table", required=True, help="Events table (bigtable.table).")
    parser.add_argument("--index-table", help="Index table (bigtable.index_table).")
    parser.add_argument("--project", help="Bigtable project (bigtable.project).")
    parser.add_argument("--instance", help="Bigtable instance (bigtable.instance).")
    parser.add_argument("--master", help="Spark master (spark.master), e.g. local[2].")
    parser.add_argument("--config", help="YAML settings file (default: $CHAINLOOM_SPARK_CONFIG).")


def load_job_settings(args: Any) -> tuple[SparkJobSettings, BigtableSettings]:
    """The job's settings with the table flags applied, and the tables' full location.

    Raises :class:`JobArgumentError` on a bad setting or an incomplete location.
    """
    flags = {
        "spark.master": args.master,
        "bigtable.table": args.table,
        "bigtable.index_table": args.index_table,
        "bigtable.project": args.project,
        "bigtable.instance": args.instance,
    }
    try:
        settings = load_settings(SparkJobSettings, config_file=args.config, flags=flags)
        location = locate(EventStoreSettings(bigtable=settings.bigtable))
    except (SettingsError, StoreConfigError) as error:
        raise JobArgumentError(str(error)) from None
    return settings, location
