"""The operator's own settings (``chainloom operator run``), a service model like the others.

Loaded by :func:`chainloom.settings.load_settings`: defaults < YAML file (``--config`` or
``$CHAINLOOM_OPERATOR_CONFIG``) < ``CHAINLOOM_...`` environment < flags. In the chart these come
from the Deployment's arguments.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from chainloom.settings import BackoffSettings, ServiceSettings


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
    retries: int = Field(
        default=8, ge=1, description="Attempts of a failing reconcile before it gives up."
    )
    backoff: BackoffSettings = Field(
        default_factory=lambda: BackoffSettings(initial=2.0, maximum=300.0, jitter=0.2),
        description="Waits between the attempts of a failing reconcile.",
    )
    recheck_interval: float = Field(
        default=300.0,
        gt=0,
        description="Seconds between two checks of every BackendTable's schema (drift).",
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds an API request may take."
    )
