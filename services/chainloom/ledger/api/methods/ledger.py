"""Ledger methods: ``ledger``, ``ledger_data``, ``ledger_entry`` and Clio's ``ledger_index``."""

from __future__ import annotations

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    resolve_ledger,
    stored_range,
)
from chainloom.ledger.xrpl.jsonform import to_json


def ledger(ctx: Context, params: rq.LedgerParams, api_version: int) -> JSON:
    """``ledger``: the header, and the transactions (hashes, or expanded) when asked."""
    header = resolve_ledger(ctx, params.ledger)
    body = shapes.header_json(header, api_version)
    if params.transactions:
        hashes = ctx.backend.fetch_all_transaction_hashes_in_ledger(header.sequence)
        if params.expand:
            found = ctx.backend.fetch_transactions(hashes)
            body["transactions"] = [
                shapes.ledger_transaction_json(
                    tx, tx_hash, api_version=api_version, binary_output=params.binary
                )
                for tx_hash, tx in zip(hashes, found, strict=True)
                if tx is not None
            ]
        else:
            body["transactions"] = [shapes.hex_upper(tx_hash) for tx_hash in hashes]
    result = ledger_result(header)
    result["ledger"] = body
    return result


def ledger_data(ctx: Context, params: rq.LedgerDataParams, api_version: int) -> JSON:
    """``ledger_data``: one page of the state, walked through the successor list."""
    header = resolve_ledger(ctx, params.ledger)
    if params.marker is not None and not read_object(ctx, params.marker, header.sequence):
        raise invalid_params("markerDoesNotExist")
    page = ctx.backend.fetch_ledger_page(params.marker, header.sequence, params.limit)
    render = shapes.binary_object_json if params.binary else shapes.object_json
    result = ledger_result(header)
    if params.marker is None and not params.binary:
        result["ledger"] = shapes.header_json(header, api_version)
    result["state"] = [render(obj.key, obj.blob) for obj in page.objects]
    if page.cursor is not None:
        result["marker"] = shapes.hex_upper(page.cursor)
    return result


def ledger_entry(ctx: Context, params: rq.LedgerEntryParams, api_version: int) -> JSON:
    """``ledger_entry``: one object by key; ``entryNotFound`` when it is not in that ledger."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    blob = read_object(ctx, params.key, header.sequence)
    if blob is None:
        raise RpcError("entryNotFound")
    result = ledger_result(header)
    result["index"] = shapes.hex_upper(params.key)
    if params.binary:
        result["node_binary"] = shapes.hex_upper(blob)
    else:
        result["node"] = to_json(blob)
    return result


def ledger_index(ctx: Context, params: pm.LedgerIndexParams, api_version: int) -> JSON:
    """``ledger_index`` (Clio): the newest ledger closed at or before ``date`` (ISO 8601), or the
    newest stored ledger; ``lgrNotFound`` when every stored ledger closed later."""
    del api_version
    found = stored_range(ctx)
    low, high = found.min_sequence, found.max_sequence
    if params.date is not None:
        wanted = int(params.date.timestamp()) - shapes.RIPPLE_EPOCH
        best = None
        while low <= high:
            middle = (low + high) // 2
            header = ctx.backend.fetch_ledger_by_sequence(middle)
            if header is None:
                raise RpcError("lgrNotFound")
            if header.close_time <= wanted:
                best, low = middle, middle + 1
            else:
                high = middle - 1
        if best is None:
            raise RpcError("lgrNotFound")
        high = best
    header = ctx.backend.fetch_ledger_by_sequence(high)
    if header is None:
        raise RpcError("lgrNotFound")
    return {
        "ledger_index": header.sequence,
        "ledger_hash": shapes.hex_upper(header.hash),
        "closed": shapes.close_time_iso(header.close_time),
    }
