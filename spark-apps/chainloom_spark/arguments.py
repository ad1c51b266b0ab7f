"""The one argument parser of the Spark jobs, and the flags several of them share.

A bad flag must end a job with exit 2 and one line through
:func:`chainloom_spark.runner.run_job`, so every job's parser is a :class:`JobArgumentParser`,
which raises :class:`~chainloom_spark.errors.JobArgumentError` rather than printing usage and
exiting. The table flags name the same settings as ``chainloom events`` (``bigtable.table``,
...), so every job that reads or writes the event store is pointed at it the same way; the
guardian-set flag and the local input check are shared by the jobs that verify VAAs and read
files.
"""

from __future__ import annotations

import argparse
import glob
import os
from typing import TYPE_CHECKING, Any, NoReturn

from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import StoreConfigError
from chainloom.eventstore.service import locate
from chainloom.settings import BigtableSettings, SettingsError, load_settings
from chainloom.wormhole.errors import WormholeError
from chainloom_spark.errors import JobArgumentError, JobInputError
from chainloom_spark.settings import SparkJobSettings

if TYPE_CHECKING:
    from chainloom.wormhole import GuardianSets


class JobArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`JobArgumentError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(f"{self.prog}: {message}")


def add_master_flag(parser: argparse.ArgumentParser) -> None:
    """``--master``."""
    parser.add_argument("--master", help="Spark master (spark.master), e.g. local[2].")


def add_table_flags(parser: argparse.ArgumentParser) -> None:
    """``--table`` (required), ``--index-table``, ``--project``, ``--instance``, ``--master``
    and ``--config``."""
    parser.add_argument("--table", required=True, help="Events table (bigtable.table).")
    parser.add_argument("--index-table", help="Index table (bigtable.index_table).")
    parser.add_argument("--project", help="Bigtable project (bigtable.project).")
    parser.add_argument("--instance", help="Bigtable instance (bigtable.instance).")
    add_master_flag(parser)
    parser.add_argument("--config", help="YAML settings file (default: $CHAINLOOM_SPARK_CONFIG).")


def add_guardian_set_flag(parser: argparse.ArgumentParser) -> None:
    """``--guardian-set``: what the jobs that verify VAAs verify them against."""
    parser.add_argument(
        "--guardian-set",
        metavar="mainnet|devnet|dev[:N]|FILE",
        help="Guardian sets to verify against (guardian_sets.source; dev: the test kit's).",
    )


def add_summary_flag(parser: argparse.ArgumentParser) -> None:
    """``--summary``."""
    parser.add_argument("--summary", help="Write the summary as JSON to this file.")


def is_dev_kit(source: str | None) -> bool:
    """Whether ``--guardian-set`` names the test kit's guardians (``dev``/``dev:N``): tests
    and demos only, so never a setting."""
    return source is not None and (source == "dev" or source.startswith("dev:"))


def guardian_set_source(args: Any, settings: SparkJobSettings) -> str:
    """What the VAAs are verified against: ``--guardian-set dev[:N]``, else the setting
    (which ``--guardian-set`` sets when given, through :func:`load_job_settings`)."""
    source: str | None = args.guardian_set
    return source if source is not None and is_dev_kit(source) else settings.guardian_sets.source


def load_guardian_sets(source: str) -> GuardianSets:
    """The sets ``source`` names; ``dev``/``dev:N`` are the dev kit's (tests and demos only,
    found through :mod:`chainloom.extensions`)."""
    from chainloom import extensions
    from chainloom.wormhole import GuardianSets

    if is_dev_kit(source):
        try:
            count = int(source[4:]) if source.startswith("dev:") else 19
            sets: GuardianSets = extensions.load(
                extensions.GUARDIAN_SETS, "dev", what="--guardian-set"
            )(count)
        except (ValueError, extensions.ExtensionMissingError) as error:
            raise JobArgumentError(f"--guardian-set {source}: {error}") from None
        return sets
    if source == "mainnet":
        return GuardianSets.mainnet()
    if source == "devnet":
        return GuardianSets.devnet()
    try:
        return GuardianSets.from_file(source)
    except WormholeError as error:
        raise JobArgumentError(f"--guardian-set {source}: {error}") from None


def local_path(path: str) -> str | None:
    """The local file system path of ``path``, or None for other schemes (s3a://, gs://)."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if "://" in path:
        return None
    return path


def check_input(path: str, option: str = "--input") -> None:
    """A local input that does not exist is refused before Spark starts (exit 2)."""
    local = local_path(path)
    if local is None:
        return
    if glob.has_magic(local):
        if not glob.glob(local):
            raise JobInputError(f"{option} {path}: no file matches")
    elif not os.path.exists(local):
        raise JobInputError(f"{option} {path}: does not exist")


def load_job_settings(
    args: Any, flags: dict[str, Any] | None = None
) -> tuple[SparkJobSettings, BigtableSettings]:
    """The job's settings with the table flags (and ``--guardian-set``, where the job has it,
    and the job's own ``flags``) applied, and the tables' full location.

    Raises :class:`JobArgumentError` on a bad setting or an incomplete location.
    """
    source = getattr(args, "guardian_set", None)
    flags = {
        "spark.master": args.master,
        "bigtable.table": args.table,
        "bigtable.index_table": args.index_table,
        "bigtable.project": args.project,
        "bigtable.instance": args.instance,
        "guardian_sets.source": None if is_dev_kit(source) else source,
        **(flags or {}),
    }
    try:
        settings = load_settings(SparkJobSettings, config_file=args.config, flags=flags)
        location = locate(EventStoreSettings(bigtable=settings.bigtable))
    except (SettingsError, StoreConfigError) as error:
        raise JobArgumentError(str(error)) from None
    return settings, location
