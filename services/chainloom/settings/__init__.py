"""Typed settings shared by the CLI, the services, the operator and the Spark jobs.

One model per service (``RelayerSettings`` in :mod:`chainloom.relayer.config`,
``EventStoreSettings`` in :mod:`chainloom.eventstore.config`, ``LedgerSettings`` in
:mod:`chainloom.ledger.config`) built from the shared parts in :mod:`chainloom.settings.parts`,
and one loader (:func:`load_settings`) that reads them in a fixed precedence: defaults < YAML
file < ``CHAINLOOM_`` environment < CLI flags. ``docs/configuration.md`` lists every field.
"""

from __future__ import annotations

from chainloom.settings.errors import SettingsError, UnknownModelError
from chainloom.settings.loader import ENV_PREFIX, ServiceSettings, load_settings
from chainloom.settings.parts import (
    BackoffSettings,
    BigtableSettings,
    CassandraSettings,
    GuardianSetSettings,
    PublicRpcSettings,
    RedisSettings,
    TelemetrySettings,
)
from chainloom.urls import redact_url

__all__ = [
    "ENV_PREFIX",
    "BackoffSettings",
    "BigtableSettings",
    "CassandraSettings",
    "GuardianSetSettings",
    "PublicRpcSettings",
    "RedisSettings",
    "ServiceSettings",
    "SettingsError",
    "TelemetrySettings",
    "UnknownModelError",
    "load_settings",
    "redact_url",
]
