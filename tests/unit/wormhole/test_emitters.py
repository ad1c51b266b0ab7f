"""The shipped mainnet emitter tables, held against the research notes that cite their source.

``wormhole-known-emitters.md`` (in ``../shared/reference``, or ``$CHAINLOOM_REFERENCE``) lists
every token-bridge and NFT-bridge emitter of the Wormhole SDK's ``sdk/mainnet_consts.go``. Every
entry there must be in the package's tables with the same address, and the tables must hold
nothing else but the historical Terra classic bridge the notes mention. Like the vectors, the
test skips where the notes are absent and fails instead when ``CHAINLOOM_REQUIRE_VECTORS=1``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from chainloom.wormhole import (
    NFT_BRIDGE_EMITTERS,
    TOKEN_BRIDGE_EMITTERS,
    chain_name,
    mainnet_emitters,
)
from tests.conftest import REPO_ROOT

NOTES = "wormhole-known-emitters.md"
TERRA_CLASSIC = (3, bytes(12) + bytes.fromhex("7cf7b764e38a0a5e967972c1df77d432510564e2"))
"""The one entry not in the SDK's map: kept for historical VAAs, named in the notes."""

Table = dict[int, tuple[str, bytes]]


@pytest.fixture(scope="module")
def notes() -> str:
    configured = os.environ.get("CHAINLOOM_REFERENCE")
    directory = Path(configured) if configured else REPO_ROOT.parent / "shared" / "reference"
    path = directory / NOTES
    if not path.is_file():
        message = (
            f"reference notes not found at {path}; set CHAINLOOM_REFERENCE to the directory "
            f"holding {NOTES}"
        )
        if os.environ.get("CHAINLOOM_REQUIRE_VECTORS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path.read_text()


def _section(notes: str, heading: str) -> Table:
    """The ``| chain id | chain | emitter |`` rows under ``## heading``."""
    body = notes.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows: Table = {}
    for match in re.finditer(r"^\| (\d+) \| ([^|]+?) \| ([0-9a-fA-F]{64}) \|$", body, re.M):
        rows[int(match[1])] = (match[2], bytes.fromhex(match[3]))
    return rows


@pytest.mark.parametrize(
    ("heading", "shipped", "extra"),
    [
        ("Token bridge", TOKEN_BRIDGE_EMITTERS, {TERRA_CLASSIC}),
        ("NFT bridge", NFT_BRIDGE_EMITTERS, set()),
    ],
)
def test_the_mainnet_tables_match_the_reference_entry_for_entry(
    notes: str, heading: str, shipped: dict[int, bytes], extra: set[tuple[int, bytes]]
) -> None:
    reference = _section(notes, heading)
    assert len(reference) >= 12, f"could not read the {heading} table of {NOTES}"
    for chain, (name, emitter) in reference.items():
        assert shipped.get(chain) == emitter, f"{heading} on {chain} ({name})"
        # The notes write names for people ("XRPL-EVM", "BSC"); ours are one lower-case word.
        assert chain_name(chain) == re.sub(r"[^a-z0-9]", "", name.lower()), chain
    assert set(shipped.items()) - {(c, e) for c, (_, e) in reference.items()} == extra


def test_the_historical_terra_bridge_is_the_one_the_notes_name(notes: str) -> None:
    historical = notes.split("Historical:", 1)[1].split("\n\n", 1)[0]
    assert "Terra classic (3)" in historical
    assert TERRA_CLASSIC[1].hex()[-40:] in historical


def test_every_mainnet_token_bridge_is_trusted_and_shared_addresses_stay_per_chain() -> None:
    known = mainnet_emitters()
    assert len(TOKEN_BRIDGE_EMITTERS) > 30
    for chain in (21, 23, 24, 30, 14, 16, 13, 8, 15, 19, 32, 34, 35, 38, 3104):
        assert (chain, TOKEN_BRIDGE_EMITTERS[chain]) in known.token_bridge, chain
    shared = TOKEN_BRIDGE_EMITTERS[39]
    assert [c for c, e in TOKEN_BRIDGE_EMITTERS.items() if e == shared] == [39, 40, 44, 46]
    assert (2, shared) not in known.token_bridge
    assert (4, TOKEN_BRIDGE_EMITTERS[5]) in known.nft_bridge
    assert (4, TOKEN_BRIDGE_EMITTERS[5]) not in known.token_bridge
