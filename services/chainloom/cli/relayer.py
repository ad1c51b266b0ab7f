"""``chainloom relayer``: run workers and inspect or repair the relay tables.

``listen`` lives in :mod:`chainloom.cli.relayer_listen` (the listener is its own piece of
work); this group registers it. Heavy imports (redis, the worker, the adapters) happen inside
the commands so ``chainloom relayer --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from chainloom.cli.relayer_listen import listen

if TYPE_CHECKING:
    from chainloom.relayer.tables import RelayTables

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
REDIS_URL_HELP = "Redis URL of the relay tables (default: $CHAINLOOM_REDIS_URL or local 6379/0)."
PREFIX_HELP = "Versioned key prefix of the relay tables."


@click.group()
def relayer() -> None:
    """The token-bridge relayer: listener, workers, and the Redis relay tables."""


relayer.add_command(listen)


def _tables(redis_url: str, prefix: str) -> RelayTables:
    import redis

    from chainloom.relayer.tables import RelayTables

    try:
        client = redis.Redis.from_url(redis_url)
        client.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        if isinstance(exc, redis.AuthenticationError):
            raise click.BadParameter(str(exc), param_hint="--redis-url") from None
        raise  # Redis is down: the CLI's error boundary exits 4, naming the server
    except (ValueError, redis.RedisError) as exc:
        raise click.BadParameter(
            f"cannot use Redis at {_redact(redis_url)}: {exc}", param_hint="--redis-url"
        ) from None
    return RelayTables(client, prefix)


def _redact(url: str) -> str:
    """The URL without a password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _redis_options(function: Any) -> Any:
    function = click.option(
        "--prefix", default="chainloom:relay:v1", show_default=True, help=PREFIX_HELP
    )(function)
    return click.option(
        "--redis-url", envvar="CHAINLOOM_REDIS_URL", default=DEFAULT_REDIS_URL, help=REDIS_URL_HELP
    )(function)


# --------------------------------------------------------------------------------------------
# work


@relayer.command()
@click.option("--chain", "chain", required=True, help="Target chain: a Wormhole chain id or name.")
@click.option(
    "--wallet-file",
    required=True,
    type=click.Path(dir_okay=False, path_type=str),
    help="File holding the wallet key (hex), e.g. a mounted Kubernetes Secret.",
)
@click.option(
    "--adapter",
    type=click.Choice(["inprocess", "redis-sim"]),
    default="redis-sim",
    show_default=True,
    help="Chain adapter: an in-memory chain, or a simulated chain in Redis shared by processes.",
)
@click.option("--max-retries", type=click.IntRange(0), default=10, show_default=True)
@click.option(
    "--base-delay",
    type=click.FloatRange(0),
    default=1.0,
    show_default=True,
    help="Seconds of backoff after the first failure (doubles per failure).",
)
@click.option("--max-delay", type=click.FloatRange(0), default=3600.0, show_default=True)
@click.option(
    "--lease-ttl",
    type=click.FloatRange(0.1),
    default=15.0,
    show_default=True,
    help="Seconds after which a silent worker is presumed dead and reaped.",
)
@click.option(
    "--batch",
    type=click.IntRange(1, 10_000),
    default=64,
    show_default=True,
    help="Requests claimed per step.",
)
@click.option("--idle-sleep", type=click.FloatRange(0), default=0.05, show_default=True)
@click.option(
    "--recheck",
    type=click.FloatRange(0),
    default=1.0,
    show_default=True,
    help="Seconds between finality checks of one pending submission.",
)
@click.option(
    "--reap-every",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Seconds between two passes of the reaper over dead workers' In-Work tables.",
)
@click.option(
    "--stop-when-idle",
    type=click.FloatRange(0),
    default=None,
    help="Exit after this many seconds without any work (for batch runs).",
)
@_redis_options
def work(
    *,
    chain: str,
    wallet_file: str,
    adapter: str,
    max_retries: int,
    base_delay: float,
    max_delay: float,
    lease_ttl: float,
    batch: int,
    idle_sleep: float,
    recheck: float,
    reap_every: float,
    stop_when_idle: float | None,
    redis_url: str,
    prefix: str,
) -> None:
    """Run one worker for {CHAIN + the wallet in WALLET_FILE} until SIGTERM or SIGINT."""
    import logging
    import signal

    from chainloom.relayer.adapters import ChainAdapter
    from chainloom.relayer.errors import RelayerError
    from chainloom.relayer.model import RetryPolicy
    from chainloom.relayer.wallet import Wallet
    from chainloom.relayer.worker import Worker, WorkerSettings
    from chainloom.testing.sim_chains import InProcessAdapter, RedisLedgerAdapter

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    chain_id = _chain_id(chain)
    try:
        wallet = Wallet.from_file(wallet_file)
        if max_delay < base_delay:
            raise click.BadParameter("must be >= --base-delay", param_hint="--max-delay")
        policy = RetryPolicy(max_retries=max_retries, base_delay=base_delay, max_delay=max_delay)
    except RelayerError as exc:
        raise click.BadParameter(str(exc), param_hint="--wallet-file") from None
    tables = _tables(redis_url, prefix)
    chain_adapter: ChainAdapter
    if adapter == "inprocess":
        chain_adapter = InProcessAdapter(chain_id)
    else:
        chain_adapter = RedisLedgerAdapter(tables.client, chain_id)
    settings = WorkerSettings(
        policy=policy,
        lease_ttl=lease_ttl,
        batch=batch,
        idle_sleep=idle_sleep,
        recheck=recheck,
        reap_every=reap_every,
        stop_when_idle=stop_when_idle,
    )
    worker = Worker(tables, chain_adapter, wallet, settings)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    try:
        worker.run()
    except KeyboardInterrupt:
        worker.stop()
    except RelayerError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


