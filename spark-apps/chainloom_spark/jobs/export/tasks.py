"""export's columns and its tasks: one events-table row as one row of the events dataset,
decoded by the event store's own codecs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainloom.eventstore import schema
from chainloom.eventstore.encoding import decode_value
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.wormhole.errors import MessageKeyError

if TYPE_CHECKING:
    pass


EVENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("message_id", "STRING", "`chain/emitter/sequence`, Wormhole's message id"),
    ("row_key", "STRING", "the events table's row key `chain:emitter:%016d`"),
    ("emitter_address", "STRING", "the emitter, 64 lower-case hex characters"),
    ("sequence", "DECIMAL(20,0)", "the emitter's sequence (uint64)"),
    ("timestamp", "TIMESTAMP", "the VAA's timestamp (UTC)"),
    ("version", "INT", "VAA version"),
    ("guardian_set_index", "BIGINT", "guardian set the VAA is signed by"),
    ("nonce", "BIGINT", "the message's nonce"),
    ("consistency_level", "INT", "the emitter's requested finality"),
    ("digest", "STRING", "the body's digest (hex); tells conflicting VAAs apart"),
    ("payload", "BINARY", "the message payload, as emitted"),
    ("initiating_tx_id", "STRING", "source transaction, when observed on the source chain"),
    ("signed_vaa", "BINARY", "the first VAA stored with quorum (null: no quorum yet)"),
    ("signatures", "INT", "guardian signatures stored for the message"),
    ("conflicts", "INT", "other VAAs seen for the same message id (kept in the table)"),
    (
        "payload_kind",
        "STRING",
        "`token_transfer`, `token_transfer_with_payload`, `asset_meta`, `nft_transfer`, "
        "or null (any other payload)",
    ),
    ("amount", "STRING", "transfer amount in the bridge's units (at most 8 decimals), uint256"),
    ("fee", "STRING", "relayer fee of a payload-1 transfer, same units"),
    ("token_chain", "INT", "the token's home chain (transfers, attestations, NFTs)"),
    ("token_address", "STRING", "the token's address on its home chain, 64 hex characters"),
    ("target_chain", "INT", "destination chain of a transfer"),
    ("target_address", "STRING", "recipient on the destination chain, 64 hex characters"),
    ("from_address", "STRING", "sender of a payload-3 transfer, 64 hex characters"),
    (
        "decimals",
        "INT",
        "the token's native decimals (an attestation's, or the transfer's details)",
    ),
    ("symbol", "STRING", "token symbol (attestation, NFT, or the transfer's origin token)"),
    ("name", "STRING", "token name (attestation, NFT, or the transfer's origin token)"),
    ("nft_token_id", "STRING", "the NFT's token id (uint256, decimal)"),
    ("nft_uri", "STRING", "the NFT's URI"),
    ("amount_tokens", "STRING", "TokenTransferDetails: the amount in whole tokens (exact)"),
    ("notional_usd", "DECIMAL(38,6)", "TokenTransferDetails: USD value at the VAA's time"),
    ("token_price_usd", "STRING", "TokenTransferDetails: USD per whole token used (exact)"),
    ("origin_token_address", "STRING", "TokenTransferDetails: the origin token, native form"),
    ("sender_address", "STRING", "ChainDetails: sender, native form of the source chain"),
    ("receiver_address", "STRING", "ChainDetails: receiver, native form of the target chain"),
    ("resulting_token_address", "STRING", "ChainDetails: the token received, native form"),
    ("emitter_chain", "INT", "partition column: the emitter's chain id"),
    ("day", "DATE", "partition column: the UTC day of `timestamp`"),
)
"""The events dataset: (column, Spark SQL type, meaning), in order."""

DAILY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("source_chain", "INT", "emitter chain"),
    ("target_chain", "INT", "destination chain of the transfers (null: messages of other kinds)"),
    ("token_chain", "INT", "home chain of the token transferred (null: other kinds)"),
    ("token_address", "STRING", "the token's address on its home chain (null: other kinds)"),
    ("symbol", "STRING", "the token's symbol, where the transfers' details carry one"),
    ("messages", "BIGINT", "messages (rows) in the group"),
    ("transfers", "BIGINT", "token transfers (payload 1 and 3) in the group"),
    ("priced_transfers", "BIGINT", "transfers with a NotionalUSD"),
    ("volume_usd", "DECIMAL(38,6)", "sum of NotionalUSD of the priced transfers (0 if none)"),
    ("day", "DATE", "partition column: the UTC day"),
)
"""The daily aggregate dataset: (column, Spark SQL type, meaning), in order."""


SCAN_FAMILIES = tuple(f for f in schema.EVENT_FAMILY_NAMES if f != schema.VAA_STATE)
"""Every family but VAAState (the signature lists' history; the signatures are counted from
the Signatures family)."""

_KINDS = {
    (schema.TOKEN_TRANSFER_PAYLOAD, 1): "token_transfer",
    (schema.TOKEN_TRANSFER_PAYLOAD, 3): "token_transfer_with_payload",
    (schema.ASSET_META_PAYLOAD, 2): "asset_meta",
    (schema.NFT_TRANSFER_PAYLOAD, 1): "nft_transfer",
}

_PAYLOAD_FAMILIES = (
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.ASSET_META_PAYLOAD,
    schema.NFT_TRANSFER_PAYLOAD,
)


def ddl(columns: tuple[tuple[str, str, str], ...]) -> str:
    """A column list as Spark DDL."""
    return ", ".join(f"{name} {kind}" for name, kind, _ in columns)


def _value(row: RowSnapshot, family: str, qualifier: str) -> Any:
    raw = row.get(family, {}).get(qualifier)
    return None if raw is None else decode_value(family, qualifier, raw)


def _hex(value: Any) -> str | None:
    return value.hex() if isinstance(value, bytes) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def event_row(row_key: str, row: RowSnapshot) -> tuple[Any, ...] | None:
    """One events-table row as a tuple in :data:`EVENT_COLUMNS` order; None for a row with no
    publication (nothing to place it by)."""
    stamp = _value(row, schema.MESSAGE_PUBLICATION, Q.TIMESTAMP)
    if stamp is None:
        return None
    try:
        key = MessageKey.parse(row_key)
    except MessageKeyError:
        return None
    moment = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    payload_family = next((f for f in _PAYLOAD_FAMILIES if f in row), None)
    kind = None
    if payload_family is not None:
        kind = _KINDS.get((payload_family, _value(row, payload_family, Q.PAYLOAD_ID)))
    quorum = row.get(schema.QUORUM_STATE, {})
    is_asset = payload_family == schema.ASSET_META_PAYLOAD
    family = payload_family or schema.TOKEN_TRANSFER_PAYLOAD
    details = schema.TOKEN_TRANSFER_DETAILS
    notional = _value(row, details, Q.NOTIONAL_USD)
    values = {
        "message_id": key.message_id,
        "row_key": row_key,
        "emitter_address": key.emitter,
        "sequence": Decimal(key.sequence),
        "timestamp": moment,
        "version": _value(row, schema.MESSAGE_PUBLICATION, Q.VERSION),
        "guardian_set_index": _value(row, schema.MESSAGE_PUBLICATION, Q.GUARDIAN_SET_INDEX),
        "nonce": _value(row, schema.MESSAGE_PUBLICATION, Q.NONCE),
        "consistency_level": _value(row, schema.MESSAGE_PUBLICATION, Q.CONSISTENCY_LEVEL),
        "digest": _hex(_value(row, schema.MESSAGE_PUBLICATION, Q.DIGEST)),
        "payload": row.get(schema.MESSAGE_PUBLICATION, {}).get(Q.PAYLOAD),
        "initiating_tx_id": _value(row, schema.MESSAGE_PUBLICATION, Q.INITIATING_TX_ID),
        "signed_vaa": quorum.get(Q.SIGNED_VAA),
        "signatures": len(row.get(schema.SIGNATURES, {})),
        "conflicts": sum(1 for q in quorum if q.startswith(Q.CONFLICT_PREFIX)),
        "payload_kind": kind,
        "amount": _text(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.AMOUNT)),
        "fee": _text(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.FEE)),
        "token_chain": _value(row, family, Q.TOKEN_CHAIN if is_asset else Q.ORIGIN_CHAIN),
        "token_address": _hex(
            _value(row, family, Q.TOKEN_ADDRESS if is_asset else Q.ORIGIN_ADDRESS)
        ),
        "target_chain": _value(row, family, Q.TARGET_CHAIN),
        "target_address": _hex(_value(row, family, Q.TARGET_ADDRESS)),
        "from_address": _hex(_value(row, schema.TOKEN_TRANSFER_PAYLOAD, Q.FROM_ADDRESS)),
        "decimals": _value(row, family if is_asset else details, Q.DECIMALS),
        "symbol": _value(row, family, Q.SYMBOL) or _value(row, details, Q.ORIGIN_SYMBOL),
        "name": _value(row, family, Q.NAME) or _value(row, details, Q.ORIGIN_NAME),
        "nft_token_id": _text(_value(row, schema.NFT_TRANSFER_PAYLOAD, Q.TOKEN_ID)),
        "nft_uri": _value(row, schema.NFT_TRANSFER_PAYLOAD, Q.URI),
        "amount_tokens": _text(_value(row, details, Q.AMOUNT)),
        "notional_usd": notional,
        "token_price_usd": _text(_value(row, details, Q.TOKEN_PRICE_USD)),
        "origin_token_address": _value(row, details, Q.ORIGIN_TOKEN_ADDRESS),
        "sender_address": _value(row, schema.CHAIN_DETAILS, Q.SENDER_ADDRESS),
        "receiver_address": _value(row, schema.CHAIN_DETAILS, Q.RECEIVER_ADDRESS),
        "resulting_token_address": _value(row, schema.CHAIN_DETAILS, Q.RESULTING_TOKEN_ADDRESS),
        "emitter_chain": key.chain,
        "day": moment.date(),
    }
    return tuple(values[name] for name, _, _ in EVENT_COLUMNS)


def row_or_skip(row_key: str, row: RowSnapshot) -> tuple[Any, ...]:
    """:func:`event_row` with a leading ``skipped`` column: the row's chain (as text) when it
    cannot be exported, else null."""
    exported = event_row(row_key, row)
    if exported is not None:
        return (None, *exported)
    chain = row_key.split(":", 1)[0]
    return (chain if chain.isdecimal() else "-1", *(None for _ in EVENT_COLUMNS))
