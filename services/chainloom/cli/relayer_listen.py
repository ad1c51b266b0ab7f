"""``chainloom relayer listen``: the listener entry point (spy stream + REST -> Redis tables).

Kept in its own module so the relayer group (``chainloom.cli.relayer``) and the listener can be
worked on separately; the group registers this command with ``relayer.add_command(listen)``.
It only wires things together: the configuration, the validator, the tables, the optional
redemption check, the spy client and the REST server.
"""

from __future__ import annotations

import sys
from typing import Any

import click


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="YAML/JSON configuration file (default: $CHAINLOOM_RELAYER_CONFIG).",
)
@click.option("--redis-url", help="Redis URL of the relay tables (overrides the config).")
@click.option("--spy", "spy_address", help="Spy host:port (overrides the config).")
@click.option("--no-spy", is_flag=True, help="Do not subscribe to a spy (REST only).")
@click.option("--rest-host", help="REST interface (overrides the config).")
@click.option("--rest-port", type=int, help="REST port, 0 picks one (overrides the config).")
@click.option("--no-rest", is_flag=True, help="Do not serve REST (spy only).")
@click.option(
    "--redeem-check",
    type=click.Choice(["none", "redis-sim"]),
    default="none",
    show_default=True,
    help="Ask a chain adapter whether a transfer is already redeemed: none (the "
    "workers still check) or the Redis-simulated chain used in tests.",
)
@click.option("--threads", default=8, show_default=True, help="Intake threads.")
def listen(**options: Any) -> None:
    """Validate VAAs from the spy and the REST endpoint and queue them for the workers."""
    import dataclasses
    import os

    from chainloom.relayer.config import RelayerConfig
    from chainloom.relayer.errors import RelayerError

    rest_port = options["rest_port"]
    overrides = {
        "CHAINLOOM_RELAYER_REDIS_URL": options["redis_url"],
        "CHAINLOOM_RELAYER_SPY_ADDRESS": options["spy_address"],
        "CHAINLOOM_RELAYER_REST_HOST": options["rest_host"],
        "CHAINLOOM_RELAYER_REST_PORT": None if rest_port is None else str(rest_port),
    }
    environ = dict(os.environ) | {k: v for k, v in overrides.items() if v is not None}
    try:
        config = RelayerConfig.load(options["config_path"], environ)
        if options["no_spy"]:
            config = dataclasses.replace(config, spy_address=None)
        _run(
            config,
            rest=not options["no_rest"],
            redeem_check=options["redeem_check"],
            threads=options["threads"],
        )
    except RelayerError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        return


def _run(config: Any, *, rest: bool, redeem_check: str, threads: int) -> None:
    import asyncio
    import contextlib
    import signal

    import redis

    from chainloom.relayer.errors import ConfigError
    from chainloom.relayer.intake import Intake
    from chainloom.relayer.listener import Listener
    from chainloom.relayer.spy_client import SpyClient
    from chainloom.relayer.spy_server import EmitterKey
    from chainloom.relayer.tables import RelayTables
    from chainloom.relayer.validation import Validator

    try:
        client = redis.Redis.from_url(config.redis_url)
    except ValueError as error:
        raise ConfigError(f"redis_url: {error}") from None
    tables = RelayTables(client, config.key_prefix)
    adapters: dict[int, Any] = {}
    if redeem_check == "redis-sim":
        from chainloom.relayer.adapters import RedisLedgerAdapter

        adapters = {chain: RedisLedgerAdapter(client, chain) for chain in config.target_chains}
    validator = Validator(config.validation_policy(), config.load_guardian_sets())
    intake = Intake(validator, tables, adapters)
    spy = None
    if config.spy_address is not None:
        filters = [EmitterKey(chain, address) for chain, address in config.known_emitters]
        spy = SpyClient(
            config.spy_address,
            filters,
            buffer_size=config.spy_buffer,
            overflow=config.spy_overflow,
        )
    listener = Listener(intake, spy=spy, rest=config.rest if rest else None, threads=threads)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        await listener.start()
        if rest:
            click.echo(f"listener: REST on {config.rest.host}:{listener.port}", err=True)
        if spy is not None:
            click.echo(f"listener: subscribing to spy {config.spy_address}", err=True)
        with contextlib.suppress(asyncio.CancelledError):
            await listener.run_forever()

    asyncio.run(main())
