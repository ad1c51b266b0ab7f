"""Known token bridge and NFT bridge emitters (wormhole-foundation/wormhole
``sdk/mainnet_consts.go``).

Classifying a payload needs the (chain, emitter) pair: the same address is the Polygon token
bridge and the BSC NFT bridge. The relayer also uses these tables to refuse transfers from
emitters it does not trust. Tests and the demo sign with the development kit, so the dev
emitters (the Tilt devnet addresses) are kept apart: a configuration opts into them with
:func:`devnet_emitters` or :meth:`KnownEmitters.with_extra`, mainnet code never trusts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

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


# sdk/mainnet_consts.go knownTokenbridgeEmitters; Terra from event_database's list.
TOKEN_BRIDGE_EMITTERS: dict[int, bytes] = {
    1: bytes.fromhex("ec7372995d5cc8732397fb0ad35c0121e0eaa90d26f828a534cab54391b3a4f5"),
    2: _evm("3ee18b2214aff97000d974cf647e7c347e8fa585"),
    3: _evm("7cf7b764e38a0a5e967972c1df77d432510564e2"),
    4: _evm("b6f6d86a8f9879a9c87f643768d9efc38c1da6e7"),
    5: _evm("5a58505a96d1dbf8df91cb21b54419fc36e93fde"),
    6: _evm("0e082f06ff657d94310cb8ce8b0d9a04541d8052"),
    22: bytes(31) + b"\x01",
}
"""Mainnet token bridge emitter per chain."""

# sdk/mainnet_consts.go knownNFTBridgeEmitters.
NFT_BRIDGE_EMITTERS: dict[int, bytes] = {
    1: bytes.fromhex("0def15a24423e1edd1a5ab16f557b9060303ddbab8c803d2ee48f4b78a1cfd6b"),
    2: _evm("6ffd7ede62328b3af38fcd61461bbfc52f5651fe"),
    4: _evm("5a58505a96d1dbf8df91cb21b54419fc36e93fde"),
}
"""Mainnet NFT bridge emitter per chain."""

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
