"""The small settings models that several services share.

Each service's model (``RelayerSettings``, ``EventStoreSettings``, ``LedgerSettings``) is built
from these parts, so a Redis URL, a Bigtable location or a backoff schedule has the same fields,
defaults and documentation wherever it appears, and the operator's CRD schemas (generated from
the JSON Schema of the models) describe them the same way too. Every field carries a
description: it is the documentation of the setting in ``docs/configuration.md`` and in the
CRDs. The models are frozen and refuse unknown keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from chainloom.backoff import Backoff
from chainloom.urls import check_redis_url, redact_url
from chainloom.wormhole import GuardianSets

REVEAL_SECRETS = "reveal_secrets"
"""Serialisation context key: when true, secrets are dumped in clear (never for display)."""


class Part(BaseModel):
    """Base of every settings model: frozen, and unknown keys are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TlsSettings(Part):
    """Client TLS to a store: which certificate authorities to trust, and an optional client
    certificate. Paths, never the keys or certificates themselves (mount them from a Secret)."""

    ca_file: str | None = Field(
        default=None,
        min_length=1,
        description="PEM file of the certificate authorities that sign the server's "
        "certificate; null: the system's trusted roots.",
    )
    cert_file: str | None = Field(
        default=None,
        min_length=1,
        description="PEM file of a client certificate, for servers that ask for one (mutual "
        "TLS); null: none.",
    )
    key_file: str | None = Field(
        default=None,
        min_length=1,
        description="PEM file of the client certificate's private key; null: the key is in "
        "cert_file.",
    )
    check_hostname: bool = Field(
        default=True,
        description="Check that the server's certificate names the host connected to (turn "
        "off only for a test server).",
    )

    @model_validator(mode="after")
    def _key_needs_certificate(self) -> TlsSettings:
        if self.key_file is not None and self.cert_file is None:
            raise ValueError("key_file is given without cert_file")
        return self


class CassandraTlsSettings(TlsSettings):
    """Client encryption to Cassandra (the server's ``client_encryption_options``)."""

    enabled: bool = Field(
        default=False, description="Connect with TLS (the server's client encryption on)."
    )


class RedisSettings(Part):
    """A Redis database and the key prefix of the tables kept in it."""

    url: SecretStr = Field(
        default=SecretStr("redis://127.0.0.1:6379/0"),
        description="Redis URL (redis:// or rediss://, with the database number); a password "
        "in it is treated as a secret and never shown.",
    )
    key_prefix: str = Field(
        default="chainloom",
        min_length=1,
        description="Prefix of every key the service keeps in this database (services that "
        "version their keys give their own default).",
    )

    username: str | None = Field(
        default=None,
        min_length=1,
        description="ACL user to log in as (Redis 6+); null: the user named in the URL, else "
        "'default'.",
    )
    password_file: str | None = Field(
        default=None,
        min_length=1,
        description="File holding the password (e.g. a mounted Secret; one trailing newline is "
        "ignored), read when connecting; null: the password in the URL, if any.",
    )
    tls: TlsSettings = Field(
        default_factory=TlsSettings,
        description="TLS of a rediss:// URL (whom to trust, a client certificate); unused "
        "with redis://.",
    )
    connect_timeout: float = Field(
        default=5.0, gt=0, description="Seconds a TCP connection to Redis may take to open."
    )
    timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a reply (and a TLS handshake) may take; past it Redis counts as "
        "unavailable.",
    )

    @field_validator("url")
    @classmethod
    def _usable_url(cls, url: SecretStr) -> SecretStr:
        check_redis_url(url.get_secret_value())
        return url

    @model_validator(mode="after")
    def _one_source_per_credential(self) -> RedisSettings:
        parts = urlsplit(self.url.get_secret_value())
        if self.password_file is not None and parts.password:
            raise ValueError("a password is given both in url and as password_file: keep one")
        if self.username is not None and parts.username:
            raise ValueError("a user is given both in url and as username: keep one")
        return self

    @property
    def uses_tls(self) -> bool:
        """Whether the URL asks for TLS (``rediss://``)."""
        return urlsplit(self.url.get_secret_value()).scheme == "rediss"

    @field_serializer("url")
    def _show_url(self, url: SecretStr, info: SerializationInfo) -> str:
        plain = url.get_secret_value()
        context = info.context or {}
        return plain if context.get(REVEAL_SECRETS) else redact_url(plain)

    @property
    def redacted_url(self) -> str:
        """The URL with its password masked, for messages."""
        return redact_url(self.url.get_secret_value())


