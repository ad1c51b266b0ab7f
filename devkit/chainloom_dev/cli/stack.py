"""``chainloom-dev stack``: install, start, inspect and stop the local development stack."""

from __future__ import annotations

import os
import shlex
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from chainloom_dev.stack import manager
from chainloom_dev.stack.components.evm import PERIOD_VARIABLE
from chainloom_dev.stack.components.redis import FSYNC_POLICIES, FSYNC_VARIABLE

_console = Console(stderr=True)


class _ConsoleProgress:
    """Prints each step with the time since the command started, and a live spinner while a
    long step (a first-run build) is under way, so a slow step never looks like a hang."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._status = _console.status("", spinner="dots")

    def __enter__(self) -> _ConsoleProgress:
        self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._status.stop()

    def step(self, message: str) -> None:
        _console.print(f"[dim]{time.monotonic() - self._start:6.1f}s[/dim] {message}")
        self._status.update(f"{message} ...")


def _names(only: str | None) -> list[str]:
    if not only:
        return list(manager.DEFAULT)
    return [name.strip() for name in only.split(",") if name.strip()]


@click.group()
def stack() -> None:
    """Install, start, inspect and stop the local stack (Redis, Cassandra, Bigtable, Kubernetes).

    Everything runs on 127.0.0.1 with free ports; downloads and builds are cached under
    ~/.cache/chainloom (or $CHAINLOOM_CACHE), so only the first run is slow.
    """


@stack.command()
@click.option(
    "--only",
    metavar="NAMES",
    help="Comma-separated components or groups "
    "(redis, bigtable, cassandra, otel, kubernetes, full, etcd, kube-apiserver, ...).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Add kube-controller-manager, kube-scheduler, KWOK and the OpenTelemetry Collector.",
)
@click.option(
    "--node",
    is_flag=True,
    help="Add a real node (containerd, kubelet, kube-proxy, cluster DNS) and the chainloom:dev "
    "image built from this checkout; pods run real containers. Needs root (docs/stack.md).",
)
@click.option(
    "--redis-fsync",
    type=click.Choice(FSYNC_POLICIES),
    envvar=FSYNC_VARIABLE,
    help="When Redis fsyncs its append-only file: everysec (default; a machine crash can lose "
    "about the last second of writes) or always (before every answer). Applies when Redis "
    f"starts; a restart keeps the last policy. Env: {FSYNC_VARIABLE}.",
)
@click.option(
    "--evm",
    is_flag=True,
    help="Add two geth dev chains (Wormhole chains 2 and 4) and solcjs; the first run builds "
    "geth (~20 min). See docs/evm.md.",
)
@click.option(
    "--evm-block-period",
    type=click.IntRange(min=0),
    envvar=PERIOD_VARIABLE,
    help="Seconds between blocks on the geth chains (default 0: a block per transaction). "
    f"Applies when they start; a restart keeps the last period. Env: {PERIOD_VARIABLE}.",
)
def up(  # noqa: PLR0917 (click passes every option)
    only: str | None,
    full: bool,
    node: bool,
    redis_fsync: str | None,
    evm: bool,
    evm_block_period: int | None,
) -> None:
    """Install what is missing, start what is not running, and wait until healthy.

    A component whose process died is restarted on the port it had (if that port is free), so
    clients configured with its address reconnect; Redis also finds its data again.
    """
    if redis_fsync:
        # The Redis component reads its policy from the environment, like its port.
        os.environ[FSYNC_VARIABLE] = redis_fsync
    if evm_block_period is not None:
        os.environ[PERIOD_VARIABLE] = str(evm_block_period)
    # A StackError (missing tool, port taken, a component that failed its health check)
    # reaches the CLI's error boundary: one message, exit 2.
    with _ConsoleProgress() as progress:
        started = manager.up(_names(only), full=full, node=node, evm=evm, progress=progress)
    _console.print(f"[green]up:[/green] {', '.join(started)}")


@stack.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def status(as_json: bool) -> None:
    """Check each recorded component with a real round trip and show a table.

    Exits 1 when nothing is running or any component is unhealthy.
    """
    rows = manager.status()
    if as_json:
        import json
        from dataclasses import asdict

        click.echo(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        table = Table("component", "version", "address", "pid", "healthy")
        for row in rows:
            healthy = "[green]yes[/green]" if row.healthy else f"[red]no[/red] {row.detail}"
            table.add_row(row.name, row.version, row.address, str(row.pid or "-"), healthy)
        Console().print(table if rows else "nothing is running (try: chainloom-dev stack up)")
    # Exit status for scripts: 0 only when something runs and all of it is healthy.
    if not rows or any(not row.healthy for row in rows):
        sys.exit(1)


@stack.command()
@click.option(
    "--spark",
    is_flag=True,
    help="Build chainloom-spark:dev instead (the image plus Java 17 and pyspark, for "
    "SparkApplications and spark-submit pods; about 1 GiB, built only when asked for).",
)
def image(spark: bool) -> None:
    """Rebuild chainloom:dev from this checkout if it changed, and import it into the node.

    The image is cached by a hash of pyproject.toml, README.md and the source trees, so an
    unchanged tree is only imported again. Pods pick up a new image when they are recreated.
    """
    name = "chainloom-spark-image" if spark else "chainloom-image"
    with _ConsoleProgress() as progress:
        running = manager.refresh(name, progress=progress)
    _console.print(f"[green]image:[/green] {running.address} ({running.version})")


@stack.command()
def env() -> None:
    """Print shell exports for the running components: eval "$(chainloom-dev stack env)"."""
    state = manager.load_state()
    for key, value in sorted(manager.environment(state).items()):
        click.echo(f"export {key}={shlex.quote(value)}")
    bins = sorted({r.extra["bin_dir"] for r in state.values() if "bin_dir" in r.extra})
    if bins:
        click.echo(f'export PATH={shlex.quote(":".join(bins))}:"$PATH"')


@stack.command()
@click.option("--only", metavar="NAMES", help="Stop only these components (default: all).")
def down(only: str | None) -> None:
    """Stop the stack's processes by pid; nothing of ours is left running."""
    stopped = manager.down(_names(only) if only else None)
    _console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
