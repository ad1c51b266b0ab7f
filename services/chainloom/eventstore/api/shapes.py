"""Stored rows to response models: pure (no store, no HTTP).

A row's cells are decoded with the store's own codecs (:mod:`chainloom.eventstore.encoding`);
what a row lacks is ``null`` in the answer. The signed VAA is the ``QuorumState:SignedVAA``
cell, base64 as the explorer API gives it; ``isDuplicated`` says a different VAA with the same
id was kept as a conflict.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
from collections.abc import Iterable, Mapping

from chainloom.eventstore import encoding as enc
from chainloom.eventstore import schema
from chainloom.eventstore.api import models
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.wormhole import chain_name, native_address
from chainloom.wormhole.sequences import OpenGap

PAYLOAD_KINDS = {
    (schema.TOKEN_TRANSFER_PAYLOAD, 1): "TokenTransfer",
    (schema.TOKEN_TRANSFER_PAYLOAD, 3): "TokenTransferWithPayload",
    (schema.ASSET_META_PAYLOAD, 2): "AssetMeta",
    (schema.NFT_TRANSFER_PAYLOAD, 1): "NFTTransfer",
}
"""(family, payload id) -> the ``kind`` of the decoded payload."""


class _Cells:
    """Typed reads of one family's cells (None when a cell is absent or does not decode)."""

    def __init__(self, columns: Mapping[str, bytes] | None) -> None:
        self.columns = columns or {}

    def integer(self, qualifier: str) -> int | None:
        raw = self.columns.get(qualifier)
        try:
            return None if raw is None else enc.decode_int(raw)
        except ValueError:
            return None

    def digits(self, qualifier: str) -> str | None:
        """An integer cell as a decimal string (amounts can exceed 64 bits)."""
        value = self.integer(qualifier)
        return None if value is None else str(value)

    def text(self, qualifier: str) -> str | None:
        raw = self.columns.get(qualifier)
        return None if raw is None else enc.decode_text(raw)

    def hex_text(self, qualifier: str) -> str | None:
        """A hex cell as stored (lower-case, no ``0x``); a raw cell as hex."""
        raw = self.columns.get(qualifier)
        return None if raw is None else enc.decode_text(raw)

    def blob_hex(self, qualifier: str) -> str | None:
        raw = self.columns.get(qualifier)
        return None if raw is None else raw.hex()


@functools.lru_cache(maxsize=4096)
def emitter_native_address(chain: int, emitter: str) -> str:
    """An emitter's native form, cached: emitters are few, and EIP-55 checksums cost ~0.1 ms."""
    return native_address(chain, bytes.fromhex(emitter))


def vaa_doc(key: MessageKey, families: RowSnapshot) -> models.VaaDoc:
    """One stored message (its key and its row's latest cells) as the API shows it."""
    publication = _Cells(families.get(schema.MESSAGE_PUBLICATION))
    quorum = families.get(schema.QUORUM_STATE, {})
    signed = quorum.get(Q.SIGNED_VAA)
    return models.VaaDoc(
        id=key.message_id,
        sequence=key.sequence,
        version=publication.integer(Q.VERSION),
        emitter_chain=key.chain,
        emitter_addr=key.emitter,
        emitter_native_addr=emitter_native_address(key.chain, key.emitter),
        guardian_set_index=publication.integer(Q.GUARDIAN_SET_INDEX),
        nonce=publication.integer(Q.NONCE),
        consistency_level=publication.integer(Q.CONSISTENCY_LEVEL),
        timestamp=publication.text(Q.TIMESTAMP),
        tx_hash=publication.text(Q.INITIATING_TX_ID),
        digest=publication.hex_text(Q.DIGEST),
        vaa=None if signed is None else base64.b64encode(signed).decode("ascii"),
        is_duplicated=any(q.startswith(Q.CONFLICT_PREFIX) for q in quorum),
        payload=payload_doc(families),
        token_transfer_details=_transfer_details(families.get(schema.TOKEN_TRANSFER_DETAILS)),
        chain_details=_chain_details(families.get(schema.CHAIN_DETAILS)),
    )


