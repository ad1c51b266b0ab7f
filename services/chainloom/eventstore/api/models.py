"""The API's responses as typed models: what the routes build and what ``/openapi.json`` says.

One source of truth: the routes serialize these models (pydantic's own serializer, camelCase
names as the Wormhole explorer API writes them), and FastAPI (:mod:`chainloom.eventstore.api.app`)
renders their JSON Schemas (draft 2020-12, the dialect of OpenAPI 3.1) into the document, so a
field cannot be served without being documented. Every field is present in every answer:
what the store does not hold is ``null``, never a missing key. Numbers that can exceed 64 bits
(token amounts, NFT ids) are decimal strings; sequences are JSON integers (uint64).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """Base of every response: frozen, camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class PayloadDoc(ApiModel):
    """The VAA's payload decoded, when it is a token- or NFT-bridge payload."""

    payload_type: int = Field(
        description="The payload id: 1 transfer, 2 attestation, 3 "
        "transfer with payload (NFT bridge: 1 transfer)."
    )
    kind: str = Field(
        description="TokenTransfer, TokenTransferWithPayload, AssetMeta or NFTTransfer."
    )
    amount: str | None = Field(description="Transfer amount in the bridge's 8-decimal units.")
    fee: str | None = Field(description="Relayer fee (payload 1), same units.")
    token_address: str | None = Field(description="Origin token address, 64 hex characters.")
    token_chain: int | None = Field(description="Origin token's chain id.")
    to_address: str | None = Field(description="Recipient, 64 hex characters.")
    to_chain: int | None = Field(description="Target chain id.")
    from_address: str | None = Field(description="Sender (payload 3), 64 hex characters.")
    payload: str | None = Field(description="Payload 3's application payload, hex.")
    decimals: int | None = Field(description="Token decimals (attestation).")
    symbol: str | None = Field(description="Token or NFT collection symbol.")
    name: str | None = Field(description="Token or NFT collection name.")
    token_id: str | None = Field(description="NFT token id, decimal.")
    uri: str | None = Field(description="NFT URI.")


class TokenTransferDetailsDoc(ApiModel):
    """Enrichment of a token transfer (the ``TokenTransferDetails`` family)."""

    amount: str | None = Field(description="Amount in whole tokens (decimal string).")
    decimals: int | None = Field(description="The origin token's decimals.")
    notional_usd: str | None = Field(description="USD value at the VAA's time, if priced.")
    token_price_usd: str | None = Field(description="USD per whole token, if priced.")
    origin_symbol: str | None = Field(description="The origin token's symbol.")
    origin_name: str | None = Field(description="The origin token's name.")
    origin_token_address: str | None = Field(description="Origin token address, native form.")


class ChainDetailsDoc(ApiModel):
    """Addresses in their chains' native forms (the ``ChainDetails`` family)."""

    sender_address: str | None = Field(description="The sender on the source chain.")
    receiver_address: str | None = Field(description="The recipient on the target chain.")
    resulting_token_address: str | None = Field(description="The token received, native form.")
    resulting_token_symbol: str | None = Field(description="Its symbol.")
    resulting_token_name: str | None = Field(description="Its name.")


class VaaDoc(ApiModel):
    """One stored message: its header fields, the signed VAA and what enrichment added."""

    id: str = Field(description="CHAIN/EMITTER/SEQUENCE, Wormhole's message id.")
    sequence: int = Field(ge=0, description="The emitter's sequence number (uint64).")
    version: int | None = Field(description="VAA version (1).")
    emitter_chain: int = Field(description="Emitter chain id.")
    emitter_addr: str = Field(description="Emitter address, 64 lower-case hex characters.")
    emitter_native_addr: str = Field(description="Emitter address in its chain's native form.")
    guardian_set_index: int | None = Field(description="Guardian set that signed it.")
    nonce: int | None = Field(description="The message's nonce.")
    consistency_level: int | None = Field(description="The consistency level it was sent with.")
    timestamp: str | None = Field(description="VAA time, RFC 3339 UTC (YYYY-MM-DDTHH:MM:SSZ).")
    tx_hash: str | None = Field(description="Source transaction id, when it was observed.")
    digest: str | None = Field(description="The VAA body's digest, 64 hex characters.")
    vaa: str | None = Field(
        description="The signed VAA (first to reach quorum), standard base64; null before quorum."
    )
    is_duplicated: bool = Field(
        description="True when a different VAA for the same id was seen (kept as a conflict)."
    )
    payload: PayloadDoc | None = Field(description="The decoded bridge payload, if any.")
    token_transfer_details: TokenTransferDetailsDoc | None = Field(
        description="Amount in tokens and USD, when the transfer's token is attested."
    )
    chain_details: ChainDetailsDoc | None = Field(description="Native-form addresses, if known.")


