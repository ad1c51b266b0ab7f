"""Opening the event store from its settings: the one way every entry point reaches it.

The CLI (``chainloom events``, ``chainloom-dev spy serve --from-events``), the operator's pods and
the Spark jobs call :func:`open_store` (or :func:`locate` for administration), so the emulator
defaults and the "project not set" error are the same everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from chainloom.eventstore.bigtable import EMULATOR_ENV, BigtableTables
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.errors import StoreConfigError
from chainloom.settings import BigtableSettings

__all__ = ["EMULATOR_ENV", "locate", "open_store"]

EMULATOR_PROJECT = "chainloom"
"""Project used on the emulator when none is configured (the emulator accepts any)."""
EMULATOR_INSTANCE = "local"
"""Instance used on the emulator when none is configured."""


def locate(
    settings: EventStoreSettings, environ: Mapping[str, str] | None = None
) -> BigtableSettings:
    """The Bigtable location with project and instance filled in (emulator defaults).

    Raises StoreConfigError naming the settings when project or instance is missing outside
    the emulator.
    """
    env = os.environ if environ is None else environ
    location = settings.bigtable
    if env.get(EMULATOR_ENV):
        location = location.model_copy(
            update={
                "project": location.project or EMULATOR_PROJECT,
                "instance": location.instance or EMULATOR_INSTANCE,
            }
        )
    missing = [name for name in ("project", "instance") if not getattr(location, name)]
    if missing:
        raise StoreConfigError(
            f"Bigtable {' and '.join(missing)} not set: set bigtable.{missing[0]} (--{missing[0]}, "
            f"CHAINLOOM_BIGTABLE__{missing[0].upper()} or the settings file), or "
            f"{EMULATOR_ENV} for the emulator"
        )
    return location


def open_store(settings: EventStoreSettings) -> BigtableTables:
    """The events and index tables, through the data client (close it, or use ``with``)."""
    return BigtableTables(locate(settings))
