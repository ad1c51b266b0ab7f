"""The indexer's settings: where the spy and the store are, and every bound of the pipeline.

Why each bound is a setting: the indexer's memory and latency are decided by a handful of
numbers (buffer sizes, batch size and age, the dedupe window) that an operator sizes for a
mainnet spy's burst and a pod's memory limit; ``docs/indexer.md`` explains how. The model is
loaded by :func:`chainloom.settings.load_settings` (defaults < YAML file < ``CHAINLOOM_``
environment < CLI flags); ``docs/configuration.md`` lists every field.

A file (``--config`` or ``$CHAINLOOM_INDEXER_CONFIG``) is YAML::

    bigtable: {project: my-project, instance: wormhole, table: wormhole-events}
    guardian_sets: {source: mainnet}
    spy:
      address: spy.wormhole.svc:7073
      emitters: [{chain: ethereum, address: "0x3ee18b2214aff97000d974cf647e7c347e8fa585"}]
      buffer: 10000
      overflow: block
    buffer: 10000            # verified VAAs waiting for their write
    batch: {rows: 200, latency: 0.2}
    dedupe_window: 100000
    drain_timeout: 20
    probes: {host: 0.0.0.0, port: 4301}
    public_rpc: {endpoints: ["https://api.wormholescan.io"], timeout: 5}   # missed VAAs
    gaps: {grace: 30, check_interval: 5, retry_after: 60}
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from chainloom.settings import (
    BackoffSettings,
    BigtableSettings,
    GuardianSetSettings,
    PublicRpcSettings,
    RedisSettings,
    ServiceSettings,
)
from chainloom.settings.emitters import EmitterSettings
from chainloom.settings.gaps import GapRecoverySettings
from chainloom.settings.parts import Part


class SpyReconnectSettings(BackoffSettings):
    """Waits before reconnecting to the spy (reset once a stream delivers)."""

    initial: float = Field(default=0.1, gt=0, description="Seconds of the first wait.")
    maximum: float = Field(default=10.0, gt=0, description="Upper bound of any wait, seconds.")


class StoreRetrySettings(BackoffSettings):
    """Waits between writes of a batch while the store is unavailable."""

    initial: float = Field(default=0.5, ge=0, description="Seconds of the first wait.")
    maximum: float = Field(default=30.0, ge=0, description="Upper bound of any wait, seconds.")
    jitter: float = Field(
        default=0.2, ge=0, le=1, description="Fraction of each wait that is random (0..1)."
    )


class IndexerSpySettings(Part):
    """The guardian spy the indexer subscribes to."""

    address: str = Field(
        default="127.0.0.1:7073",
        pattern=r"^[^:]+:\d+$",
        description="host:port of a guardian spy (or `chainloom-dev spy serve`).",
    )
    emitters: tuple[EmitterSettings, ...] = Field(
        default=(),
        description="Emitters to subscribe to ({chain, address}); empty: every VAA the spy sees.",
    )
    buffer: int = Field(
        default=10_000,
        ge=1,
        le=10_000_000,
        description="VAAs the spy client holds between the stream and the indexer.",
    )
    overflow: Literal["block", "drop"] = Field(
        default="block",
        description="When that buffer is full: block (push back on the stream; a real spy cuts "
        "a consumer blocked 5 s and the client reconnects) or drop (and count).",
    )
    reconnect: SpyReconnectSettings = Field(
        default_factory=SpyReconnectSettings,
        description="Wait before each reconnection to the spy (reset once a stream delivers).",
    )


class BatchSettings(Part):
    """How VAAs are grouped into writes: whichever bound is reached first sends a batch."""

    rows: int = Field(
        default=200,
        ge=1,
        le=10_000,
        description="Most VAAs per write (one ReadRows + one MutateRows each).",
    )
    latency: float = Field(
        default=0.2,
        gt=0,
        le=60,
        description="Seconds the oldest waiting VAA may wait before a partial batch is written.",
    )


class ProbeSettings(Part):
    """The HTTP endpoint of ``/healthz``, ``/readyz`` and ``/metrics``."""

    enabled: bool = Field(default=True, description="Serve the probes (false: none).")
    host: str = Field(default="127.0.0.1", min_length=1, description="Interface to bind.")
    port: int = Field(default=4301, ge=0, le=65535, description="TCP port (0 picks a free one).")


class GapSettings(GapRecoverySettings):
    """Gap detection: per emitter, the sequences never seen, fetched once overdue (the shared
    recovery settings, plus the indexer's switch and the saving of its gap state). Gaps given
    up past max_gaps are counted in chainloom_indexer_gaps_given_up_total."""

    enabled: bool = Field(
        default=True,
        description="Track sequences and keep the open gaps in the index table's gaps: rows "
        "(false: neither; nothing is fetched either).",
    )
    state_interval: float = Field(
        default=5.0,
        gt=0,
        description="Seconds between saves of the changed emitters' gap state (and once at "
        "shutdown).",
    )


class IndexerSettings(ServiceSettings):
    """Everything ``chainloom indexer run`` needs."""

    config_file_env: ClassVar[str] = "CHAINLOOM_INDEXER_CONFIG"

    bigtable: BigtableSettings = Field(
        default_factory=BigtableSettings, description="The events and index tables."
    )
    guardian_sets: GuardianSetSettings = Field(
        default_factory=GuardianSetSettings,
        description="Guardian sets the VAAs are verified against before they are stored.",
    )
    spy: IndexerSpySettings = Field(
        default_factory=IndexerSpySettings, description="The spy subscription."
    )
    buffer: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Verified VAAs held until their write returns; when full, reading from the "
        "spy stops (back-pressure) until a write frees room.",
    )
    batch: BatchSettings = Field(default_factory=BatchSettings, description="Write batches.")
    dedupe_window: int = Field(
        default=100_000,
        ge=1,
        le=10_000_000,
        description="Digests of recent VAAs remembered to drop identical copies (about 100 bytes "
        "each); a copy arriving after its digest left the window is written again, harmlessly.",
    )
    signature_cache: int = Field(
        default=100_000,
        ge=1,
        le=10_000_000,
        description="Recovered guardian signatures cached, so copies with other signature subsets "
        "verify without recovering again.",
    )
    write_deadline: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one write of a batch may retry inside the event writer before the "
        "store is reported unavailable (the batch stays buffered and is retried).",
    )
    store_retry: StoreRetrySettings = Field(
        default_factory=StoreRetrySettings,
        description="Wait between writes of a batch while the store is unavailable.",
    )
    store_check_interval: float = Field(
        default=5.0,
        gt=0,
        description="Seconds without a successful write after which /readyz asks the store "
        "again (a light read).",
    )
    drain_timeout: float = Field(
        default=20.0,
        ge=0,
        description="Seconds SIGTERM waits for the buffer to be written before giving up (exit "
        "4); keep it below the pod's terminationGracePeriodSeconds.",
    )
    probes: ProbeSettings = Field(
        default_factory=ProbeSettings, description="/healthz, /readyz and /metrics."
    )
    feed_redis: RedisSettings | None = Field(
        default=None,
        description="Redis to announce newly stored VAAs on (channel KEY_PREFIX:eventstore:vaas), "
        "the events API's api.feed_redis, so its streams hear of them at once; null: none (the "
        "streams poll the store).",
    )
    gaps: GapSettings = Field(
        default_factory=GapSettings, description="Gap detection and missed-VAA recovery."
    )
    public_rpc: PublicRpcSettings = Field(
        default_factory=PublicRpcSettings,
        description="Guardian public-API endpoints overdue gaps are fetched from (none: gaps "
        "are tracked and listed, not fetched).",
    )
