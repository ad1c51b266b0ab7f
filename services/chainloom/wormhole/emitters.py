"""Known token bridge and NFT bridge emitters (wormhole-foundation/wormhole
``sdk/mainnet_consts.go``).

The mainnet tables ship as data (``data/mainnet_emitters.json``, one entry per line, copied
from the Wormhole SDK's ``sdk/mainnet_consts.go`` at the commit the file names) so that adding a
chain is a one-line change a reviewer can hold against the source.

Classifying a payload needs the (chain, emitter) pair: the same address is the Polygon token
bridge and the BSC NFT bridge. The relayer also uses these tables to refuse transfers from
emitters it does not trust. Tests and the demo sign with the development kit, so the dev
emitters (the Tilt devnet addresses) are kept apart: a configuration opts into them with
:func:`devnet_emitters` or :meth:`KnownEmitters.with_extra`, mainnet code never trusts them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from chainloom.wormhole.chains import CHAINS

__all__ = [
    "DEVNET_NFT_BRIDGE_EMITTERS",
    "DEVNET_TOKEN_BRIDGE_EMITTERS",
    "DEV_NFT_BRIDGE_EMITTER",
    "DEV_TOKEN_BRIDGE_EMITTER",
    "GOVERNANCE_CHAIN",
    "GOVERNANCE_EMITTER",
    "NFT_BRIDGE_EMITTERS",
    "TOKEN_BRIDGE_EMITTERS",
    "KnownEmitters",
    "devnet_emitters",
    "mainnet_emitters",
]

GOVERNANCE_CHAIN = 1
"""Chain id of the governance emitter (Solana), on mainnet and devnet alike."""
GOVERNANCE_EMITTER = bytes(31) + b"\x04"
"""Address of the governance emitter: 31 zero bytes and 0x04."""


def _evm(address20_hex: str) -> bytes:
    return bytes(12) + bytes.fromhex(address20_hex)


_MAINNET: dict[str, Any] = json.loads(
    resources.files("chainloom.wormhole").joinpath("data", "mainnet_emitters.json").read_text()
)


def _mainnet_table(*sections: str) -> dict[int, bytes]:
    return {
        int(entry["chain"]): bytes.fromhex(entry["emitter"])
        for section in sections
        for entry in _MAINNET[section]
    }


# data/mainnet_emitters.json: the complete knownTokenbridgeEmitters and knownNFTBridgeEmitters
# of wormhole-foundation/wormhole sdk/mainnet_consts.go (the commit is named in the file), plus
# Terra classic's token bridge, which the SDK dropped but historical VAAs still carry.
TOKEN_BRIDGE_EMITTERS: dict[int, bytes] = _mainnet_table("token_bridge", "historical_token_bridge")
"""Mainnet token bridge emitter per chain (32-byte Wormhole form)."""
NFT_BRIDGE_EMITTERS: dict[int, bytes] = _mainnet_table("nft_bridge")
"""Mainnet NFT bridge emitter per chain (32-byte Wormhole form)."""

DEV_TOKEN_BRIDGE_EMITTER = _evm("0290fb167208af455bb137780163b7b7a9a10c16")
"""The Tilt devnet token bridge on its EVM chains; the dev kit emits transfers from it."""
DEV_NFT_BRIDGE_EMITTER = _evm("26b4afb60d6c903165150c6f0aa14f8016be4aec")
"""The Tilt devnet NFT bridge on its EVM chains; the dev kit emits NFT transfers from it."""

# scripts/devnet-consts.json: token bridge emitters of the Tilt devnet.
DEVNET_TOKEN_BRIDGE_EMITTERS: dict[int, bytes] = {
    1: bytes.fromhex("c69a1b1a65dd336bf1df6a77afb501fc25db7fc0938cb08595a9ef473265cb4f"),
    2: DEV_TOKEN_BRIDGE_EMITTER,
    4: DEV_TOKEN_BRIDGE_EMITTER,
    22: bytes(31) + b"\x01",
}
"""Devnet token bridge emitter per chain."""
DEVNET_NFT_BRIDGE_EMITTERS: dict[int, bytes] = {
    1: bytes.fromhex("96ee982293251b48729804c8e8b24b553eb6b887867024948d2236fd37a577ab"),
    2: DEV_NFT_BRIDGE_EMITTER,
    4: DEV_NFT_BRIDGE_EMITTER,
    22: bytes(31) + b"\x02",
}
"""Devnet NFT bridge emitter per chain."""


@dataclass(frozen=True, slots=True)
class KnownEmitters:
    """The (chain, emitter) pairs trusted as token and NFT bridges."""

    token_bridge: frozenset[tuple[int, bytes]]
    """Token bridge emitters as (Wormhole chain id, 32-byte address)."""
    nft_bridge: frozenset[tuple[int, bytes]]
    """NFT bridge emitters as (Wormhole chain id, 32-byte address)."""

    def with_extra(
        self,
        *,
        token_bridge: Iterable[tuple[int, bytes]] = (),
        nft_bridge: Iterable[tuple[int, bytes]] = (),
    ) -> KnownEmitters:
        """A copy that also trusts these emitters."""
        return KnownEmitters(
            token_bridge=self.token_bridge | frozenset(token_bridge),
            nft_bridge=self.nft_bridge | frozenset(nft_bridge),
        )

    def with_dev_emitters(self, chains: Iterable[int]) -> KnownEmitters:
        """A copy that also trusts the dev kit's token and NFT bridge emitters on ``chains``."""
        chain_list = list(chains)
        return self.with_extra(
            token_bridge=[(c, DEV_TOKEN_BRIDGE_EMITTER) for c in chain_list],
            nft_bridge=[(c, DEV_NFT_BRIDGE_EMITTER) for c in chain_list],
        )


@cache
def mainnet_emitters() -> KnownEmitters:
    """The mainnet token and NFT bridge emitters."""
    return KnownEmitters(
        token_bridge=frozenset(TOKEN_BRIDGE_EMITTERS.items()),
        nft_bridge=frozenset(NFT_BRIDGE_EMITTERS.items()),
    )


@cache
def devnet_emitters() -> KnownEmitters:
    """The Tilt devnet token and NFT bridge emitters."""
    return KnownEmitters(
        token_bridge=frozenset(DEVNET_TOKEN_BRIDGE_EMITTERS.items()),
        nft_bridge=frozenset(DEVNET_NFT_BRIDGE_EMITTERS.items()),
    )


@cache
def all_known_emitters() -> KnownEmitters:
    """Every bridge whose payloads the event store decodes: devnet's, mainnet's and the dev
    kit's on every chain. ``chainloom events put``, the indexer and the Spark jobs all use this
    one set, so every writer stores the same cells for the same VAA."""
    mainnet = mainnet_emitters()
    return (
        devnet_emitters()
        .with_extra(token_bridge=mainnet.token_bridge, nft_bridge=mainnet.nft_bridge)
        .with_dev_emitters(c for c in CHAINS if c)
    )
