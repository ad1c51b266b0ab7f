"""Where missed-VAA recovery keeps its state between runs: one Redis hash beside the relay tables.

Why: recovery knows what the spy dropped only from the sequences it has seen. Kept in memory, a
restarted listener started each emitter's track again at the first sequence it heard, and what
was published while it was down was never fetched. Kept here, each emitter's last seen sequence
and open gaps survive the restart: the first sequence heard after it opens the gap from the
stored one on, and only those sequences are asked of the public API.

Layout (``P`` is the relay tables' ``{<prefix>}``)::

    P:recovery              hash    "<chain>/<emitter hex>" -> GapBook.emitter_json() as JSON

The state is small (a tracker is its lowest, highest and holes) and written only for emitters
that changed, once per recovery round and at stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import orjson
import redis

from chainloom.relayer._redis import sync, text
from chainloom.relayer.errors import TablesUnavailableError
from chainloom.relayer.tables import RelayTables


class RecoveryStateStore(Protocol):
    """Loads and saves the per-emitter state of missed-VAA recovery."""

    def load(self) -> list[dict[str, Any]]:
        """Every emitter's saved state (TablesUnavailableError when the store is down)."""
        ...

    def save(self, states: Sequence[dict[str, Any]]) -> None:
        """Replace the saved state of the emitters in ``states`` (TablesUnavailableError)."""
        ...


class RedisRecoveryState:
    """The recovery state in the relay tables' Redis (see the module docstring)."""

    def __init__(self, tables: RelayTables) -> None:
        self.client = tables.client
        self.key = tables.key("recovery")
        """The hash holding every emitter's state."""
        self._address = tables.address

    def load(self) -> list[dict[str, Any]]:
        try:
            raw = sync(self.client.hgetall(self.key))
        except redis.RedisError as error:
            raise TablesUnavailableError(f"Redis at {self._address} failed: {error}") from None
        states = []
        for field_name, value in raw.items():
            try:
                state = orjson.loads(value)
            except orjson.JSONDecodeError:
                state = None
            if not isinstance(state, dict):
                raise ValueError(f"{self.key} field {text(field_name)}: not a recovery state")
            states.append(state)
        return states

    def save(self, states: Sequence[dict[str, Any]]) -> None:
        if not states:
            return
        mapping = {f"{s['chain']}/{s['emitter']}": orjson.dumps(s) for s in states}
        try:
            sync(self.client.hset(self.key, mapping=mapping))
        except redis.RedisError as error:
            raise TablesUnavailableError(f"Redis at {self._address} failed: {error}") from None
