# ruff: noqa: S105 (column names, not secrets)
"""The events table's column families, qualifiers and garbage-collection policies, as data.

Kept free of the Bigtable client so the administration code, the drift report, the docs and the
tests all read one definition. GC policies are version limits only, never an age: cells carry
the VAA's own time as their timestamp (see :mod:`chainloom.eventstore.cells`), so an age rule
would delete old messages the moment they are written.
"""

from __future__ import annotations

from dataclasses import dataclass

MESSAGE_PUBLICATION = "MessagePublication"
SIGNATURES = "Signatures"
VAA_STATE = "VAAState"
QUORUM_STATE = "QuorumState"
TOKEN_TRANSFER_PAYLOAD = "TokenTransferPayload"
ASSET_META_PAYLOAD = "AssetMetaPayload"
NFT_TRANSFER_PAYLOAD = "NFTTransferPayload"
TOKEN_TRANSFER_DETAILS = "TokenTransferDetails"
CHAIN_DETAILS = "ChainDetails"

INDEX_FAMILY = "i"
"""The index table's single family."""


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """One column family and the garbage-collection rule it must have."""

    name: str
    """The family name."""
    max_versions: int
    """Cells kept per column (``MaxVersionsGCRule``)."""
    purpose: str
    """One line for the drift report and the docs."""


EVENT_FAMILIES: tuple[FamilySpec, ...] = (
    FamilySpec(MESSAGE_PUBLICATION, 1, "the message's header and body fields"),
    FamilySpec(SIGNATURES, 1, "one cell per guardian signature: {GuardianAddress}"),
    FamilySpec(
        VAA_STATE,
        64,
        "Signatures:{GuardianSetIndex}: the signature list, one cell per growth; the history "
        "(up to 64 versions, more than any guardian set's 19 signatures) is the arrival order",
    ),
    FamilySpec(QUORUM_STATE, 1, "SignedVAA (first VAA to reach quorum) and Conflict:{digest}"),
    FamilySpec(TOKEN_TRANSFER_PAYLOAD, 1, "token-bridge payload 1 and 3"),
    FamilySpec(ASSET_META_PAYLOAD, 1, "token-bridge payload 2"),
    FamilySpec(NFT_TRANSFER_PAYLOAD, 1, "NFT-bridge payload 1"),
    FamilySpec(TOKEN_TRANSFER_DETAILS, 1, "scaled amount, USD notional, origin token"),
    FamilySpec(CHAIN_DETAILS, 1, "sender, receiver and resulting token in native form"),
)

INDEX_FAMILIES: tuple[FamilySpec, ...] = (
    FamilySpec(INDEX_FAMILY, 1, "secondary-index entries (tx, recent, count, asset, wrapped)"),
)

EVENT_FAMILY_NAMES: tuple[str, ...] = tuple(spec.name for spec in EVENT_FAMILIES)


class Q:
    """Qualifiers (column names), grouped by family."""

    # MessagePublication
    VERSION = "Version"
    GUARDIAN_SET_INDEX = "GuardianSetIndex"
    TIMESTAMP = "Timestamp"
    NONCE = "Nonce"
    SEQUENCE = "Sequence"
    EMITTER_CHAIN = "EmitterChain"
    EMITTER_ADDRESS = "EmitterAddress"
    INITIATING_TX_ID = "InitiatingTxID"
    PAYLOAD = "Payload"
    CONSISTENCY_LEVEL = "ConsistencyLevel"
    DIGEST = "Digest"
    # VAAState
    SIGNATURES_PREFIX = "Signatures:"
    # QuorumState
    SIGNED_VAA = "SignedVAA"
    CONFLICT_PREFIX = "Conflict:"
    # payload families
    PAYLOAD_ID = "PayloadId"
    AMOUNT = "Amount"
    FEE = "Fee"
    ORIGIN_ADDRESS = "OriginAddress"
    ORIGIN_CHAIN = "OriginChain"
    TARGET_ADDRESS = "TargetAddress"
    TARGET_CHAIN = "TargetChain"
    FROM_ADDRESS = "FromAddress"
    TRANSFER_PAYLOAD = "TransferPayload"
    TOKEN_ADDRESS = "TokenAddress"
    TOKEN_CHAIN = "TokenChain"
    DECIMALS = "Decimals"
    SYMBOL = "Symbol"
    NAME = "Name"
    TOKEN_ID = "TokenId"
    URI = "URI"
    # TokenTransferDetails
    NOTIONAL_USD = "NotionalUSD"
    TOKEN_PRICE_USD = "TokenPriceUSD"
    ORIGIN_SYMBOL = "OriginSymbol"
    ORIGIN_NAME = "OriginName"
    ORIGIN_TOKEN_ADDRESS = "OriginTokenAddress"
    # ChainDetails
    SENDER_ADDRESS = "SenderAddress"
    RECEIVER_ADDRESS = "ReceiverAddress"
    RESULTING_TOKEN_ADDRESS = "ResultingTokenAddress"
    RESULTING_TOKEN_SYMBOL = "ResultingTokenSymbol"
    RESULTING_TOKEN_NAME = "ResultingTokenName"


def signatures_state_qualifier(guardian_set_index: int) -> str:
    """``VAAState:Signatures:{GuardianSetIndex}``."""
    return f"{Q.SIGNATURES_PREFIX}{guardian_set_index}"


def conflict_qualifier(digest_hex: str) -> str:
    """``QuorumState:Conflict:{digest}`` for a second, different VAA of the same message."""
    return f"{Q.CONFLICT_PREFIX}{digest_hex}"
