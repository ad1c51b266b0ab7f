"""The row model: which cells each phase of a message's life writes, as pure data.

Idempotency comes from determinism. Every cell's timestamp is derived from the VAA, never from
the clock: the body-derived families use the VAA's timestamp, and each ``VAAState`` list cell
uses that timestamp plus one millisecond per signature in the list. Writing the same VAA again
therefore addresses exactly the same cells with the same values, so the spy's repeats cannot
create versions; the writer additionally diffs against the stored row and skips cells already
present, so a repeat costs no write at all.

Bigtable timestamps are microseconds with millisecond granularity, hence the factor of 1,000.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from chainloom.eventstore import encoding as enc
from chainloom.eventstore import schema
from chainloom.eventstore.enrichment import AssetInfo, WrappedAsset, notional_usd
from chainloom.eventstore.schema import Q
from chainloom.wormhole import (
    VAA,
    AssetMeta,
    NftTransfer,
    Payload,
    TokenTransfer,
    TokenTransferWithPayload,
    format_amount,
    native_address,
)

MICROS_PER_SECOND = 1_000_000
MICROS_PER_MILLI = 1_000


@dataclass(frozen=True, slots=True)
class Cell:
    """One value to store."""

    family: str
    """Column family."""
    qualifier: str
    """Column qualifier."""
    value: bytes
    """The encoded value (see :mod:`chainloom.eventstore.encoding`)."""
    timestamp_micros: int
    """Cell timestamp, derived from the VAA so rewrites hit the same cell."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One cell of the index table."""

    row_key: str
    """Index row (see :mod:`chainloom.eventstore.keys`)."""
    qualifier: str
    """Column in the index family."""
    value: bytes
    """Cell value."""
    timestamp_micros: int
    """Derived from the VAA, like the events cells, so rewrites are harmless."""


def vaa_time_micros(timestamp: int) -> int:
    """The cell timestamp of everything derived from a VAA's body."""
    return timestamp * MICROS_PER_SECOND


def publication_cells(vaa: VAA, initiating_tx_id: str | None = None) -> list[Cell]:
    """MessagePublication: the body fields (plus the digest identifying this exact body).

    ``Timestamp`` is the VAA's own time. ``InitiatingTxID`` is only known when the message was
    observed on its source chain; a VAA alone does not carry it.
    """
    ts = vaa_time_micros(vaa.timestamp)
    family = schema.MESSAGE_PUBLICATION
    values = [
        (Q.VERSION, enc.encode_int(vaa.version)),
        (Q.GUARDIAN_SET_INDEX, enc.encode_int(vaa.guardian_set_index)),
        (Q.TIMESTAMP, enc.encode_timestamp(vaa.timestamp)),
        (Q.NONCE, enc.encode_int(vaa.nonce)),
        (Q.SEQUENCE, enc.encode_sequence(vaa.sequence)),
        (Q.EMITTER_CHAIN, enc.encode_int(vaa.emitter_chain)),
        (Q.EMITTER_ADDRESS, enc.encode_hex(vaa.emitter_address)),
        (Q.PAYLOAD, vaa.payload),
        (Q.CONSISTENCY_LEVEL, enc.encode_int(vaa.consistency_level)),
        (Q.DIGEST, enc.encode_hex(vaa.digest)),
    ]
    if initiating_tx_id:
        values.append((Q.INITIATING_TX_ID, enc.encode_text(initiating_tx_id)))
    return [Cell(family, q, v, ts) for q, v in values]


def signature_cells(timestamp: int, signatures: Mapping[str, bytes]) -> list[Cell]:
    """``Signatures:{GuardianAddress}`` for each (checksummed address -> 65-byte signature)."""
    ts = vaa_time_micros(timestamp)
    return [
        Cell(schema.SIGNATURES, address, enc.encode_hex(sig), ts)
        for address, sig in sorted(signatures.items())
    ]


