"""A stored row (and the relayer's word on its redemption) as an operation document: pure.

The source side is the row's publication and ``ChainDetails`` cells; the target side is the
transfer's target chain and recipient from the payload, with the redemption's state and
transaction from :class:`~chainloom.eventstore.redemptions.Redemption` when the relayer knows it
(status ``unknown`` otherwise). :func:`redemption_key` says what to look a row up by.
"""

from __future__ import annotations

from chainloom.eventstore import schema
from chainloom.eventstore.api import models, shapes
from chainloom.eventstore.api.operation_models import (
    ContentDoc,
    EmitterAddressDoc,
    OperationDoc,
    SourceChainDoc,
    StandardizedProperties,
    TargetChainDoc,
    TransactionDoc,
    TransferData,
)
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.redemptions import Redemption
from chainloom.eventstore.schema import Q

UNKNOWN = "unknown"
"""The target side's status when the relayer's tables say nothing of the transfer."""

BRIDGE_DECIMALS = 8
"""Token-bridge amounts carry at most 8 decimals (the token's own when it has fewer)."""

TRANSFER_KINDS = frozenset({"TokenTransfer", "TokenTransferWithPayload", "NFTTransfer"})


def redemption_key(families: RowSnapshot) -> tuple[str, int] | None:
    """(VAA digest ``0x``-hex, target chain) of a stored transfer; None for other messages or
    a row without its digest."""
    payload = shapes.payload_doc(families)
    digest = families.get(schema.MESSAGE_PUBLICATION, {}).get(Q.DIGEST)
    if payload is None or payload.kind not in TRANSFER_KINDS or payload.to_chain is None:
        return None
    if digest is None:
        return None
    return "0x" + digest.decode("ascii").lower().removeprefix("0x"), payload.to_chain


def _properties(
    vaa: models.VaaDoc, payload: models.PayloadDoc | None
) -> StandardizedProperties | None:
    if payload is None or payload.kind not in TRANSFER_KINDS:
        return None
    details = vaa.token_transfer_details
    decimals = None
    if payload.kind != "NFTTransfer":
        token_decimals = None if details is None else details.decimals
        decimals = (
            BRIDGE_DECIMALS if token_decimals is None else min(token_decimals, BRIDGE_DECIMALS)
        )
    chain = vaa.chain_details
    return StandardizedProperties(
        from_chain=vaa.emitter_chain,
        from_address=None if chain is None else chain.sender_address,
        to_chain=payload.to_chain,
        to_address=payload.to_address if chain is None else chain.receiver_address,
        token_chain=payload.token_chain,
        token_address=payload.token_address,
        amount=payload.amount,
        fee=payload.fee,
        normalized_decimals=decimals,
    )


def _target(
    properties: StandardizedProperties | None, redemption: Redemption | None
) -> TargetChainDoc | None:
    if properties is None or properties.to_chain is None:
        return None
    if redemption is None:
        return TargetChainDoc(
            chain_id=properties.to_chain,
            timestamp=None,
            transaction=None,
            to=properties.to_address,
            status=UNKNOWN,
            outcome=None,
            reason=None,
        )
    tx_hash = redemption.tx_hash
    return TargetChainDoc(
        chain_id=properties.to_chain,
        timestamp=redemption.timestamp,
        transaction=None if tx_hash is None else TransactionDoc(tx_hash=tx_hash),
        to=properties.to_address,
        status=redemption.status,
        outcome=redemption.outcome,
        reason=redemption.reason,
    )


def operation_doc(
    key: MessageKey, families: RowSnapshot, redemption: Redemption | None = None
) -> OperationDoc:
    """One stored message as an operation; ``redemption`` is what the relayer knows of it."""
    vaa = shapes.vaa_doc(key, families)
    payload = vaa.payload
    properties = _properties(vaa, payload)
    details = vaa.token_transfer_details
    data = None
    if details is not None:
        data = TransferData(
            symbol=details.origin_symbol,
            token_amount=details.amount,
            usd_amount=details.notional_usd,
        )
    return OperationDoc(
        id=key.message_id,
        emitter_chain=key.chain,
        emitter_address=EmitterAddressDoc(hex=key.emitter, native=vaa.emitter_native_addr),
        sequence=key.sequence,
        vaa=vaa,
        content=ContentDoc(payload=payload, standarized_properties=properties, data=data),
        source_chain=SourceChainDoc(
            chain_id=key.chain,
            timestamp=vaa.timestamp,
            transaction=None if vaa.tx_hash is None else TransactionDoc(tx_hash=vaa.tx_hash),
            from_=None if vaa.chain_details is None else vaa.chain_details.sender_address,
            status="confirmed" if vaa.vaa is not None else "pending",
        ),
        target_chain=_target(properties, redemption),
    )
