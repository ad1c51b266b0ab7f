"""Response shapes, pure: rippled's JSON for headers, transactions, objects, NFTs and errors.

Everything here takes stored values (:mod:`chainloom.ledger.types`) and returns plain JSON data;
the methods (:mod:`.methods`) decide *what* to fetch, this module only how it looks. Shapes follow
rippled's documentation for API versions 1 and 2 (version 2: ``tx_json`` beside ``meta`` and
``hash``, ``meta_blob`` for binary metadata, integer ``ledger_index`` in a ledger header);
hashes, keys and blobs are upper-case hex.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.types import NFT, LedgerHeader, TransactionAndMetadata, nft_taxon
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.jsonform import object_to_json, to_json

JSON = dict[str, Any]

RIPPLE_EPOCH = 946684800
"""Unix time of 2000-01-01T00:00:00Z, where XRPL close times count from."""

_DELIVERED_AMOUNT_SINCE_LEDGER = 4594095
_DELIVERED_AMOUNT_SINCE_TIME = 446000000
_DELIVERED_TYPES = frozenset({sf.PAYMENT, sf.transaction_code("CheckCash")})
_ACCOUNT_DELETE = sf.ACCOUNT_DELETE


def hex_upper(value: bytes) -> str:
    """Upper-case hex, as rippled prints hashes, keys and blobs."""
    return value.hex().upper()


def decimal_text(value: Decimal) -> str:
    """A sum of amounts as plain decimal text (no exponent, no trailing zeros)."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def close_time_iso(close_time: int) -> str:
    """A ripple-epoch time as ``2013-01-01T03:21:10Z``."""
    moment = datetime.fromtimestamp(close_time + RIPPLE_EPOCH, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def close_time_human(close_time: int) -> str:
    """A ripple-epoch time as rippled's ``2013-Jan-01 03:21:10.000000000 UTC``."""
    moment = datetime.fromtimestamp(close_time + RIPPLE_EPOCH, tz=UTC)
    return moment.strftime("%Y-%b-%d %H:%M:%S.000000000 UTC")


def success(result: JSON) -> JSON:
    """The body of a successful call."""
    result["status"] = "success"
    return {"result": result}


def error_body(error: RpcError, method: str, params: Mapping[str, Any]) -> JSON:
    """rippled's error object, with the request echoed as ``request``."""
    request = dict(params)
    request["command"] = method
    return {
        "result": {
            "error": error.token,
            "error_code": error.info.code,
            "error_message": error.error_message,
            "request": request,
            "status": "error",
            **error.extra,
        }
    }


def header_json(header: LedgerHeader, api_version: int) -> JSON:
    """A ledger header as rippled's ``ledger`` object (closed and validated)."""
    return {
        "account_hash": hex_upper(header.account_hash),
        "close_flags": header.close_flags,
        "close_time": header.close_time,
        "close_time_human": close_time_human(header.close_time),
        "close_time_iso": close_time_iso(header.close_time),
        "close_time_resolution": header.close_time_resolution,
        "closed": True,
        "ledger_hash": hex_upper(header.hash),
        "ledger_index": header.sequence if api_version > 1 else str(header.sequence),
        "parent_close_time": header.parent_close_time,
        "parent_hash": hex_upper(header.parent_hash),
        "total_coins": str(header.total_drops),
        "transaction_hash": hex_upper(header.transaction_hash),
    }


def object_json(key: bytes, blob: bytes) -> JSON:
    """A ledger object decoded, with its key as ``index`` (``ledger_data``'s state entries)."""
    decoded = to_json(blob)
    decoded["index"] = hex_upper(key)
    return decoded


def binary_object_json(key: bytes, blob: bytes) -> JSON:
    """A ledger object as ``{data, index}`` (binary ``ledger_data``)."""
    return {"data": hex_upper(blob), "index": hex_upper(key)}


def metadata_json(tx_fields: binary.STObject, meta_blob: bytes, tx: TransactionAndMetadata) -> JSON:
    """Decoded metadata with rippled's synthetic ``delivered_amount`` where it applies."""
    meta_raw = binary.decode(meta_blob)
    meta = object_to_json(meta_raw)
    type_raw = tx_fields.get(sf.TRANSACTION_TYPE)
    tx_type = int.from_bytes(type_raw, "big") if isinstance(type_raw, bytes) else -1
    result_raw = meta_raw.get(sf.TRANSACTION_RESULT)
    succeeded = isinstance(result_raw, bytes) and int.from_bytes(result_raw, "big") == 0
    if succeeded and (tx_type in _DELIVERED_TYPES or tx_type == _ACCOUNT_DELETE):
        if "DeliveredAmount" in meta:
            meta["delivered_amount"] = meta["DeliveredAmount"]
        elif tx_type == sf.PAYMENT and (
            tx.ledger_sequence >= _DELIVERED_AMOUNT_SINCE_LEDGER
            or tx.date > _DELIVERED_AMOUNT_SINCE_TIME
        ):
            amount = tx_fields.get(sf.AMOUNT_FIELD)
            meta["delivered_amount"] = (
                object_to_json({sf.AMOUNT_FIELD: amount})["Amount"]
                if isinstance(amount, bytes)
                else "unavailable"
            )
        else:
            meta["delivered_amount"] = "unavailable"
    return meta


TRANSACTION_JSON_CACHE_SIZE = 4096
"""Transactions whose decoded JSON (fields and metadata) :func:`decoded_transaction` keeps."""


@functools.lru_cache(maxsize=TRANSACTION_JSON_CACHE_SIZE)
def decoded_transaction(tx: TransactionAndMetadata) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A stored transaction's fields and metadata as JSON, remembered for the most recently
    asked ones. A validated transaction never changes (the key is the stored bytes, its
    ledger and date), so a remembered answer is never stale; the same few recent transactions
    of busy accounts are what ``account_tx`` and ``tx`` are asked for again and again. The
    mappings are shared between answers: callers copy before adding a field."""
    fields = binary.decode(tx.transaction)
    return object_to_json(fields), metadata_json(fields, tx.metadata, tx)


def transaction_json(
    tx: TransactionAndMetadata,
    tx_hash: bytes,
    *,
    api_version: int,
    binary_output: bool,
    ledger_hash: bytes | None,
    nested: bool,
) -> JSON:
    """One transaction with its metadata.

    ``nested`` is the shape inside ``account_tx`` / ``nft_history`` / ``ledger`` lists (version 1
    puts the fields under ``tx``); otherwise the shape of the ``tx`` method's result.
    """
    out: JSON
    if binary_output:
        out = {"tx_blob": hex_upper(tx.transaction)}
        out["meta_blob" if api_version > 1 else "meta"] = hex_upper(tx.metadata)
        if not nested or api_version > 1:
            out["hash"] = hex_upper(tx_hash)
    else:
        shared_body, meta = decoded_transaction(tx)
        body = dict(shared_body)
        if api_version > 1:
            out = {"tx_json": body, "meta": meta, "hash": hex_upper(tx_hash)}
        else:
            body["hash"] = hex_upper(tx_hash)
            body["ledger_index"] = tx.ledger_sequence
            body["date"] = tx.date
            out = {"tx": body, "meta": meta} if nested else {**body, "meta": meta}
        if api_version > 1:
            out["close_time_iso"] = close_time_iso(tx.date)
    out["ledger_index"] = tx.ledger_sequence
    if api_version > 1 and ledger_hash is not None:
        out["ledger_hash"] = hex_upper(ledger_hash)
    if not binary_output and api_version == 1 and not nested:
        out["date"] = tx.date
    out["validated"] = True
    return out


def ledger_transaction_json(
    tx: TransactionAndMetadata, tx_hash: bytes, *, api_version: int, binary_output: bool
) -> JSON:
    """A transaction inside an expanded ``ledger`` (version 1: fields plus ``metaData``)."""
    if binary_output:
        out: JSON = {"tx_blob": hex_upper(tx.transaction)}
        out["meta_blob" if api_version > 1 else "meta"] = hex_upper(tx.metadata)
        if api_version > 1:
            out["hash"] = hex_upper(tx_hash)
        return out
    shared_body, meta = decoded_transaction(tx)
    body = dict(shared_body)
    if api_version > 1:
        return {
            "tx_json": body,
            "meta": meta,
            "hash": hex_upper(tx_hash),
            "ledger_index": tx.ledger_sequence,
            "close_time_iso": close_time_iso(tx.date),
            "validated": True,
        }
    body["hash"] = hex_upper(tx_hash)
    body["metaData"] = meta
    return body


def nft_json(nft: NFT, sequence: int) -> JSON:
    """Clio's ``nft_info`` object for a stored NFT state (the token's fields come from its ID)."""
    token = nft.token_id
    return {
        "nft_id": hex_upper(token),
        "ledger_index": sequence,
        "owner": encode_account(nft.owner),
        "is_burned": nft.is_burned,
        "flags": int.from_bytes(token[0:2], "big"),
        "transfer_fee": int.from_bytes(token[2:4], "big"),
        "issuer": encode_account(token[4:24]),
        "nft_taxon": nft_taxon(token),
        "nft_serial": int.from_bytes(token[28:32], "big"),
        "uri": "" if nft.uri is None else hex_upper(nft.uri),
    }


def quality_text(directory_key: bytes) -> str:
    """The quality of an offer's book directory (the key's low 64 bits: an exponent byte and a
    56-bit mantissa), as rippled prints an offer's ``quality``."""
    raw = int.from_bytes(directory_key[24:32], "big")
    mantissa = raw & 0x00FFFFFFFFFFFFFF
    if mantissa == 0:
        return "0"
    exponent = (raw >> 56) - 100
    return rate_text(mantissa, exponent)


def rate_text(mantissa: int, exponent: int) -> str:
    """``mantissa * 10**exponent`` as rippled's ``STAmount::getText`` (plain, or ``MeE``
    outside exponents -25..-5)."""
    if exponent != 0 and (exponent < -25 or exponent > -5):
        return f"{mantissa}e{exponent}"
    digits = str(mantissa)
    if exponent >= 0:
        return digits + "0" * exponent
    point = len(digits) + exponent
    whole, fraction = (
        (digits[:point], digits[point:]) if point > 0 else ("0", "0" * -point + digits)
    )
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def websocket_body(request_id: Any, result: JSON) -> JSON:
    """A WebSocket answer: ``{id, result, status, type}``, or an error's fields beside ``id``."""
    if result.get("status") == "error":
        return {"id": request_id, **result, "type": "response"}
    body = dict(result)
    status = body.pop("status", "success")
    return {"id": request_id, "result": body, "status": status, "type": "response"}


def websocket_malformed(message: str) -> JSON:
    """rippled's answer to a WebSocket message that is not a request."""
    return {"error": "jsonInvalid", "status": "error", "type": "response", "value": message}
