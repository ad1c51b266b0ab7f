"""Named parts another installed package adds to chainloom, found through entry points.

The dev kit (``chainloom-dev``, never in the product's wheel) adds the test guardians behind
``--guardian-set dev[:N]`` and the simulated chains behind ``worker.adapter`` /
``redeem_check`` values ``inprocess`` and ``redis-sim``. Looking them up by entry point keeps
the direction of imports one way: the product names the group, the dev kit registers in it,
and without the dev kit the value is refused with one line saying where it comes from.

Groups:

* ``chainloom.guardian_sets``: ``name -> callable(count: int) -> GuardianSets``;
* ``chainloom.chain_adapters``: ``name -> callable(redis_client, chain_id) -> ChainAdapter``.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from chainloom.errors import ChainloomError

GUARDIAN_SETS = "chainloom.guardian_sets"
"""Entry-point group of guardian-set sources (the dev kit's ``dev``)."""
CHAIN_ADAPTERS = "chainloom.chain_adapters"
"""Entry-point group of chain adapter factories (the dev kit's simulated chains)."""


class ExtensionMissingError(ChainloomError):
    """A value names a part that no installed package provides (e.g. the dev kit's)."""


def load(group: str, name: str, *, what: str) -> Any:
    """The object registered as ``name`` in ``group``; ``what`` names the setting in the error."""
    found = entry_points(group=group, name=name)
    for entry in found:
        return entry.load()
    raise ExtensionMissingError(
        f"{what} {name!r} is provided by the dev kit (chainloom-dev), which is not installed: "
        "install it with scripts/setup from a chainloom checkout"
    )