def _chain_id(text: str) -> int:
    if text.isdigit():
        return int(text)
    from chainloom.wormhole import chain_id

    try:
        return chain_id(text)
    except Exception:
        raise click.BadParameter(f"unknown chain {text!r}", param_hint="--chain") from None


# --------------------------------------------------------------------------------------------
# queues


@relayer.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_redis_options
def queues(as_json: bool, redis_url: str, prefix: str) -> None:
    """Depth of every table per target chain (COMPLETED counts the retained log)."""
    from chainloom.relayer.model import Table

    tables = _tables(redis_url, prefix)
    depths = tables.depths()
    chains = sorted({c for per_chain in depths.values() for c in per_chain})
    if as_json:
        click.echo(
            json.dumps(
                {
                    "prefix": prefix,
                    "tables": {t.value: {str(c): n for c, n in depths[t].items()} for t in Table},
                    "workers": tables.workers(),
                },
                sort_keys=True,
            )
        )
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    view = RichTable(title=f"relay tables ({prefix})")
    view.add_column("chain", justify="right")
    for table in Table:
        view.add_column(table.value, justify="right")
    for chain in chains:
        view.add_row(str(chain), *(str(depths[t].get(chain, 0)) for t in Table))
    Console().print(view)


# --------------------------------------------------------------------------------------------
# failed


@relayer.group()
def failed() -> None:
    """List, retry or drop requests in the Failed table."""


@failed.command("list")
@click.option("--chain", "chain", default=None, help="Only this target chain.")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@_redis_options
def failed_list(chain: str | None, limit: int, as_json: bool, redis_url: str, prefix: str) -> None:
    """Requests that exhausted their retries, with their last error."""
    tables = _tables(redis_url, prefix)
    requests = tables.failed(_chain_id(chain) if chain else None, limit=limit)
    for request in requests:
        row = {
            "digest": request.digest,
            "target_chain": request.target_chain,
            "emitter_chain": request.emitter_chain,
            "sequence": request.sequence,
            "retries": request.retries,
            "last_error": request.last_error,
        }
        if as_json:
            click.echo(json.dumps(row, sort_keys=True))
        else:
            click.echo(
                f"{request.digest} chain={request.target_chain} "
                f"seq={request.emitter_chain}/{request.sequence} retries={request.retries} "
                f"error={request.last_error}"
            )
    if not as_json:
        click.echo(f"{len(requests)} failed request(s)", err=True)


def _digests(digests: tuple[str, ...]) -> list[str]:
    from chainloom.relayer.errors import RequestFormatError
    from chainloom.relayer.model import validate_digest

    out = []
    for digest in digests:
        try:
            out.append(validate_digest(digest.lower()))
        except RequestFormatError as exc:
            raise click.BadParameter(str(exc), param_hint="DIGEST") from None
    return out


@failed.command("retry")
@click.argument("digests", nargs=-1, required=True)
@_redis_options
def failed_retry(digests: tuple[str, ...], redis_url: str, prefix: str) -> None:
    """Move Failed requests back to Incoming with a fresh retry budget."""
    tables = _tables(redis_url, prefix)
    missing = [d for d in _digests(digests) if not tables.retry_failed(d)]
    click.echo(f"retried {len(digests) - len(missing)} request(s)")
    if missing:
        raise click.ClickException(f"not in Failed: {', '.join(missing)}")


@failed.command("drop")
@click.argument("digests", nargs=-1, required=True)
@_redis_options
def failed_drop(digests: tuple[str, ...], redis_url: str, prefix: str) -> None:
    """Purge Failed requests (recorded in the Completed log as dropped)."""
    tables = _tables(redis_url, prefix)
    missing = [d for d in _digests(digests) if not tables.drop_failed(d)]
    click.echo(f"dropped {len(digests) - len(missing)} request(s)")
    if missing:
        raise click.ClickException(f"not in Failed: {', '.join(missing)}")
