"""The relayer's tables in Redis as :class:`~chainloom.eventstore.redemptions.Redemptions`.

Read only: one ``HGET`` of the target chain's Completed log, then (when not there) the request's
location and state. Apart from :mod:`chainloom.eventstore.redemptions` so the pure document
code never imports a client.
"""

from __future__ import annotations

import redis

from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.errors import StoreConfigError
from chainloom.eventstore.redemptions import Redemption, from_relay
from chainloom.relayer.model import Table
from chainloom.relayer.tables import RelayTables


class RelayRedemptions:
    """:class:`Redemptions` read from the relayer's tables in Redis (read only)."""

    def __init__(self, tables: RelayTables) -> None:
        self.tables = tables

    def lookup(self, digest: str, target_chain: int) -> Redemption | None:
        """Raises :class:`~chainloom.relayer.errors.TablesUnavailableError` when Redis fails."""
        completed = self.tables.completed_entry(target_chain, digest)
        if completed is not None:
            return from_relay(Table.COMPLETED, None, completed)
        table = self.tables.locate(digest)
        if table is None or table is Table.COMPLETED:
            return None
        return from_relay(table, self.tables.get(digest), None)


def redemptions_from(settings: EventsApiSettings) -> RelayRedemptions | None:
    """The relay tables ``api.relay_redis`` names, or None when it is unset (no connection is
    made here). Raises StoreConfigError for a URL the client refuses."""
    if settings.relay_redis is None:
        return None
    try:
        client = redis.Redis.from_url(settings.relay_redis.url.get_secret_value())
    except ValueError as error:
        raise StoreConfigError(
            f"api.relay_redis.url {settings.relay_redis.redacted_url}: {error}"
        ) from None
    return RelayRedemptions(RelayTables(client, settings.relay_redis.key_prefix))
