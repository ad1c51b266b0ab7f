"""``chainloom relayer``: run workers and inspect or repair the relay tables.

``listen`` lives in :mod:`chainloom.cli.relayer_listen` (the listener is its own piece of
work); this group registers it. Every command loads
:class:`~chainloom.relayer.config.RelayerSettings` (``--config``, the ``CHAINLOOM_``
environment, then its flags) and starts the relayer through :mod:`chainloom.relayer.service`.
Heavy imports (redis, the worker, the adapters) happen inside the commands so
``chainloom relayer --help`` stays fast.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from chainloom.cli.options import config_option, fail, load_or_exit
from chainloom.cli.relayer_listen import listen

if TYPE_CHECKING:
    from chainloom.relayer.config import RelayerSettings
    from chainloom.relayer.tables import RelayTables


@click.group()
def relayer() -> None:
    """The token-bridge relayer: listener, workers, and the Redis relay tables."""


relayer.add_command(listen)


def _settings(config_path: str | None, flags: dict[str, Any]) -> RelayerSettings:
    from chainloom.relayer.config import RelayerSettings

    return load_or_exit(RelayerSettings, config_path, flags)


def _tables(options: dict[str, Any]) -> RelayTables:
    """The tables of the settings given by ``--config``/``--redis-url``/``--prefix``."""
    from chainloom.relayer.errors import RelayerError, TablesRefusedError, TablesUnavailableError
    from chainloom.relayer.service import open_tables

    settings = _settings(
        options["config_path"],
        {"redis.url": options["redis_url"], "redis.key_prefix": options["prefix"]},
    )
    try:
        return open_tables(settings)
    except (TablesUnavailableError, TablesRefusedError):
        raise  # the boundary exits 4 (Redis down) or 2 (it refused us), naming the server
    except RelayerError as error:
        fail(f"--redis-url: {error}")


def _redis_options(function: Any) -> Any:
    function = click.option(
        "--prefix", default=None, help="Versioned key prefix of the tables (redis.key_prefix)."
    )(function)
    function = click.option(
        "--redis-url", default=None, help="Redis URL of the relay tables (redis.url)."
    )(function)
    return config_option("CHAINLOOM_RELAYER_CONFIG")(function)


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
    type=click.Choice(["inprocess", "redis-sim", "evm"]),
    help="Chain adapter (worker.adapter): an in-memory chain, a simulated chain in Redis "
    "shared by processes, or a real EVM chain of evm_chains (docs/evm.md).",
)
@click.option("--max-retries", type=int, help="worker.max_retries")
@click.option(
    "--base-delay", type=float, help="Seconds of backoff after the first failure "
    "(worker.backoff.initial; grows by worker.backoff.multiplier per failure).",
)  # fmt: skip
@click.option("--max-delay", type=float, help="worker.backoff.maximum")
@click.option(
    "--lease-ttl",
    type=float,
    help="Seconds after which a silent worker is reaped (worker.lease_ttl).",
)
@click.option("--batch", type=int, help="Requests claimed per step (worker.batch).")
@click.option("--idle-sleep", type=float, help="worker.idle_sleep")
@click.option(
    "--recheck",
    type=float,
    help="Seconds between finality checks of a submission (worker.recheck).",
)
@click.option(
    "--reap-every", type=float, help="Seconds between two reaper passes (worker.reap_every)."
)
@click.option(
    "--stop-when-idle",
    type=float,
    help="Exit after this many seconds without any work (worker.stop_when_idle).",
)
@_redis_options
def work(*, chain: str, wallet_file: str, **options: Any) -> None:
    """Run one worker for {CHAIN + the wallet in WALLET_FILE} until SIGTERM or SIGINT."""
    from chainloom import extensions
    from chainloom.errors import UnavailableError
    from chainloom.relayer.errors import RelayerError, TablesRefusedError
    from chainloom.relayer.service import AdapterFactory, run_worker, worker_chain
    from chainloom.relayer.wallet import Wallet
    from chainloom.telemetry import configure_logging

    flags = {f"worker.{name}": options[name] for name in (
        "adapter", "max_retries", "lease_ttl", "batch", "idle_sleep", "recheck", "reap_every",
        "stop_when_idle",
    )} | {
        "worker.backoff.initial": options["base_delay"],
        "worker.backoff.maximum": options["max_delay"],
        "redis.url": options["redis_url"],
        "redis.key_prefix": options["prefix"],
    }  # fmt: skip
    settings = _settings(options["config_path"], flags)
    configure_logging(settings.telemetry.log_format)
    try:
        chain_id = worker_chain(settings, chain)
    except RelayerError as error:
        fail(f"--chain: {error}")
    try:
        wallet = Wallet.from_file(wallet_file)
    except RelayerError as error:
        fail(f"--wallet-file: {error}")
    adapters: AdapterFactory
    if settings.worker.adapter == "evm":
        from chainloom.relayer.evm_adapter import evm_adapters

        adapters = evm_adapters(settings.evm_chains)
    else:
        adapters = extensions.load(
            extensions.CHAIN_ADAPTERS, settings.worker.adapter, what="worker.adapter"
        )
    try:
        run_worker(settings, chain_id, wallet, adapters)
    except (UnavailableError, TablesRefusedError):
        raise  # the boundary exits 4 (Redis down) or 2 (it refused us), naming the server
    except RelayerError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(1) from None


def _chain_id(text: str) -> int:
    from chainloom.wormhole import chain_id
    from chainloom.wormhole.errors import WormholeError

    try:
        return chain_id(text)
    except WormholeError:
        raise click.BadParameter(f"unknown chain {text!r}", param_hint="--chain") from None


# --------------------------------------------------------------------------------------------
# queues


@relayer.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_redis_options
def queues(as_json: bool, **options: Any) -> None:
    """Depth of every table per target chain (COMPLETED counts the retained log)."""
    from chainloom.relayer.model import Table

    tables = _tables(options)
    prefix = tables.prefix
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
def failed_list(chain: str | None, limit: int, as_json: bool, **options: Any) -> None:
    """Requests that exhausted their retries, with their last error."""
    tables = _tables(options)
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
def failed_retry(digests: tuple[str, ...], **options: Any) -> None:
    """Move Failed requests back to Incoming with a fresh retry budget."""
    tables = _tables(options)
    missing = [d for d in _digests(digests) if not tables.retry_failed(d)]
    click.echo(f"retried {len(digests) - len(missing)} request(s)")
    if missing:
        raise click.ClickException(f"not in Failed: {', '.join(missing)}")


@failed.command("drop")
@click.argument("digests", nargs=-1, required=True)
@_redis_options
def failed_drop(digests: tuple[str, ...], **options: Any) -> None:
    """Purge Failed requests (recorded in the Completed log as dropped)."""
    tables = _tables(options)
    missing = [d for d in _digests(digests) if not tables.drop_failed(d)]
    click.echo(f"dropped {len(digests) - len(missing)} request(s)")
    if missing:
        raise click.ClickException(f"not in Failed: {', '.join(missing)}")
