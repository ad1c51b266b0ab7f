"""The operator's own settings (``chainloom operator run``), a service model like the others.

Loaded by :func:`chainloom.settings.load_settings`: defaults < YAML file (``--config`` or
``$CHAINLOOM_OPERATOR_CONFIG``) < ``CHAINLOOM_...`` environment < flags. In the chart these come
from the Deployment's arguments.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from chainloom.settings import BackoffSettings, ServiceSettings


class ReconcileBackoffSettings(BackoffSettings):
    """Waits between the attempts of a failing reconcile."""

    initial: float = Field(default=2.0, ge=0, description="Seconds of the first wait.")
    maximum: float = Field(default=300.0, ge=0, description="Upper bound of any wait, seconds.")
    jitter: float = Field(
        default=0.2, ge=0, le=1, description="Fraction of each wait that is random (0..1)."
    )


class OperatorSettings(ServiceSettings):
    """How the operator runs: what it watches, how it retries, how it shares the work."""

    config_file_env: ClassVar[str] = "CHAINLOOM_OPERATOR_CONFIG"

    namespaces: tuple[str, ...] = Field(
        default=(), description="Namespaces to watch (globs allowed); empty: the whole cluster."
    )
    peering: str | None = Field(
        default=None,
        description="Name of the ClusterKopfPeering (KopfPeering with namespaces) the replicas "
        "share, so only the highest-priority one acts; null: standalone (one replica).",
    )
    priority: int | None = Field(
        default=None,
        description="This replica's peering priority (the highest acts; equal ones freeze "
        "each other); null: a random one at start, so replicas differ.",
    )
    liveness: str | None = Field(
        default="http://0.0.0.0:8080/healthz",
        description="Liveness endpoint URL (kopf's probe server); null: none.",
    )
    metrics: str | None = Field(
        default=None,
        pattern=r"^[^\s/]*:[0-9]{1,5}$",
        description="host:port of the Prometheus /metrics endpoint (port 0 picks one); null: none.",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="OTLP/HTTP endpoint of a collector (http://otel-collector:4318) the "
        "relayer and indexer pods and the Spark drivers the operator renders export traces "
        "and metrics to (OTEL_EXPORTER_OTLP_ENDPOINT); null: their telemetry stays off.",
    )
    retries: int = Field(
        default=8,
        ge=1,
        description="Attempts of a failing reconcile before it gives up (until the next spec "
        "change or operator start).",
    )
    backoff: ReconcileBackoffSettings = Field(
        default_factory=ReconcileBackoffSettings,
        description="Waits between the attempts of a failing reconcile.",
    )
    recheck_interval: float = Field(
        default=300.0,
        gt=0,
        description="Seconds between two checks of every BackendTable's schema (drift) and "
        "reads of every RelayerPool's queue depths.",
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds an API request may take."
    )
