"""ledger-load's flags: the ledger database's settings, read as ``chainloom ledger load`` reads
them, and the Spark master."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chainloom.ledger.config import LedgerSettings
from chainloom.ledger.errors import (
    LedgerConfigError,
)
from chainloom.settings import load_settings
from chainloom_spark.arguments import JobArgumentParser, add_master_flag

JOB = "ledger-load"
"""The job's name."""

DEFAULT_BATCH = 64
"""Ledgers per Spark job: the fence moves after each; two batches bound the driver's memory."""


def parser() -> argparse.ArgumentParser:
    """The job's command line."""
    parser = JobArgumentParser(
        prog=JOB, description="Load an XRPL ledger dump with Spark executors."
    )
    parser.add_argument("--input", required=True, type=Path, help="The ledger dump (JSON lines).")
    parser.add_argument("--config", help="A ledger settings YAML file (CHAINLOOM_LEDGER_CONFIG).")
    parser.add_argument("--backend", choices=["sqlite", "cassandra"], help="database.type")
    parser.add_argument("--sqlite", help="database.sqlite.path")
    parser.add_argument("--cassandra-hosts", help="host[:port],... (database.cassandra.hosts)")
    parser.add_argument("--keyspace", help="database.cassandra.keyspace")
    parser.add_argument(
        "--replication-factor", type=int, help="database.cassandra.replication_factor"
    )
    parser.add_argument(
        "--partitions", type=int, help="Ledger ranges per batch (default: Spark's parallelism)."
    )
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH, help="Ledgers per Spark job (fence step)."
    )
    parser.add_argument("--verify-state", action="store_true", help="Check every account_hash.")
    add_master_flag(parser)
    return parser


def ledger_settings(args: argparse.Namespace) -> LedgerSettings:
    """The flags over ``--config`` and the environment, as ``chainloom ledger load`` reads
    them."""
    flags: dict[str, Any] = {
        "database.type": args.backend,
        "database.sqlite.path": args.sqlite,
        "database.cassandra.keyspace": args.keyspace,
        "database.cassandra.replication_factor": args.replication_factor,
    }
    if args.cassandra_hosts:
        hosts: list[str] = []
        for entry in args.cassandra_hosts.split(","):
            host, _, port = entry.strip().partition(":")
            if port:
                if not port.isdigit():
                    raise LedgerConfigError(f"--cassandra-hosts: bad port in {entry!r}")
                flags["database.cassandra.port"] = int(port)
            hosts.append(host)
        flags["database.cassandra.hosts"] = hosts
    return load_settings(LedgerSettings, config_file=args.config, flags=flags)
