"""The event store's settings: where the tables live and which guardian sets verify VAAs.

Loaded by :func:`chainloom.settings.load_settings` (defaults < YAML file <
``CHAINLOOM_BIGTABLE__...`` environment < CLI flags); ``docs/configuration.md`` lists them.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.settings import (
    BigtableSettings,
    GuardianSetSettings,
    PublicRpcSettings,
    ServiceSettings,
)


class EventStoreSettings(ServiceSettings):
    """Everything ``chainloom events`` (and the writers that fill the store) need."""

    config_file_env: ClassVar[str] = "CHAINLOOM_EVENTSTORE_CONFIG"

    bigtable: BigtableSettings = Field(
        default_factory=BigtableSettings, description="The events and index tables."
    )
    guardian_sets: GuardianSetSettings = Field(
        default_factory=GuardianSetSettings,
        description="Guardian sets the VAAs are verified against before they are stored.",
    )
    public_rpc: PublicRpcSettings = Field(
        default_factory=PublicRpcSettings,
        description="Guardian public-API endpoints `chainloom events backfill` fetches missing "
        "VAAs from (or --public-api).",
    )
    api: EventsApiSettings = Field(
        default_factory=EventsApiSettings,
        description="The REST API over the store (`chainloom events api`, docs/events-api.md).",
    )
