"""enrich's flags and the plan the driver resolves from them before Spark starts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chainloom.settings import BigtableSettings
from chainloom_spark.arguments import (
    JobArgumentParser,
    add_summary_flag,
    add_table_flags,
    load_job_settings,
    local_path,
)
from chainloom_spark.errors import JobInputError
from chainloom_spark.settings import SparkJobSettings

if TYPE_CHECKING:
    pass


JOB = "enrich"
"""The job's name."""


FORMATS = ("auto", "csv", "parquet")
"""Values of ``--prices-format`` (and ``--coin-ids-format``); ``auto`` picks Parquet for paths
ending in .parquet or local directories holding .parquet files, CSV otherwise."""


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = JobArgumentParser(prog=JOB, description="Backfill TokenTransferDetails from prices.")
    add_table_flags(p)
    p.add_argument(
        "--prices",
        required=True,
        help="Daily USD prices, CSV or Parquet: date, price_usd, and coingecko_id or "
        "token_chain + token_address.",
    )
    p.add_argument("--prices-format", choices=FORMATS, default="auto", help="Format of --prices.")
    p.add_argument(
        "--coin-ids",
        help="CSV or Parquet mapping CoinGecko ids to tokens: coingecko_id, token_chain, "
        "token_address (needed for price rows that name a coingecko_id).",
    )
    p.add_argument("--coin-ids-format", choices=FORMATS, default="auto", help="Its format.")
    add_summary_flag(p)
    return p


@dataclass(frozen=True, slots=True)
class EnrichPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    prices: str
    """The price dataset's path."""
    prices_format: str
    """``csv`` or ``parquet``."""
    coin_ids: str | None
    """The CoinGecko id mapping's path, if any."""
    coin_ids_format: str
    """``csv`` or ``parquet``."""
    summary_path: str | None
    """Where the JSON summary goes."""


def dataset_format(path: str, chosen: str) -> str:
    """``csv`` or ``parquet`` for ``path`` (``auto`` looks at the name and, locally, inside)."""
    if chosen != "auto":
        return chosen
    stripped = path.rstrip("/")
    if stripped.endswith(".parquet"):
        return "parquet"
    local = local_path(stripped)
    if local is not None and Path(local).is_dir() and any(Path(local).rglob("*.parquet")):
        return "parquet"
    return "csv"


def check_dataset(flag: str, path: str) -> None:
    """A local dataset that does not exist is refused before Spark starts (exit 2)."""
    local = local_path(path)
    if local is not None and not Path(local).exists():
        raise JobInputError(f"{flag} {path}: does not exist")


def resolve(argv: list[str] | None) -> EnrichPlan:
    """Parse flags and settings (JobArgumentError / JobInputError on bad ones)."""
    args = parser().parse_args(argv)
    check_dataset("--prices", args.prices)
    if args.coin_ids:
        check_dataset("--coin-ids", args.coin_ids)
    settings, location = load_job_settings(args)
    return EnrichPlan(
        settings=settings,
        location=location,
        prices=args.prices,
        prices_format=dataset_format(args.prices, args.prices_format),
        coin_ids=args.coin_ids,
        coin_ids_format=dataset_format(args.coin_ids or "", args.coin_ids_format),
        summary_path=args.summary,
    )
