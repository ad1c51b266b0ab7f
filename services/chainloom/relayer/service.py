"""Building and running the relayer from its settings: the one way every entry point starts it.

The CLI (``chainloom relayer listen|work|queues|failed``), the operator's pods and any batch
job call these functions with a :class:`~chainloom.relayer.config.RelayerSettings`; none of
them wires Redis, the validator or the spy client by hand.

Chain adapters come in through an :data:`AdapterFactory` rather than being chosen here: the
product code never imports the development harness, and the only adapters that exist today
are the simulated chains of :mod:`chainloom_dev.sim.sim_chains`, which the CLI passes in.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import redis

from chainloom import telemetry
from chainloom.publicrpc import EndpointConfigError, PublicRpcClient
from chainloom.redis_client import redis_client as open_redis
from chainloom.relayer.adapters import ChainAdapter
from chainloom.relayer.config import RelayerSettings
from chainloom.relayer.errors import ConfigError
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.model import RetryPolicy
from chainloom.relayer.recovery import MissedVaaRecovery
from chainloom.relayer.recovery_state import RedisRecoveryState
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from chainloom.relayer.wallet import Wallet
from chainloom.relayer.worker import Worker, WorkerSettings
from chainloom.signals import stop_signals
from chainloom.spy.client import SpyClient
from chainloom.spy.protocol import EmitterKey
from chainloom.wormhole import CHAINS, chain_id
from chainloom.wormhole.errors import WormholeError

LISTENER_SERVICE = "chainloom-relayer-listener"
"""``service.name`` of the listener's telemetry (unless ``OTEL_SERVICE_NAME`` says otherwise)."""
WORKER_SERVICE = "chainloom-relayer-worker"
"""``service.name`` of a worker's telemetry."""

AdapterFactory = Callable[[redis.Redis, int], ChainAdapter]
"""Builds the adapter of one target chain from the relay tables' Redis client and the chain id."""


def redis_client(settings: RelayerSettings) -> redis.Redis:
    """A client for the configured Redis (no connection is made yet); its password and TLS
    files are read now (CredentialsError naming the setting when one cannot be used)."""
    try:
        return open_redis(settings.redis)
    except ValueError as error:
        raise ConfigError(f"redis.url {settings.redis.redacted_url}: {error}") from None


def open_tables(settings: RelayerSettings, *, check: bool = True) -> RelayTables:
    """The relay tables; with ``check`` Redis is pinged first (TablesUnavailableError if down)."""
    tables = RelayTables(redis_client(settings), settings.redis.key_prefix)
    if check:
        tables.ping()
    return tables


def worker_chain(settings: RelayerSettings, chain: str | int) -> int:
    """The target chain a worker is asked to serve, checked against the settings.

    Refused (ConfigError naming the chain): a name or id Wormhole does not know, and a chain
    missing from ``target_chains`` when that list is set.
    """
    try:
        chosen = chain if isinstance(chain, int) else chain_id(chain)
    except WormholeError:
        raise ConfigError(f"unknown chain {chain!r}") from None
    if settings.target_chains:
        if chosen not in settings.target_chains:
            configured = ", ".join(str(c) for c in settings.target_chains)
            raise ConfigError(
                f"chain {chain!r} is not among the configured target_chains ({configured})"
            )
    elif chosen not in CHAINS:
        raise ConfigError(f"unknown chain {chain!r} (not a Wormhole chain id)")
    return chosen


def build_worker(
    settings: RelayerSettings, chain: int, wallet: Wallet, adapters: AdapterFactory
) -> Worker:
    """One worker for ``chain`` and ``wallet`` on the configured tables and chain adapter."""
    options = settings.worker
    tables = open_tables(settings)
    adapter = adapters(tables.client, chain)
    policy = RetryPolicy(max_retries=options.max_retries, schedule=options.backoff.schedule())
    pacing = WorkerSettings(
        policy=policy,
        lease_ttl=options.lease_ttl,
        batch=options.batch,
        idle_sleep=options.idle_sleep,
        recheck=options.recheck,
        reap_every=options.reap_every,
        balance_every=options.balance_every,
        stop_when_idle=options.stop_when_idle,
    )
    return Worker(tables, adapter, wallet, pacing)