def signature_state_cell(
    timestamp: int, guardian_set_index: int, entries: Iterable[tuple[int, bytes]]
) -> Cell:
    """``VAAState:Signatures:{GuardianSetIndex}`` holding the list so far.

    Its timestamp grows with the list's length, so each growth is a new version and the
    version history reads as the order in which signatures arrived.
    """
    listed = sorted(set(entries))
    return Cell(
        schema.VAA_STATE,
        schema.signatures_state_qualifier(guardian_set_index),
        enc.encode_signature_list(listed),
        vaa_time_micros(timestamp) + len(listed) * MICROS_PER_MILLI,
    )


def quorum_cell(vaa: VAA, raw: bytes) -> Cell:
    """``QuorumState:SignedVAA``: the exact bytes of the first VAA stored with quorum."""
    return Cell(schema.QUORUM_STATE, Q.SIGNED_VAA, raw, vaa_time_micros(vaa.timestamp))


def conflict_cell(vaa: VAA, raw: bytes) -> Cell:
    """``QuorumState:Conflict:{digest}``: a second, different VAA for the same message id (the
    first copy of that body seen is kept)."""
    return Cell(
        schema.QUORUM_STATE,
        schema.conflict_qualifier(vaa.digest.hex()),
        raw,
        vaa_time_micros(vaa.timestamp),
    )


def payload_cells(timestamp: int, payload: Payload) -> list[Cell]:
    """The decoded payload family (token transfer, asset meta or NFT transfer), if any."""
    ts = vaa_time_micros(timestamp)
    if isinstance(payload, TokenTransfer | TokenTransferWithPayload):
        family = schema.TOKEN_TRANSFER_PAYLOAD
        values = [
            (Q.PAYLOAD_ID, enc.encode_int(1 if isinstance(payload, TokenTransfer) else 3)),
            (Q.AMOUNT, enc.encode_int(payload.amount)),
            (Q.ORIGIN_ADDRESS, enc.encode_hex(payload.token_address)),
            (Q.ORIGIN_CHAIN, enc.encode_int(payload.token_chain)),
            (Q.TARGET_ADDRESS, enc.encode_hex(payload.to)),
            (Q.TARGET_CHAIN, enc.encode_int(payload.to_chain)),
        ]
        if isinstance(payload, TokenTransfer):
            values.append((Q.FEE, enc.encode_int(payload.fee)))
        else:
            values.append((Q.FROM_ADDRESS, enc.encode_hex(payload.from_address)))
            values.append((Q.TRANSFER_PAYLOAD, payload.payload))
    elif isinstance(payload, AssetMeta):
        family = schema.ASSET_META_PAYLOAD
        values = [
            (Q.PAYLOAD_ID, enc.encode_int(2)),
            (Q.TOKEN_ADDRESS, enc.encode_hex(payload.token_address)),
            (Q.TOKEN_CHAIN, enc.encode_int(payload.token_chain)),
            (Q.DECIMALS, enc.encode_int(payload.decimals)),
            (Q.SYMBOL, enc.encode_text(payload.symbol)),
            (Q.NAME, enc.encode_text(payload.name)),
        ]
    elif isinstance(payload, NftTransfer):
        family = schema.NFT_TRANSFER_PAYLOAD
        values = [
            (Q.PAYLOAD_ID, enc.encode_int(1)),
            (Q.ORIGIN_ADDRESS, enc.encode_hex(payload.token_address)),
            (Q.ORIGIN_CHAIN, enc.encode_int(payload.token_chain)),
            (Q.SYMBOL, enc.encode_text(payload.symbol)),
            (Q.NAME, enc.encode_text(payload.name)),
            (Q.TOKEN_ID, enc.encode_int(payload.token_id)),
            (Q.URI, enc.encode_text(payload.uri.rstrip("\x00"))),
            (Q.TARGET_ADDRESS, enc.encode_hex(payload.to)),
            (Q.TARGET_CHAIN, enc.encode_int(payload.to_chain)),
        ]
    else:
        return []
    return [Cell(family, q, v, ts) for q, v in values]