class BigtableSettings(Part):
    """Where the Wormhole event tables live on Bigtable (or its emulator)."""

    project: str | None = Field(
        default=None,
        description="Google Cloud project; on the emulator (BIGTABLE_EMULATOR_HOST set) it "
        "defaults to 'chainloom'.",
    )
    instance: str | None = Field(
        default=None,
        description="Bigtable instance; on the emulator it defaults to 'local'.",
    )
    table: str = Field(default="wormhole-events", min_length=1, description="The events table.")
    index_table: str = Field(
        default="",
        description="The secondary-index table; empty means the events table's name + '-index'.",
    )
    operation_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Deadline in seconds of every Bigtable call (the client's own retries "
        "included) and of the event writer's retries of a batch; past it the store is "
        "unavailable (`chainloom events` exits 4).",
    )
    app_profile: str | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        pattern=r"^[_a-zA-Z0-9][-_.a-zA-Z0-9]*$",
        description="App profile of every data request (its routing to clusters and its "
        "isolation); null: the instance's default profile.",
    )
    credentials_file: str | None = Field(
        default=None,
        min_length=1,
        description="A service-account key (JSON, e.g. mounted from a Secret), checked when "
        "the tables are opened; null: Application Default Credentials (Workload Identity on "
        "GKE, GOOGLE_APPLICATION_CREDENTIALS, gcloud). Unused by the emulator.",
    )
    connect_timeout: float = Field(
        default=3.0,
        gt=0,
        description="Seconds a `chainloom events` command waits for a TCP connection to "
        "Bigtable (or the emulator) before it reports the store unreachable (exit 4), apart "
        "from operation_timeout, which bounds each call once connected.",
    )

    @model_validator(mode="before")
    @classmethod
    def _index_table_follows_table(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("index_table"):
            table = data.get("table", cls.model_fields["table"].default)
            return {**data, "index_table": f"{table}-index"}
        return data


ConsistencyLevel = Literal[
    "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"
]
"""Cassandra consistency levels accepted for reads and writes."""

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9_]*$")]