def run_worker(
    settings: RelayerSettings, chain: int, wallet: Wallet, adapters: AdapterFactory
) -> None:
    """Run one worker until SIGTERM or SIGINT (or ``worker.stop_when_idle``).

    Traces and metrics go where the ``OTEL_*`` environment says (nowhere by default).
    """
    worker = build_worker(settings, chain, wallet, adapters)
    observed = telemetry.setup(WORKER_SERVICE)
    try:
        # The loop runs in a thread of its own so that the main thread can wait for the signal
        # and call ``stop`` in plain code (see chainloom.signals for why not in the handler).
        with stop_signals() as stop, ThreadPoolExecutor(1, thread_name_prefix="worker") as pool:
            running = pool.submit(worker.run)
            stop.wait(until=running.done)
            worker.stop()
            running.result()
    finally:
        observed.shutdown()


def build_listener(
    settings: RelayerSettings,
    redeem_check: AdapterFactory | None = None,
    observed: telemetry.Telemetry | None = None,
) -> Listener:
    """The listener: validator, tables, spy client and REST.

    With ``redeem_check``, intake asks each target chain's adapter whether a transfer is
    already redeemed and refuses it if so (the workers check again either way).
    """
    client = redis_client(settings)
    tables = RelayTables(client, settings.redis.key_prefix)
    adapters: dict[int, ChainAdapter] = {}
    if redeem_check is not None:
        adapters = {chain: redeem_check(client, chain) for chain in settings.target_chains}
    try:
        guardian_sets = settings.guardian_sets.load()
    except WormholeError as error:
        raise ConfigError(f"guardian_sets.source: {error}") from None
    validator = Validator(settings.validation_policy(), guardian_sets)
    intake = Intake(validator, tables, adapters)
    spy = None
    if settings.spy_address is not None:
        filters = [EmitterKey(chain, address) for chain, address in settings.emitter_keys()]
        spy = SpyClient(
            settings.spy_address,
            filters,
            buffer_size=settings.spy_buffer,
            overflow=settings.spy_overflow,
        )
    rest = settings.rest if settings.rest.enabled else None
    recovery = None
    if spy is not None and settings.public_rpc.endpoints:
        try:
            rpc_client = PublicRpcClient(settings.public_rpc)
        except EndpointConfigError as error:
            raise ConfigError(f"public_rpc.endpoints: {error}") from None
        recovery = MissedVaaRecovery(
            frozenset(settings.emitter_keys()),
            settings.recovery,
            rpc_client,
            state=RedisRecoveryState(tables) if settings.recovery.persist else None,
        )
    return Listener(
        intake,
        spy=spy,
        rest=rest,
        threads=settings.intake_threads,
        recovery=recovery,
        metric_readers=observed.otlp_metric_readers() if observed is not None else (),
    )


def run_listener(
    settings: RelayerSettings,
    *,
    redeem_check: AdapterFactory | None = None,
    on_started: Callable[[Listener], None] | None = None,
) -> None:
    """Run the listener until SIGINT or SIGTERM; ``on_started`` is told once it serves.

    Traces and metrics go where the ``OTEL_*`` environment says (nowhere by default);
    ``/metrics`` is served either way.
    """
    observed = telemetry.setup(LISTENER_SERVICE)
    listener = build_listener(settings, redeem_check, observed)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        await listener.start()
        if on_started is not None:
            on_started(listener)
        with contextlib.suppress(asyncio.CancelledError):
            await listener.run_forever()

    try:
        asyncio.run(main())
    finally:
        observed.shutdown()
