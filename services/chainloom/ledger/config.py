"""The ledger history backend's settings (``database.*``).

Clio picks its database from ``database.type`` and reads the driver settings from
``database.<type>``; we keep that shape so a Clio operator recognises it. The models refuse an
unknown key or a value of the wrong type with the dotted name of the key, because a typo in
``replication_factor`` or ``consistency`` silently falling back to a default would only show up
as data loss later. Loaded by :func:`chainloom.settings.load_settings` (defaults < YAML file <
``CHAINLOOM_DATABASE__...`` environment < CLI flags); ``docs/configuration.md`` lists them.
Besides the database: ``forwarding`` (the rippled servers the API forwards to) and ``feed``
(the Redis channel from the ETL to the API's subscriptions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializationInfo,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from chainloom.ledger.errors import LedgerConfigError
from chainloom.settings import BackoffSettings, CassandraSettings, ServiceSettings
from chainloom.settings.loader import describe_validation_error
from chainloom.settings.parts import REVEAL_SECRETS, Part, RedisSettings
from chainloom.urls import check_server_url, redact_url

BACKEND_TYPES = ("cassandra", "sqlite")
"""The values ``database.type`` accepts."""


class SqliteSettings(Part):
    """``database.sqlite``: the embedded database file."""

    path: str = Field(
        default="chainloom-ledger.sqlite3",
        min_length=1,
        description="Path of the database file (created if missing; WAL mode).",
    )
    busy_timeout: float = Field(
        default=60.0,
        ge=0,
        description="Seconds a writer waits for another writer's transaction to end.",
    )


class DatabaseSettings(Part):
    """``database``: which backend and its settings."""

    type: Literal["cassandra", "sqlite"] = Field(
        default="sqlite", description="Which database: cassandra or sqlite."
    )
    cassandra: CassandraSettings = Field(
        default_factory=CassandraSettings, description="Used when type is cassandra."
    )
    sqlite: SqliteSettings = Field(
        default_factory=SqliteSettings, description="Used when type is sqlite."
    )
    read_only: bool = Field(
        default=False, description="Never create tables nor write (Clio's read_only)."
    )

    @model_validator(mode="before")
    @classmethod
    def _lower_case_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("type"), str):
            return {**data, "type": data["type"].lower()}
        return data

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> DatabaseSettings:
        """From ``{"database": {...}}`` or the ``database`` mapping itself (LedgerConfigError)."""
        try:
            if "database" in raw:
                return LedgerSettings.model_validate(raw).database
            return cls.model_validate(raw)
        except ValidationError as error:
            root = "" if "database" in raw else "database"
            raise LedgerConfigError(describe_validation_error(error, root)) from None


RIPPLED_SCHEMES = ("http", "https", "ws", "wss")
"""How the ledger API reaches a rippled: its JSON-RPC API (http, https) or its WebSocket API."""


class ForwardingBackoffSettings(BackoffSettings):
    """How long a rippled endpoint that failed is left out before it is asked again."""

    initial: float = Field(default=1.0, ge=0, description="Seconds after the first failure.")
    maximum: float = Field(
        default=30.0, ge=0, description="Upper bound of the wait, however long the outage."
    )


class ForwardingSettings(Part):
    """``forwarding``: the rippled servers that ``chainloom ledger api`` forwards the calls
    needing a live server to (``submit``, ``fee``, ``ledger_index: "current"``, ...), as Clio
    forwards to its ``etl_sources`` (``docs/ledger-api.md``)."""

    rippled: tuple[str, ...] = Field(
        default=(),
        description="rippled URLs, asked in this order: its JSON-RPC API (http:// or "
        "https://, a port with protocol http/https) or its WebSocket API (ws:// or wss://); a "
        "user:password in one is a secret, never shown. Empty: nothing is forwarded and the "
        "methods only rippled answers give notEnabled.",
    )
    request_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one endpoint may take to answer a forwarded call (connecting "
        "included); past it the next endpoint is asked (Clio's forwarding.request_timeout).",
    )
    backoff: ForwardingBackoffSettings = Field(
        default_factory=ForwardingBackoffSettings,
        description="How long an endpoint that failed is skipped (it grows while it keeps "
        "failing, and resets when it answers).",
    )

    @field_validator("rippled")
    @classmethod
    def _usable_urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for url in urls:
            check_server_url(url, RIPPLED_SCHEMES)
        return urls

    @field_serializer("rippled")
    def _show_urls(self, urls: tuple[str, ...], info: SerializationInfo) -> list[str]:
        context = info.context or {}
        return list(urls) if context.get(REVEAL_SECRETS) else [redact_url(url) for url in urls]


class LedgerFeedSettings(Part):
    """``feed``: the Redis pub/sub channel on which ``chainloom ledger load`` announces the
    ledgers it commits and ``chainloom ledger api`` hears of them for its subscriptions, when
    they run in different processes (``docs/ledger-api.md``, Subscriptions)."""

    redis: RedisSettings | None = Field(
        default=None,
        description="Redis carrying the announcements (TLS, ACL user and password file as for "
        "any Redis); null: no feed, the API notices new ledgers by its once-a-second range "
        "refresh.",
    )
    channel: str | None = Field(
        default=None,
        min_length=1,
        description="Pub/sub channel of the announcements (channels are global to a Redis "
        "server); null: KEY_PREFIX:ledger:committed, with feed.redis.key_prefix.",
    )

    @property
    def channel_name(self) -> str:
        """The channel in use: ``channel``, else the one of ``redis.key_prefix``."""
        if self.channel is not None:
            return self.channel
        prefix = self.redis.key_prefix if self.redis is not None else RedisSettings().key_prefix
        return f"{prefix}:ledger:committed"


class LedgerSettings(ServiceSettings):
    """Everything the ledger ETL and its readers need."""

    config_file_env: ClassVar[str] = "CHAINLOOM_LEDGER_CONFIG"

    database: DatabaseSettings = Field(
        default_factory=DatabaseSettings, description="The history backend."
    )
    forwarding: ForwardingSettings = Field(
        default_factory=ForwardingSettings,
        description="Where the ledger API forwards what needs a live rippled.",
    )
    feed: LedgerFeedSettings = Field(
        default_factory=LedgerFeedSettings,
        description="The committed-ledger feed from the ETL to the ledger API's subscriptions.",
    )
