"""A RelayerPool's queue depths and wallet balances, read from its Redis with the relay tables'
own adapters, for its status only (the workers publish the balances: docs/relayer.md).

Kept apart from :mod:`chainloom_operator._backends` so an operator that only runs relayer pools
never loads the Bigtable and Cassandra clients (tens of MB of RSS).
"""

from __future__ import annotations

import redis

from chainloom.relayer.balances import BalanceBoard
from chainloom.relayer.errors import RelayerError
from chainloom.relayer.tables import RelayTables
from chainloom_operator.models import RelayerPoolSpec

QUEUE_TIMEOUT = 1.0
"""Seconds a queue-depth read may take (it is only for the status)."""


PoolReadings = tuple[dict[str, int], dict[tuple[int, str], int]]
"""Requests per relay table, and wei per ``(chain, wallet address)``."""


def pool_readings(spec: RelayerPoolSpec) -> PoolReadings | None:
    """Requests per relay table (summed over chains) and the balances the workers published,
    or None when Redis cannot be read.

    Only for a pool whose Redis URL is in the spec and needs no password or TLS file: Secrets
    are for the pods alone (the operator never reads them).
    """
    ref = spec.redis
    if ref.url is None or ref.password_ref is not None or ref.tls is not None:
        return None
    client = redis.Redis.from_url(
        ref.url, socket_timeout=QUEUE_TIMEOUT, socket_connect_timeout=QUEUE_TIMEOUT
    )
    try:
        tables = RelayTables(client, spec.redis.key_prefix)
        depths = tables.depths()
        balances = {(b.chain, b.address): b.wei for b in BalanceBoard(tables).read()}
    except RelayerError:
        return None
    finally:
        client.close()
    return {table.value: sum(per_chain.values()) for table, per_chain in depths.items()}, balances


def queue_depths(spec: RelayerPoolSpec) -> dict[str, int] | None:
    """Requests per relay table (summed over chains), or None when Redis cannot be read."""
    readings = pool_readings(spec)
    return None if readings is None else readings[0]
