"""gap-backfill's flags and the plan the driver resolves from them before Spark starts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from chainloom.eventstore.keys import normalize_emitter
from chainloom.settings import BigtableSettings, PublicRpcSettings
from chainloom.wormhole.errors import MessageKeyError
from chainloom.wormhole.sequences import MAX_SEQUENCE
from chainloom_spark.arguments import (
    JobArgumentParser,
    add_guardian_set_flag,
    add_summary_flag,
    add_table_flags,
    check_input,
    guardian_set_source,
    load_job_settings,
)
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.settings import SparkJobSettings

JOB = "gap-backfill"
"""The job's name."""

CHUNK = 64
"""Missing sequences per unit of fetch work (the units are spread over the partitions)."""


def parser() -> argparse.ArgumentParser:
    """The job's flags (docs/spark.md)."""
    p = JobArgumentParser(
        prog=JOB, description="Find and fill the sequences missing from the event store."
    )
    add_table_flags(p)
    p.add_argument(
        "--emitters",
        metavar="CHAIN[:EMITTER],...",
        help="Emitters to check (a chain alone: each of its emitters); default: every emitter "
        "in the table.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--public-api",
        nargs="?",
        const="",
        metavar="ENDPOINT,...",
        help="Fetch from guardian public-API endpoints (host:port or https://host), asked in "
        "turn; without a value: public_rpc.endpoints from the settings.",
    )
    source.add_argument("--files", help="Fetch from files of signed VAAs (any path Spark reads).")
    p.add_argument("--from-seq", type=int, help="Lowest sequence to consider (default: lowest "
                   "stored; below the lowest stored counts as missing when given).")  # fmt: skip
    p.add_argument("--to-seq", type=int, help="Highest sequence to consider (default: highest "
                   "stored; above it counts as missing when given).")  # fmt: skip
    p.add_argument(
        "--max-missing",
        type=int,
        default=100_000,
        help="Sequences looked for per emitter and run; the rest are reported as skipped.",
    )
    add_guardian_set_flag(p)
    p.add_argument("--timeout", type=float, help="Seconds per call (public_rpc.timeout).")
    p.add_argument("--rounds", type=int, help="Rounds of asking (public_rpc.rounds).")
    add_summary_flag(p)
    p.add_argument("--partitions", type=int, help="Partitions the fetches are spread over.")
    return p


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """Everything the driver resolved before Spark starts."""

    settings: SparkJobSettings
    """The job's settings, flags applied."""
    location: BigtableSettings
    """The tables, project and instance filled in."""
    emitters: tuple[tuple[int, str | None], ...]
    """(chain, emitter or None for every emitter of the chain); empty: the whole table."""
    files: str | None
    """The files to fetch from (None: the public API)."""
    public_rpc: PublicRpcSettings
    """The endpoints (used when ``files`` is None)."""
    first: int | None
    """``--from-seq``."""
    last: int | None
    """``--to-seq``."""
    max_missing: int
    """Sequences looked for per emitter."""
    guardian_set_source: str
    """What ``--guardian-set`` (or the settings) named."""
    summary_path: str | None
    """Where the JSON summary goes."""
    partitions: int | None
    """Requested fetch partitions."""


def parse_emitters(text: str) -> tuple[tuple[int, str | None], ...]:
    """``CHAIN[:EMITTER],...`` (emitter hex, ``0x`` optional, left-padded to 32 bytes)."""
    found: list[tuple[int, str | None]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        chain_text, _, emitter = item.partition(":")
        if not chain_text.isdigit() or not 0 <= int(chain_text) <= 0xFFFF:
            raise JobArgumentError(f"--emitters {item!r}: the chain is not a chain id")
        try:
            found.append((int(chain_text), normalize_emitter(emitter) if emitter else None))
        except MessageKeyError as error:
            raise JobArgumentError(f"--emitters {item!r}: {error.reason}") from None
    if not found:
        raise JobArgumentError("--emitters names no emitter")
    return tuple(found)


def resolve(argv: list[str] | None) -> BackfillPlan:
    """Parse flags and settings (JobArgumentError / SettingsError on bad ones)."""
    args = parser().parse_args(argv)
    for name in ("from_seq", "to_seq"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= MAX_SEQUENCE:
            raise JobArgumentError(f"--{name.replace('_', '-')} must be a uint64")
    if args.from_seq is not None and args.to_seq is not None and args.from_seq > args.to_seq:
        raise JobArgumentError("--from-seq must not exceed --to-seq")
    if args.max_missing < 1 or (args.partitions is not None and args.partitions < 1):
        raise JobArgumentError("--max-missing and --partitions must be at least 1")
    if args.files:
        check_input(args.files, option="--files")
    endpoints = [e.strip() for e in (args.public_api or "").split(",") if e.strip()]
    flags = {
        "public_rpc.endpoints": endpoints or None,
        "public_rpc.timeout": args.timeout,
        "public_rpc.rounds": args.rounds,
    }
    settings, location = load_job_settings(args, flags)
    if args.files is None and not settings.public_rpc.endpoints:
        raise JobArgumentError("--public-api: no endpoint given and public_rpc.endpoints is empty")
    return BackfillPlan(
        settings=settings,
        location=location,
        emitters=parse_emitters(args.emitters) if args.emitters is not None else (),
        files=args.files,
        public_rpc=settings.public_rpc,
        first=args.from_seq,
        last=args.to_seq,
        max_missing=args.max_missing,
        guardian_set_source=guardian_set_source(args, settings),
        summary_path=args.summary,
        partitions=args.partitions,
    )