class Pagination(ApiModel):
    """Where the next page starts."""

    next: str | None = Field(
        description="Opaque cursor: pass it as `cursor` for the next page; null on the last page."
    )


class VaaResponse(ApiModel):
    """``GET /api/v1/vaas/{chain}/{emitter}/{seq}``."""

    data: VaaDoc


class VaaPage(ApiModel):
    """``GET /api/v1/vaas/{chain}[/{emitter}]``: one page, ascending by (emitter, sequence)."""

    data: list[VaaDoc]
    pagination: Pagination


class TransactionResponse(ApiModel):
    """``GET /api/v1/transactions/{tx_id}``: the messages one source transaction emitted."""

    tx_hash: str = Field(description="The transaction id as it is indexed (hex: 0x, lower case).")
    data: list[VaaDoc] = Field(description="Its messages, by message id.")


class DayCount(ApiModel):
    """Messages of one chain on one UTC day."""

    date: str = Field(description="UTC day, YYYY-MM-DD.")
    chain: int = Field(description="Emitter chain id.")
    chain_name: str = Field(description="Its lower-case name.")
    messages: int = Field(ge=0, description="Messages stored with a VAA time on that day.")


class DailyStats(ApiModel):
    """``GET /api/v1/stats/daily``: message counts per UTC day and chain."""

    from_: str = Field(serialization_alias="from", description="First day, YYYY-MM-DD.")
    to: str = Field(description="Last day, YYYY-MM-DD (included).")
    chain: int | None = Field(description="The chain asked for; null for every chain.")
    total: int = Field(ge=0, description="Sum of the counts.")
    data: list[DayCount] = Field(description="By day, then chain; days without messages left out.")


class FetchFailureDoc(ApiModel):
    """One missing sequence whose fetch failed."""

    sequence: int = Field(ge=0, description="The missing sequence.")
    status: str = Field(description="not_found, error or refused.")
    reason: str = Field(description="The endpoints' last answers, one line.")
    attempts: int = Field(ge=0, description="Fetches tried.")
    last_try: float = Field(description="Unix time of the last try.")


class GapDoc(ApiModel):
    """One hole in one emitter's sequences."""

    chain: int = Field(description="Emitter chain id.")
    emitter: str = Field(description="Emitter address, 64 hex characters.")
    first: int = Field(ge=0, description="First missing sequence.")
    last: int = Field(ge=0, description="Last missing sequence (included).")
    count: int = Field(ge=1, description="Sequences missing.")
    noticed: float = Field(description="Unix time the indexer noticed it.")
    attempts: int = Field(ge=0, description="Most fetches tried for one of its sequences.")
    last_error: str | None = Field(description="The latest failure, if any.")
    failures: list[FetchFailureDoc] = Field(description="Per-sequence failures.")


class GapsResponse(ApiModel):
    """``GET /api/v1/gaps``: the open gaps of the indexer's saved state."""

    emitters: int = Field(ge=0, description="Emitters the saved state tracks (after filters).")
    missing: int = Field(ge=0, description="Sequences missing over the listed gaps.")
    unreadable: list[str] = Field(description="Index rows of states that could not be read.")
    data: list[GapDoc] = Field(description="By chain, emitter, then first sequence.")


class Health(ApiModel):
    """``GET /healthz`` and ``GET /readyz``."""

    status: str = Field(description="ok (/healthz) or ready (/readyz)")


class ErrorBody(ApiModel):
    """Every answer other than 200."""

    error: str = Field(
        description="bad_request, not_found, method_not_allowed, unavailable, busy, or the HTTP "
        "server's own refusal word."
    )
    reason: str = Field(description="What was wrong, on one line.")
    parameter: str | None = Field(description="The parameter at fault (400 only).")


RESPONSE_MODELS: tuple[type[ApiModel], ...] = (
    VaaResponse,
    VaaPage,
    TransactionResponse,
    DailyStats,
    GapsResponse,
    Health,
    ErrorBody,
)
"""The top-level responses (the document's components include what they reference)."""


class AddressPage(ApiModel):
    """``GET /api/v1/addresses/{chain}/{address}``: messages sending from or to an address."""

    address: str = Field(description="The address in its chain's native form.")
    chain: int = Field(description="The address's Wormhole chain id.")
    data: list[VaaDoc] = Field(
        description="Transfers it sent (ChainDetails sender) or received (recipient), in time "
        "order."
    )
    pagination: Pagination
