"""The Wormhole core: VAA codec, guardian sets and verification, payloads, chains.

One strict, fast implementation of the Wormhole message format that the event store, the
relayer, the spy and the Spark jobs share, so they all agree on what a VAA's digest, message
id, row key and decoded payload are. Pure domain code: no I/O beyond reading the guardian-set
data files shipped in this package (and files a caller names explicitly). The test guardians
and the VAA workload generator that sign with them are harness, in :mod:`chainloom_dev.sim`.
"""

from __future__ import annotations

from chainloom.wormhole.chains import CHAINS, chain_id, chain_name, checksum_address, native_address
from chainloom.wormhole.derivation import DerivedGuardianSet, derive_guardian_sets
from chainloom.wormhole.emitters import (
    DEV_NFT_BRIDGE_EMITTER,
    DEV_TOKEN_BRIDGE_EMITTER,
    DEVNET_NFT_BRIDGE_EMITTERS,
    DEVNET_TOKEN_BRIDGE_EMITTERS,
    GOVERNANCE_CHAIN,
    GOVERNANCE_EMITTER,
    NFT_BRIDGE_EMITTERS,
    TOKEN_BRIDGE_EMITTERS,
    KnownEmitters,
    all_known_emitters,
    devnet_emitters,
    mainnet_emitters,
)
from chainloom.wormhole.errors import (
    PayloadParseError,
    UnknownGuardianSetError,
    VAAParseError,
    WormholeError,
)
from chainloom.wormhole.guardians import GuardianSet, GuardianSets, quorum
from chainloom.wormhole.payloads import (
    AssetMeta,
    ContractUpgrade,
    GovernanceMessage,
    GuardianSetUpgrade,
    NftTransfer,
    Payload,
    RawPayload,
    RegisterChain,
    TokenTransfer,
    TokenTransferWithPayload,
    decode_padded_string,
    decode_payload,
    denormalize_amount,
    encode_payload,
    format_amount,
    normalize_amount,
)
from chainloom.wormhole.vaa import VAA, Signature, decode_vaa_text, parse_vaa, parse_vaa_text
from chainloom.wormhole.verify import SignatureCache, Verification, recover_signer, verify_vaa

__all__ = [
    "CHAINS",
    "DEVNET_NFT_BRIDGE_EMITTERS",
    "DEVNET_TOKEN_BRIDGE_EMITTERS",
    "DEV_NFT_BRIDGE_EMITTER",
    "DEV_TOKEN_BRIDGE_EMITTER",
    "GOVERNANCE_CHAIN",
    "GOVERNANCE_EMITTER",
    "NFT_BRIDGE_EMITTERS",
    "TOKEN_BRIDGE_EMITTERS",
    "VAA",
    "AssetMeta",
    "ContractUpgrade",
    "DerivedGuardianSet",
    "GovernanceMessage",
    "GuardianSet",
    "GuardianSetUpgrade",
    "GuardianSets",
    "KnownEmitters",
    "NftTransfer",
    "Payload",
    "PayloadParseError",
    "RawPayload",
    "RegisterChain",
    "Signature",
    "SignatureCache",
    "TokenTransfer",
    "TokenTransferWithPayload",
    "UnknownGuardianSetError",
    "VAAParseError",
    "Verification",
    "WormholeError",
    "all_known_emitters",
    "chain_id",
    "chain_name",
    "checksum_address",
    "decode_padded_string",
    "decode_payload",
    "decode_vaa_text",
    "denormalize_amount",
    "derive_guardian_sets",
    "devnet_emitters",
    "encode_payload",
    "format_amount",
    "mainnet_emitters",
    "native_address",
    "normalize_amount",
    "parse_vaa",
    "parse_vaa_text",
    "quorum",
    "recover_signer",
    "verify_vaa",
]