def payload_doc(families: Mapping[str, Mapping[str, bytes]]) -> models.PayloadDoc | None:
    """The decoded payload family of a row, if it has one."""
    for family in (
        schema.TOKEN_TRANSFER_PAYLOAD,
        schema.ASSET_META_PAYLOAD,
        schema.NFT_TRANSFER_PAYLOAD,
    ):
        if family not in families:
            continue
        cells = _Cells(families[family])
        payload_id = cells.integer(Q.PAYLOAD_ID)
        if payload_id is None:
            continue
        asset = family == schema.ASSET_META_PAYLOAD
        return models.PayloadDoc(
            payload_type=payload_id,
            kind=PAYLOAD_KINDS.get((family, payload_id), "Unknown"),
            amount=cells.digits(Q.AMOUNT),
            fee=cells.digits(Q.FEE),
            token_address=cells.hex_text(Q.TOKEN_ADDRESS if asset else Q.ORIGIN_ADDRESS),
            token_chain=cells.integer(Q.TOKEN_CHAIN if asset else Q.ORIGIN_CHAIN),
            to_address=cells.hex_text(Q.TARGET_ADDRESS),
            to_chain=cells.integer(Q.TARGET_CHAIN),
            from_address=cells.hex_text(Q.FROM_ADDRESS),
            payload=cells.blob_hex(Q.TRANSFER_PAYLOAD),
            decimals=cells.integer(Q.DECIMALS),
            symbol=cells.text(Q.SYMBOL),
            name=cells.text(Q.NAME),
            token_id=cells.digits(Q.TOKEN_ID),
            uri=cells.text(Q.URI),
        )
    return None


def _transfer_details(
    columns: Mapping[str, bytes] | None,
) -> models.TokenTransferDetailsDoc | None:
    if not columns:
        return None
    cells = _Cells(columns)
    return models.TokenTransferDetailsDoc(
        amount=cells.text(Q.AMOUNT),
        decimals=cells.integer(Q.DECIMALS),
        notional_usd=cells.text(Q.NOTIONAL_USD),
        token_price_usd=cells.text(Q.TOKEN_PRICE_USD),
        origin_symbol=cells.text(Q.ORIGIN_SYMBOL),
        origin_name=cells.text(Q.ORIGIN_NAME),
        origin_token_address=cells.text(Q.ORIGIN_TOKEN_ADDRESS),
    )


def _chain_details(columns: Mapping[str, bytes] | None) -> models.ChainDetailsDoc | None:
    if not columns:
        return None
    cells = _Cells(columns)
    return models.ChainDetailsDoc(
        sender_address=cells.text(Q.SENDER_ADDRESS),
        receiver_address=cells.text(Q.RECEIVER_ADDRESS),
        resulting_token_address=cells.text(Q.RESULTING_TOKEN_ADDRESS),
        resulting_token_symbol=cells.text(Q.RESULTING_TOKEN_SYMBOL),
        resulting_token_name=cells.text(Q.RESULTING_TOKEN_NAME),
    )


def daily_stats(
    counts: Mapping[tuple[int, str], int], first: dt.date, last: dt.date, chain: int | None
) -> models.DailyStats:
    """Counts by (chain, ``YYYY-MM-DD``) as the stats answer, by day then chain."""
    rows = [
        models.DayCount(date=day, chain=c, chain_name=chain_name(c), messages=n)
        for (c, day), n in sorted(counts.items(), key=lambda item: (item[0][1], item[0][0]))
    ]
    return models.DailyStats(
        from_=first.isoformat(),
        to=last.isoformat(),
        chain=chain,
        total=sum(counts.values()),
        data=rows,
    )


def gaps_response(
    gaps: Iterable[OpenGap], emitters: int, unreadable: list[str]
) -> models.GapsResponse:
    """Open gaps (:meth:`OpenGap.to_json`, the ``events gaps --json`` shape) as the answer."""
    docs = []
    for gap in gaps:
        data = gap.to_json()
        docs.append(
            models.GapDoc(
                chain=data["chain"],
                emitter=data["emitter"],
                first=data["first"],
                last=data["last"],
                count=data["count"],
                noticed=data["noticed"],
                attempts=data["attempts"],
                last_error=data["last_error"],
                failures=[models.FetchFailureDoc(**f) for f in data["failures"]],
            )
        )
    return models.GapsResponse(
        emitters=emitters,
        missing=sum(d.count for d in docs),
        unreadable=unreadable,
        data=docs,
    )


def error_body(word: str, reason: str, parameter: str | None = None) -> bytes:
    """The JSON of an error answer."""
    return (
        models.ErrorBody(error=word, reason=reason, parameter=parameter)
        .model_dump_json(by_alias=True)
        .encode()
    )


def body(model: models.ApiModel) -> bytes:
    """The JSON of a response model (camelCase names)."""
    return model.model_dump_json(by_alias=True).encode()
