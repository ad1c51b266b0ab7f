"""The settings models by name, for ``chainloom config schema NAME`` and ``config show``.

Entries are import paths, resolved on use, so this package never imports the services that
build on it (nor the Spark jobs, an entry point of their own). Services register here as they
gain a model.
"""

from __future__ import annotations

import importlib

from pydantic import BaseModel

from chainloom.settings.errors import UnknownModelError

SERVICES: dict[str, str] = {
    "relayer": "chainloom.relayer.config:RelayerSettings",
    "eventstore": "chainloom.eventstore.config:EventStoreSettings",
    "ledger": "chainloom.ledger.config:LedgerSettings",
    "indexer": "chainloom.indexer.config:IndexerSettings",
    "spark": "chainloom_spark.settings:SparkJobSettings",
    "operator": "chainloom_operator.config:OperatorSettings",
}
"""Service name -> its settings model (a ServiceSettings, loadable from all four sources)."""

PARTS: dict[str, str] = {
    "redis": "chainloom.settings.parts:RedisSettings",
    "bigtable": "chainloom.settings.parts:BigtableSettings",
    "cassandra": "chainloom.settings.parts:CassandraSettings",
    "backoff": "chainloom.settings.parts:BackoffSettings",
    "guardian-sets": "chainloom.settings.parts:GuardianSetSettings",
    "public-rpc": "chainloom.settings.parts:PublicRpcSettings",
}
"""Shared part name -> its model."""


def model_named(name: str, *, services_only: bool = False) -> type[BaseModel]:
    """The model registered as ``name`` (a service, or unless ``services_only`` a part)."""
    table = SERVICES if services_only else SERVICES | PARTS
    target = table.get(name)
    if target is None:
        raise UnknownModelError(f"unknown settings model {name!r} (known: {', '.join(table)})")
    module_name, _, attribute = target.partition(":")
    model = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(model, type)
    assert issubclass(model, BaseModel)
    return model
