"""What the dev kit registers in the product's entry-point groups (:mod:`chainloom.extensions`):
the dev guardians as a guardian-set source and the simulated chains as chain adapters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.sim_chains import InProcessAdapter

if TYPE_CHECKING:
    import redis

    from chainloom.wormhole import GuardianSets


def dev_guardian_sets(count: int) -> GuardianSets:
    """Set 0 of ``count`` deterministic dev guardians (``--guardian-set dev:N``)."""
    return DevGuardians(count=count).sets(0)


def in_process_chain(client: redis.Redis, chain: int) -> InProcessAdapter:
    """An in-memory chain per worker process (``worker.adapter: inprocess``)."""
    del client
    return InProcessAdapter(chain)
