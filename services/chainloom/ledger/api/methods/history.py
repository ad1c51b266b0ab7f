"""Transaction methods: ``tx``, ``transaction_entry``, and the paged histories ``account_tx`` and
``nft_history`` (Clio's ``{ledger, seq}`` markers, kept inside the ledger window asked for)."""

from __future__ import annotations

from collections.abc import Callable

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    read_object,
    resolve_ledger,
    stored_range,
)
from chainloom.ledger.types import UINT32_MAX, TransactionsAndCursor, TransactionsCursor
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.hashing import transaction_id


def tx(ctx: Context, params: rq.TxParams, api_version: int) -> JSON:
    """``tx``: one transaction by hash, with metadata."""
    found = ctx.backend.fetch_transaction(params.tx_hash)
    if found is None:
        extra: dict[str, object] = {}
        if params.min_ledger is not None and params.max_ledger is not None:
            current = ctx.backend.fetch_ledger_range()
            extra["searched_all"] = (
                current is not None
                and current.min_sequence <= params.min_ledger
                and params.max_ledger <= current.max_sequence
            )
        raise RpcError("txnNotFound", extra=extra)
    header = ctx.backend.fetch_ledger_by_sequence(found.ledger_sequence)
    result = shapes.transaction_json(
        found,
        params.tx_hash,
        api_version=api_version,
        binary_output=params.binary,
        ledger_hash=None if header is None else header.hash,
        nested=False,
    )
    if api_version == 1:
        result["inLedger"] = found.ledger_sequence
    return result


def _history_window(ctx: Context, params: rq.HistoryParams) -> tuple[int, int]:
    current = stored_range(ctx)
    if params.ledger is not None:
        sequence = resolve_ledger(ctx, params.ledger).sequence
        return sequence, sequence
    low = current.min_sequence if params.ledger_min is None else params.ledger_min
    high = current.max_sequence if params.ledger_max is None else params.ledger_max
    low, high = max(low, current.min_sequence), min(high, current.max_sequence)
    if low > high:
        raise RpcError("lgrIdxsInvalid", "ledger range outside the stored ledgers")
    return low, high


def _history(
    ctx: Context,
    params: rq.HistoryParams,
    api_version: int,
    fetch: Callable[[int, bool, TransactionsCursor | None], TransactionsAndCursor],
    *,
    inclusive_forward: bool,
) -> tuple[JSON, int, int]:
    """One page of a history, kept inside the ledger window; returns the result and the window."""
    low, high = _history_window(ctx, params)
    if params.forward:
        start = TransactionsCursor(low, 0) if inclusive_forward else None
        if not inclusive_forward and low > 0:
            start = TransactionsCursor(low - 1, UINT32_MAX)
        cursor = start
        if params.marker is not None and (
            start is None
            or (params.marker.ledger_sequence, params.marker.transaction_index)
            > (start.ledger_sequence, start.transaction_index)
        ):
            cursor = params.marker
    else:
        cursor = TransactionsCursor(high + 1, 0) if high < UINT32_MAX else None
        if params.marker is not None and (
            cursor is None
            or (params.marker.ledger_sequence, params.marker.transaction_index)
            < (cursor.ledger_sequence, cursor.transaction_index)
        ):
            cursor = params.marker
    page = fetch(params.limit, params.forward, cursor)
    inside = [tx for tx in page.transactions if low <= tx.ledger_sequence <= high]
    ledger_hashes: dict[int, bytes | None] = {}
    if api_version > 1:
        for sequence in {tx.ledger_sequence for tx in inside}:
            header = ctx.backend.fetch_ledger_by_sequence(sequence)
            ledger_hashes[sequence] = None if header is None else header.hash
    transactions = [
        shapes.transaction_json(
            tx,
            transaction_id(tx.transaction),
            api_version=api_version,
            binary_output=params.binary,
            ledger_hash=ledger_hashes.get(tx.ledger_sequence),
            nested=True,
        )
        for tx in inside
    ]
    result: JSON = {
        "ledger_index_min": low,
        "ledger_index_max": high,
        "limit": params.limit,
        "transactions": transactions,
        "validated": True,
    }
    if page.cursor is not None and len(inside) == len(page.transactions):
        result["marker"] = {
            "ledger": page.cursor.ledger_sequence,
            "seq": page.cursor.transaction_index,
        }
    return result, low, high


def account_tx(ctx: Context, params: rq.HistoryParams, api_version: int) -> JSON:
    """``account_tx``: an account's transactions, paged with ``{ledger, seq}`` markers."""
    low, high = _history_window(ctx, params)
    del low
    if read_object(ctx, keylets.account_root(params.subject), high) is None:
        raise RpcError("actNotFound")

    def fetch(
        limit: int, forward: bool, cursor: TransactionsCursor | None
    ) -> TransactionsAndCursor:
        return ctx.backend.fetch_account_transactions(params.subject, limit, forward, cursor)

    result, _, _ = _history(ctx, params, api_version, fetch, inclusive_forward=False)
    return {"account": params.subject_text, **result}


def nft_history(ctx: Context, params: rq.HistoryParams, api_version: int) -> JSON:
    """``nft_history`` (Clio): an NFT's transactions, paged like ``account_tx``."""

    def fetch(
        limit: int, forward: bool, cursor: TransactionsCursor | None
    ) -> TransactionsAndCursor:
        return ctx.backend.fetch_nft_transactions(params.subject, limit, forward, cursor)

    result, _, _ = _history(ctx, params, api_version, fetch, inclusive_forward=True)
    return {"nft_id": shapes.hex_upper(params.subject), **result}


def transaction_entry(ctx: Context, params: pm.TransactionEntryParams, api_version: int) -> JSON:
    """``transaction_entry``: a transaction *of one given ledger* (``txnNotFound`` when it is in
    another, or in none); version 1 puts ``hash`` inside ``tx_json``, later versions beside it
    with ``close_time_iso``."""
    header = resolve_ledger(ctx, params.ledger)
    found = ctx.backend.fetch_transaction(params.tx_hash)
    if found is None or found.ledger_sequence != header.sequence:
        raise RpcError("txnNotFound")
    shaped = shapes.transaction_json(
        found,
        params.tx_hash,
        api_version=2,
        binary_output=False,
        ledger_hash=header.hash,
        nested=True,
    )
    result: JSON = {
        "ledger_index": header.sequence,
        "ledger_hash": shapes.hex_upper(header.hash),
        "metadata": shaped["meta"],
        "tx_json": shaped["tx_json"],
        "validated": True,
    }
    if api_version == 1:
        result["tx_json"]["hash"] = shaped["hash"]
    else:
        result["hash"] = shaped["hash"]
        result["close_time_iso"] = shaped["close_time_iso"]
    return result
