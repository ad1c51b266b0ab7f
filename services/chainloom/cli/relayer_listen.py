"""``chainloom relayer listen``: the listener entry point (spy stream + REST -> Redis tables).

Kept in its own module so the relayer group (``chainloom.cli.relayer``) and the listener can be
worked on separately; the group registers this command with ``relayer.add_command(listen)``.
It parses flags, loads :class:`~chainloom.relayer.config.RelayerSettings` with the flags as
the top layer, and calls :func:`chainloom.relayer.service.run_listener`.
"""

from __future__ import annotations

import logging
from typing import Any

import click

from chainloom.cli.options import config_option, fail, load_or_exit


@click.command()
@config_option("CHAINLOOM_RELAYER_CONFIG")
@click.option("--redis-url", help="Redis URL of the relay tables (redis.url).")
@click.option("--spy", "spy_address", help="Spy host:port (spy_address).")
@click.option("--no-spy", is_flag=True, help="Do not subscribe to a spy (REST only).")
@click.option("--rest-host", help="REST interface (rest.host).")
@click.option("--rest-port", type=int, help="REST port, 0 picks one (rest.port).")
@click.option("--no-rest", is_flag=True, help="Do not serve REST (spy only).")
@click.option(
    "--redeem-check",
    type=click.Choice(["none", "redis-sim"]),
    help="Ask a chain adapter whether a transfer is already redeemed (redeem_check): none "
    "(the workers still check) or the Redis-simulated chain used in tests.",
)
@click.option("--threads", type=int, help="Intake threads (intake_threads).")
def listen(**options: Any) -> None:
    """Validate VAAs from the spy and the REST endpoint and queue them for the workers."""
    from chainloom import extensions
    from chainloom.relayer.config import RelayerSettings
    from chainloom.relayer.errors import RelayerError
    from chainloom.relayer.listener import Listener
    from chainloom.relayer.service import run_listener
    from chainloom.telemetry import configure_logging

    flags = {
        "redis.url": options["redis_url"],
        "spy_address": options["spy_address"],
        "rest.host": options["rest_host"],
        "rest.port": options["rest_port"],
        "rest.enabled": False if options["no_rest"] else None,
        "redeem_check": options["redeem_check"],
        "intake_threads": options["threads"],
    }
    settings = load_or_exit(RelayerSettings, options["config_path"], flags)
    if options["no_spy"]:
        settings = settings.model_copy(update={"spy_address": None})
    # Warnings only, as before: the first stderr line stays the "REST on" line scripts read.
    configure_logging(settings.telemetry.log_format, logging.WARNING)

    def started(listener: Listener) -> None:
        if listener.rest is not None:
            click.echo(f"listener: REST on {settings.rest.host}:{listener.port}", err=True)
        if listener.spy is not None:
            click.echo(f"listener: subscribing to spy {settings.spy_address}", err=True)

    try:
        redeem_check = (
            extensions.load(extensions.CHAIN_ADAPTERS, "redis-sim", what="redeem_check")
            if settings.redeem_check == "redis-sim"
            else None
        )
        run_listener(settings, redeem_check=redeem_check, on_started=started)
    except RelayerError as error:
        fail(str(error))
    except KeyboardInterrupt:
        return