def asset_info(timestamp: int, payload: AssetMeta) -> AssetInfo:
    """The enrichment's view of an attestation."""
    return AssetInfo(
        token_chain=payload.token_chain,
        token_address=payload.token_address.hex(),
        decimals=payload.decimals,
        symbol=payload.symbol,
        name=payload.name,
        timestamp=timestamp,
    )


Transfer = TokenTransfer | TokenTransferWithPayload


def transfer_details_cells(
    timestamp: int, transfer: Transfer, asset: AssetInfo, price_usd: Decimal | None
) -> list[Cell]:
    """TokenTransferDetails: the amount in whole tokens, origin token, and USD notional.

    ``NotionalUSD`` and ``TokenPriceUSD`` are written only when a price is known.
    """
    ts = vaa_time_micros(timestamp)
    family = schema.TOKEN_TRANSFER_DETAILS
    values = [
        (Q.AMOUNT, format_amount(transfer.amount, asset.decimals).encode()),
        (Q.DECIMALS, enc.encode_int(asset.decimals)),
        (Q.ORIGIN_SYMBOL, enc.encode_text(asset.symbol)),
        (Q.ORIGIN_NAME, enc.encode_text(asset.name)),
        (
            Q.ORIGIN_TOKEN_ADDRESS,
            enc.encode_text(native_address(transfer.token_chain, transfer.token_address)),
        ),
    ]
    if price_usd is not None:
        notional = notional_usd(transfer.amount, asset.decimals, price_usd)
        values.append((Q.NOTIONAL_USD, enc.encode_decimal(notional)))
        values.append((Q.TOKEN_PRICE_USD, enc.encode_decimal(price_usd)))
    return [Cell(family, q, v, ts) for q, v in values]


def chain_details_cells(
    vaa: VAA,
    payload: Payload,
    *,
    asset: AssetInfo | None,
    wrapped: WrappedAsset | None,
    sender: str | None = None,
) -> list[Cell]:
    """ChainDetails: sender, receiver and resulting token, each in its chain's native form.

    * ``SenderAddress``: the payload-3 ``from_address`` on the emitter chain, or ``sender``
      when the publication was observed on the source chain.
    * ``ReceiverAddress``: the transfer's ``to`` on the target chain.
    * ``ResultingToken*``: a transfer to the token's home chain yields the origin token itself;
      elsewhere it yields the wrapped token, known only if registered in the index.
    """
    if not isinstance(payload, TokenTransfer | TokenTransferWithPayload | NftTransfer):
        return []
    ts = vaa_time_micros(vaa.timestamp)
    family = schema.CHAIN_DETAILS
    values = [(Q.RECEIVER_ADDRESS, native_address(payload.to_chain, payload.to))]
    if isinstance(payload, TokenTransferWithPayload):
        values.append((Q.SENDER_ADDRESS, native_address(vaa.emitter_chain, payload.from_address)))
    elif sender:
        values.append((Q.SENDER_ADDRESS, sender))
    if isinstance(payload, TokenTransfer | TokenTransferWithPayload):
        if payload.to_chain == payload.token_chain:
            values.append(
                (
                    Q.RESULTING_TOKEN_ADDRESS,
                    native_address(payload.token_chain, payload.token_address),
                )
            )
            if asset is not None:
                values.append((Q.RESULTING_TOKEN_SYMBOL, asset.symbol))
                values.append((Q.RESULTING_TOKEN_NAME, asset.name))
        elif wrapped is not None:
            values.append((Q.RESULTING_TOKEN_ADDRESS, wrapped.address))
            if wrapped.symbol:
                values.append((Q.RESULTING_TOKEN_SYMBOL, wrapped.symbol))
            if wrapped.name:
                values.append((Q.RESULTING_TOKEN_NAME, wrapped.name))
    return [Cell(family, q, v.encode(), ts) for q, v in values]
