"""``chainloom ledger follow``: one replica of the ETL that keeps a store current with rippled.

Kept apart from :mod:`chainloom.cli.ledger` because it is the long-running member of the family:
it stops on SIGTERM (exit 0), reports its role changes as lines on stderr, and never exits on a
lost fence (it stands by instead; :mod:`chainloom.ledger.follower`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click

from chainloom.cli.ledger import (
    _backend_options,
    _feed_flags,
    _feed_options,
    _guard,
    _ledger_settings,
    _open_backend,
)


@click.command()
@click.option("--grpc", "grpc_address", required=True, help="rippled gRPC endpoint host:port.")
@click.option("--start", type=int, help="First ledger of an empty store (default: latest).")
@click.option("--stop", type=int, help="Stop once this ledger is committed (catch-up runs).")
@click.option(
    "--fallback-seconds",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="How long the range may stall, with rippled ahead, before a standby takes over.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Seconds between looks for a new ledger (writer) or at the range (standby).",
)
@click.option(
    "--probes",
    metavar="HOST:PORT",
    help="Serve /healthz, /readyz and /status (the role) here; PORT 0 picks one.",
)
@_feed_options
@_backend_options
@_guard
def follow(
    *,
    grpc_address: str,
    start: int | None,
    stop: int | None,
    fallback_seconds: float,
    poll_interval: float,
    probes: str | None,
    feed_redis: str | None,
    feed_channel: str | None,
    **options: Any,
) -> None:
    """Follow rippled: write while holding the ledger_range fence, else stand by and take over."""
    from chainloom.ledger.etl import Progress
    from chainloom.ledger.feed_redis import feed_from
    from chainloom.ledger.follower import LedgerFollower, RoleChange
    from chainloom.ledger.service import open_source
    from chainloom.signals import stop_signals

    def role_changed(change: RoleChange) -> None:
        at = "empty" if change.stored_max is None else str(change.stored_max)
        click.echo(f"follower: role {change.role} (range max {at}): {change.reason}", err=True)

    def committed(progress: Progress) -> None:
        lag = "?" if progress.lag is None else str(progress.lag)
        click.echo(f"follower: committed ledger {progress.sequence} (lag {lag})", err=True)

    stopping = threading.Event()
    feed = feed_from(_ledger_settings(options, _feed_flags(feed_redis, feed_channel)).feed)
    source = open_source(grpc=grpc_address, start=start)
    backend = _open_backend(options, read_only=False)
    try:
        follower = LedgerFollower(
            backend,
            source,
            fallback_seconds=fallback_seconds,
            poll_interval=poll_interval,
            on_role=role_changed,
            on_commit=committed,
            on_trouble=lambda problem: click.echo(f"follower: {problem}", err=True),
            feed=feed,
            stop=stopping,
        )
        served = _serve_probes(follower, probes)
        try:
            # The follower runs in a thread of its own; the main thread waits for SIGTERM and
            # sets ``stopping`` in plain code (chainloom.signals says why not in a handler).
            with stop_signals() as signals, ThreadPoolExecutor(1, "follower") as pool:
                running = pool.submit(follower.run, until=stop)
                signals.wait(until=running.done)
                stopping.set()
                summary = running.result()
        finally:
            if served is not None:
                served.stop()
    finally:
        backend.close()
        source.close()
        if feed is not None:
            feed.close()
    click.echo(
        f"follower: stopped as {summary.role}; committed {len(summary.committed)} ledgers, "
        f"{summary.takeovers} takeovers, {summary.conflicts} lost fences",
        err=True,
    )


def _serve_probes(follower: Any, address: str | None) -> Any:
    """Start the probe server at ``address`` (``None``: no server)."""
    if address is None:
        return None
    from chainloom.ledger.errors import LedgerConfigError
    from chainloom.ledger.follow_probes import ProbeThread

    host, _, port_text = address.rpartition(":")
    if not host or not port_text.isdigit() or int(port_text) > 65535:
        raise LedgerConfigError(f"--probes {address!r}: expected HOST:PORT")
    served = ProbeThread(follower, host, int(port_text))
    try:
        port = served.start()
    except OSError as error:
        raise LedgerConfigError(f"--probes {address}: cannot listen: {error}") from None
    click.echo(f"follower: probes on http://{host}:{port}", err=True)
    return served
