"""``api``: where ``chainloom events api`` listens and how much one request may ask for.

A part of :class:`~chainloom.eventstore.config.EventStoreSettings` (the API reads the same
tables as every ``chainloom events`` command), so the file, the environment
(``CHAINLOOM_API__PORT``) and the flags set it like any other setting.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from chainloom.settings.parts import Part, RedisSettings


class EventsApiSettings(Part):
    """The events REST API (``chainloom events api``, docs/events-api.md)."""

    host: str = Field(default="127.0.0.1", min_length=1, description="Interface to bind.")
    port: int = Field(default=4401, ge=0, le=65535, description="TCP port (0 picks a free one).")
    default_page_size: int = Field(
        default=50, ge=1, description="VAAs in a list page when pageSize is not given."
    )
    max_page_size: int = Field(
        default=1000, ge=1, le=10_000, description="Largest pageSize accepted; more is a 400."
    )
    max_stats_days: int = Field(
        default=366,
        ge=1,
        le=3660,
        description="Most UTC days one /api/v1/stats/daily request may span; more is a 400.",
    )
    workers: int = Field(
        default=16,
        ge=1,
        le=256,
        description="Threads making store calls (requests served at once).",
    )
    max_pending: int = Field(
        default=256,
        ge=1,
        description="Requests running or waiting for a thread before answering 503 (busy).",
    )
    cursor_key_file: Path | None = Field(
        default=None,
        description="File holding the key that signs list cursors (at least 16 bytes; e.g. a "
        "mounted Secret), the same for every replica; unset: a random key per process, so a "
        "cursor is refused by another replica or after a restart.",
    )
    request_deadline: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds within which every request is answered, waiting for a thread "
        "included: a read not done by then is answered 503 (keep bigtable.operation_timeout "
        "below it).",
    )
    probe_interval: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="Seconds between checks of the store while it is known down (requests are "
        "answered 503 at once meanwhile).",
    )
    header_timeout: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a request head; also the keep-alive timeout.",
    )

    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins whose browser pages may read the API (CORS): exact origins "
        "(https://explorer.example) or ['*'] for any; empty (the default) sends no CORS headers.",
    )
    gzip_min_bytes: int = Field(
        default=1024,
        ge=0,
        description="Answers at least this large are gzip-compressed for clients that accept it.",
    )
    vaa_max_age: int = Field(
        default=300,
        ge=0,
        le=31_536_000,
        description="Seconds a client or proxy may reuse a VAA-by-id answer that has its signed "
        "VAA without asking again (Cache-Control max-age, immutable).",
    )
    max_parse_bytes: int = Field(
        default=65_536,
        ge=1024,
        le=16 * 1024 * 1024,
        description="Largest body POST /api/v1/vaas/parse reads; a larger one is a 413.",
    )

    stream_buffer: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Events waiting to be sent to one stream client before it is dropped as "
        "too slow (GET /api/v1/vaas/stream).",
    )
    stream_send_timeout: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds one stream write may wait for a client that reads nothing before "
        "it is dropped.",
    )
    stream_poll_interval: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="Seconds between reads of the feed rows when no feed message woke the "
        "stream (the latency without Redis).",
    )
    stream_heartbeat: float = Field(
        default=15.0,
        gt=0,
        le=600,
        description="Seconds of silence after which a stream sends a comment line (keeps "
        "proxies from closing it).",
    )
    stream_max_clients: int = Field(
        default=1000,
        ge=1,
        description="Stream clients at once; one more is answered 503 (busy).",
    )
    feed_redis: RedisSettings | None = Field(
        default=None,
        description="Redis the writers publish newly stored VAAs on (channel "
        "KEY_PREFIX:eventstore:vaas), so the stream hears of them at once; unset: the stream "
        "polls the store every stream_poll_interval.",
    )
    relay_redis: RedisSettings | None = Field(
        default=None,
        description="The relayer's Redis (its tables, key_prefix as the relayer's, e.g. "
        "chainloom:relay:v1): the operations routes read a transfer's redemption from it; "
        "unset: the target side's status is unknown.",
    )

    @model_validator(mode="after")
    def _default_within_max(self) -> EventsApiSettings:
        if self.default_page_size > self.max_page_size:
            raise ValueError(
                f"default_page_size ({self.default_page_size}) exceeds max_page_size "
                f"({self.max_page_size})"
            )
        return self
