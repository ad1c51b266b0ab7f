"""Helpers shared by the CLI's command groups (public within ``chainloom.cli``, not beyond).

Light on purpose: the wormhole library is imported inside the functions that need it, so a
group importing this module at load time stays cheap to register.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from chainloom.wormhole import GuardianSets, KnownEmitters

PREVIEW_CHARS = 24
"""How much of a bad input an error message quotes before cutting it with ``...``."""


def each_input(values: tuple[str, ...], stdin: TextIO) -> Iterator[tuple[str, str]]:
    """(label, text) for each input: arguments, or lines of stdin for ``-`` / none.

    Labels count inputs from 1 across arguments and stdin lines alike (``input 3``); blank
    stdin lines are skipped and the others stripped.
    """
    if not values:
        values = ("-",)
    position = 0
    for value in values:
        if value == "-":
            for line in stdin:
                if line.strip():
                    position += 1
                    yield f"input {position}", line.strip()
        else:
            position += 1
            yield f"input {position}", value


def preview(text: str) -> str:
    """``text`` cut to :data:`PREVIEW_CHARS` characters (plus ``...``), to name an input."""
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."


def load_guardian_sets(spec: str) -> GuardianSets:
    """The guardian sets a ``--guardian-set`` value names.

    ``mainnet`` and ``devnet`` are the bundled sets, ``dev`` / ``dev:N`` the test kit's N
    guardians (19 by default), anything else a guardian-set file. Raises what the wormhole
    library raises for a bad file, and :class:`ValueError` for a bad ``N``.
    """
    from chainloom.testing.dev_guardians import DevGuardians
    from chainloom.wormhole import GuardianSets

    if spec == "mainnet":
        return GuardianSets.mainnet()
    if spec == "devnet":
        return GuardianSets.devnet()
    if spec == "dev" or spec.startswith("dev:"):
        count = int(spec[4:]) if spec.startswith("dev:") else 19
        return DevGuardians(count=count).sets(0)
    return GuardianSets.from_file(spec)


def known_emitters() -> KnownEmitters:
    """The emitters the CLI recognises: devnet's, mainnet's bridges and the dev kit's."""
    from chainloom.wormhole import CHAINS, devnet_emitters, mainnet_emitters

    mainnet = mainnet_emitters()
    return (
        devnet_emitters()
        .with_extra(token_bridge=mainnet.token_bridge, nft_bridge=mainnet.nft_bridge)
        .with_dev_emitters(c for c in CHAINS if c)
    )
