"""The operations routes' answers: a transfer from its source event to its redemption.

Named after wormholescan's ``OperationResponse`` (``api/v1/operations``): ``id``, the emitter,
``sequence``, ``vaa``, ``content`` (the decoded payload and its ``standarizedProperties``, spelt
as the explorer spells it), ``sourceChain`` and ``targetChain``. ``vaa`` here is the same
document ``GET /api/v1/vaas/{chain}/{emitter}/{seq}`` answers (base64 and decoded fields).
"""

from __future__ import annotations

from pydantic import Field

from chainloom.eventstore.api.models import ApiModel, Pagination, PayloadDoc, VaaDoc


class EmitterAddressDoc(ApiModel):
    """The emitter's address in both forms."""

    hex: str = Field(description="64 lower-case hex characters.")
    native: str = Field(description="The emitter chain's native form.")


class TransactionDoc(ApiModel):
    """A chain transaction."""

    tx_hash: str = Field(description="Its id as the chain gives it.")


class StandardizedProperties(ApiModel):
    """What every transfer has, whatever its app: chains, addresses, token and amount."""

    from_chain: int = Field(description="Source (emitter) chain id.")
    from_address: str | None = Field(
        description="The sender, native form, when observed or in the payload."
    )
    to_chain: int | None = Field(description="Target chain id.")
    to_address: str | None = Field(description="The recipient, native form.")
    token_chain: int | None = Field(description="Origin chain of the token.")
    token_address: str | None = Field(description="Origin token address, 64 hex characters.")
    amount: str | None = Field(description="Amount in the bridge's 8-decimal units.")
    fee: str | None = Field(description="Relayer fee (payload 1), same units.")
    normalized_decimals: int | None = Field(
        description="Decimals of amount and fee (8 for token-bridge transfers)."
    )


class TransferData(ApiModel):
    """The enrichment the writer added: whole tokens and USD (null when not attested/priced)."""

    symbol: str | None = Field(description="The origin token's symbol.")
    token_amount: str | None = Field(description="Amount in whole tokens, decimal string.")
    usd_amount: str | None = Field(description="USD notional at the VAA's time.")


class ContentDoc(ApiModel):
    """The message's payload, decoded and standardized."""

    payload: PayloadDoc | None = Field(description="The decoded bridge payload.")
    standarized_properties: StandardizedProperties | None = Field(
        description="Null for a message that is not a transfer."
    )
    data: TransferData | None = Field(description="Enrichment of a token transfer.")


class SourceChainDoc(ApiModel):
    """Where the transfer started."""

    chain_id: int = Field(description="Emitter chain id.")
    timestamp: str | None = Field(description="VAA time, RFC 3339 UTC.")
    transaction: TransactionDoc | None = Field(
        description="The source transaction, when the message was observed on its chain."
    )
    from_: str | None = Field(
        serialization_alias="from", description="The sender, native form, when known."
    )
    status: str = Field(description="confirmed (signed by the guardians) or pending (no quorum).")


class TargetChainDoc(ApiModel):
    """Where the transfer is redeemed, as far as the relayer's tables tell."""

    chain_id: int = Field(description="Target chain id.")
    timestamp: str | None = Field(description="When the relayer completed it, RFC 3339 UTC.")
    transaction: TransactionDoc | None = Field(
        description="The redeeming transaction (completed; pending: the one awaiting finality)."
    )
    to: str | None = Field(description="The recipient, native form.")
    status: str = Field(
        description="completed, pending (submitted, awaiting finality), queued, failed, or "
        "unknown (the relayer never took it, or api.relay_redis is unset)."
    )
    outcome: str | None = Field(description="completed: confirmed, already_redeemed or dropped.")
    reason: str | None = Field(description="failed (or queued after a failure): the last error.")


class OperationDoc(ApiModel):
    """One transfer (or other message): source event, VAA, payload and target-chain side."""

    id: str = Field(description="CHAIN/EMITTER/SEQUENCE, Wormhole's message id.")
    emitter_chain: int = Field(description="Emitter chain id.")
    emitter_address: EmitterAddressDoc
    sequence: int = Field(ge=0, description="The emitter's sequence number (uint64).")
    vaa: VaaDoc = Field(description="The message as GET /api/v1/vaas/{chain}/{emitter}/{seq}.")
    content: ContentDoc
    source_chain: SourceChainDoc
    target_chain: TargetChainDoc | None = Field(
        description="Null for a message without a target chain (not a transfer)."
    )


class OperationPage(ApiModel):
    """``GET /api/v1/operations``: one page, in the list's order."""

    operations: list[OperationDoc]
    pagination: Pagination