DATACENTER_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""What a datacenter name may hold (it is written into CQL as a quoted string)."""


class CassandraSettings(Part):
    """A Cassandra cluster and how to write to it (Clio's ``database.cassandra``)."""

    hosts: tuple[str, ...] = Field(
        default=("127.0.0.1",), min_length=1, description="Contact points (host names or IPs)."
    )
    port: int = Field(default=9042, ge=1, le=65535, description="Native-protocol port.")
    keyspace: Identifier = Field(
        default="chainloom_ledger",
        min_length=1,
        description="Keyspace holding the tables (created if missing): letters, digits, _.",
    )
    replication_factor: int = Field(
        default=3, ge=1, description="SimpleStrategy replication factor if the keyspace is created."
    )
    replication_strategy: Literal["SimpleStrategy", "NetworkTopologyStrategy"] = Field(
        default="SimpleStrategy",
        description="Replication of a keyspace created here: SimpleStrategy with "
        "replication_factor, or NetworkTopologyStrategy with datacenter_replication.",
    )
    datacenter_replication: dict[str, int] = Field(
        default_factory=dict,
        description="Replicas per datacenter ({dc1: 3, dc2: 3}) of a NetworkTopologyStrategy "
        "keyspace; the names are the cluster's datacenters (nodetool status).",
    )
    local_datacenter: str | None = Field(
        default=None,
        min_length=1,
        description="The datacenter this client is in: requests go to its nodes first "
        "(DC-aware load balancing, token-aware inside it); null: every node alike.",
    )
    username: str | None = Field(
        default=None,
        min_length=1,
        description="Role to log in as (PasswordAuthenticator); null: no authentication.",
    )
    password_file: str | None = Field(
        default=None,
        min_length=1,
        description="File holding the role's password (e.g. a mounted Secret; one trailing "
        "newline is ignored), read when connecting; required with username.",
    )
    tls: CassandraTlsSettings = Field(
        default_factory=CassandraTlsSettings,
        description="Client encryption (TLS) to the cluster.",
    )
    consistency: ConsistencyLevel = Field(
        default="QUORUM",
        description="Consistency of every read and write (the range LWT uses SERIAL on top).",
    )
    max_concurrent_writes: int = Field(
        default=512, ge=1, description="Asynchronous writes in flight at most."
    )
    table_prefix: Identifier = Field(
        default="", description="Prefix of every table name (Clio's table_prefix)."
    )
    protocol_version: int = Field(
        default=5, ge=3, description="Native protocol version (Cassandra 4+ speaks 5)."
    )
    request_timeout: float = Field(
        default=10.0, gt=0, description="Seconds before a single request times out (then retried)."
    )
    write_retries: int = Field(
        default=8, ge=0, description="Retries of a timed-out or unavailable write."
    )
    write_batch_size: int = Field(
        default=20, ge=1, description="Statements per UNLOGGED batch (1: each on its own)."
    )

    @model_validator(mode="before")
    @classmethod
    def _upper_case_consistency(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("consistency"), str):
            return {**data, "consistency": data["consistency"].upper()}
        return data

    @field_validator("datacenter_replication")
    @classmethod
    def _positive_factors(cls, factors: dict[str, int]) -> dict[str, int]:
        for name, factor in factors.items():
            if not DATACENTER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a datacenter name (letters, digits, _ . -)")
            if factor < 1:
                raise ValueError(f"{name}: {factor} replicas (at least 1)")
        return factors

    @model_validator(mode="after")
    def _consistent_security_and_replication(self) -> CassandraSettings:
        if (self.username is None) != (self.password_file is None):
            raise ValueError("username and password_file go together: give both or neither")
        if self.replication_strategy == "NetworkTopologyStrategy":
            if not self.datacenter_replication:
                raise ValueError(
                    "NetworkTopologyStrategy needs datacenter_replication ({dc: replicas})"
                )
        elif self.datacenter_replication:
            raise ValueError(
                "datacenter_replication is for NetworkTopologyStrategy "
                "(set replication_strategy, or use replication_factor)"
            )
        if not self.tls.enabled and self.tls != CassandraTlsSettings():
            raise ValueError("tls settings are given but tls.enabled is false")
        return self

    def replication(self) -> dict[str, str]:
        """The keyspace's ``replication`` map, as CQL takes it and ``system_schema`` shows it."""
        if self.replication_strategy == "NetworkTopologyStrategy":
            return {
                "class": "NetworkTopologyStrategy",
                **{dc: str(factor) for dc, factor in sorted(self.datacenter_replication.items())},
            }
        return {"class": "SimpleStrategy", "replication_factor": str(self.replication_factor)}


class BackoffSettings(Part):
    """An exponential backoff schedule with jitter (see ``chainloom.backoff``)."""

    initial: float = Field(default=1.0, ge=0, description="Seconds of the first wait.")
    maximum: float = Field(default=3600.0, ge=0, description="Upper bound of any wait, seconds.")
    multiplier: float = Field(default=2.0, ge=1, description="Growth of the wait per failure.")
    jitter: float = Field(
        default=0.5, ge=0, le=1, description="Fraction of each wait that is random (0..1)."
    )

    @model_validator(mode="after")
    def _initial_within_maximum(self) -> BackoffSettings:
        if self.initial > self.maximum:
            raise ValueError(f"initial ({self.initial}) must not exceed maximum ({self.maximum})")
        return self

    def schedule(self) -> Backoff:
        """The schedule as a :class:`chainloom.backoff.Backoff`."""
        return Backoff(
            initial=self.initial,
            maximum=self.maximum,
            multiplier=self.multiplier,
            jitter=self.jitter,
        )


class GuardianSetSettings(Part):
    """Which guardian sets signatures are verified against."""

    source: str = Field(
        default="mainnet",
        min_length=1,
        description="'mainnet' or 'devnet' (the bundled sets), or the path of a guardian-set file.",
    )

    @model_validator(mode="after")
    def _preset_or_file(self) -> GuardianSetSettings:
        if self.source not in ("mainnet", "devnet") and not Path(self.source).is_file():
            raise ValueError(f"must be mainnet, devnet or an existing file, got {self.source!r}")
        return self

    def load(self) -> GuardianSets:
        """The guardian-set registry named by ``source`` (raises the wormhole library's error)."""
        if self.source == "mainnet":
            return GuardianSets.mainnet()
        if self.source == "devnet":
            return GuardianSets.devnet()
        return GuardianSets.from_file(self.source)


class PublicRpcBackoffSettings(BackoffSettings):
    """The wait between rounds of asking the public API: seconds, not an outage's hours."""

    initial: float = Field(default=0.5, ge=0, description="Seconds of the first wait.")
    maximum: float = Field(default=5.0, ge=0, description="Upper bound of any wait, seconds.")


class PublicRpcSettings(Part):
    """Guardian public-API endpoints (``publicrpc.v1.PublicRPCService/GetSignedVAA``) that
    missed VAAs are fetched from (see ``chainloom.publicrpc``)."""

    endpoints: tuple[str, ...] = Field(
        default=(),
        description="gRPC endpoints, asked in this order: host:port (plaintext) or "
        "https://host[:port] (TLS with the system's roots).",
    )
    timeout: float = Field(default=5.0, gt=0, description="Seconds one call may take.")
    rounds: int = Field(
        default=3,
        ge=1,
        description="Times the endpoints that failed (not the ones that answered NotFound) "
        "are asked again for one message, with a backoff between rounds.",
    )
    backoff: PublicRpcBackoffSettings = Field(
        default_factory=PublicRpcBackoffSettings, description="The wait between rounds."
    )


class TelemetrySettings(Part):
    """How a service reports what it does, beside the ``OTEL_*`` variables (docs/observability.md).

    Traces and metrics are exported where the standard OpenTelemetry environment says
    (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``, ...): one
    name per setting, the one every OpenTelemetry SDK reads. Only what that standard does not
    cover is here.
    """

    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines as text (time, level, logger, message) or as JSON, one object "
        "per line with the trace and span ids of the event.",
    )
