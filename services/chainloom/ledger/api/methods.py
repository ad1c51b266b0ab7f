"""The API's methods over :class:`~chainloom.ledger.backend.BackendInterface`.

Each method takes validated parameters (:mod:`.requests`) and the backend, makes the backend
calls Clio makes for it (see ``docs/ledger-api.md``), and returns the ``result`` object built by
:mod:`.shapes`. Methods are synchronous, like the backends; the server runs them on a bounded
thread pool. Which ledger a request sees is decided once, from the range the backend last
saw (the server refreshes it), so a reader never sees a ledger that is not fully written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.types import (
    UINT32_MAX,
    LedgerHeader,
    LedgerRange,
    TransactionsAndCursor,
    TransactionsCursor,
)
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.hashing import sha512_half, transaction_id
from chainloom.ledger.xrpl.jsonform import to_json

JSON = dict[str, Any]

FEE_SETTINGS_KEY = sha512_half(b"\x00e")
"""The key of the FeeSettings object (rippled ``keylet::fees``)."""

_DROPS_PER_XRP = 1_000_000


@dataclass(frozen=True)
class Context:
    """What every method may use: the backend and facts about this server."""

    backend: BackendInterface
    """The ledger history store."""
    version: str = "0"
    """The server's version (``server_info.build_version``)."""
    started: float = field(default_factory=time.monotonic)
    """When the server started (for ``uptime``)."""


# --- helpers -----------------------------------------------------------------------------------


def stored_range(ctx: Context) -> LedgerRange:
    """The committed range; ``lgrNotFound`` when nothing is stored yet."""
    found = ctx.backend.fetch_ledger_range()
    if found is None:
        raise RpcError("lgrNotFound", "ledgerNotFound (no ledgers stored)")
    return found


def resolve_ledger(ctx: Context, selector: rq.LedgerSelector) -> LedgerHeader:
    """The header a selector names; ``lgrNotFound`` outside the stored range."""
    header: LedgerHeader | None
    if selector.ledger_hash is not None:
        header = ctx.backend.fetch_ledger_by_hash(selector.ledger_hash)
    else:
        sequence = selector.sequence
        if sequence is None:
            sequence = stored_range(ctx).max_sequence
        header = ctx.backend.fetch_ledger_by_sequence(sequence)
    if header is None:
        raise RpcError("lgrNotFound")
    return header


def _ledger_result(header: LedgerHeader) -> JSON:
    return {
        "ledger_hash": shapes.hex_upper(header.hash),
        "ledger_index": header.sequence,
        "validated": True,
    }


# --- methods -----------------------------------------------------------------------------------


def server_info(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``server_info``: the complete ledgers (the stored range) and the newest ledger."""
    del params, api_version
    found = ctx.backend.fetch_ledger_range()
    info: JSON = {
        "build_version": f"chainloom-{ctx.version}",
        "complete_ledgers": (
            "empty" if found is None else f"{found.min_sequence}-{found.max_sequence}"
        ),
        "hostid": "chainloom",
        "load_factor": 1,
        "peers": 0,
        "server_state": "full",
        "uptime": int(time.monotonic() - ctx.started),
    }
    if found is not None:
        header = ctx.backend.fetch_ledger_by_sequence(found.max_sequence)
        if header is not None:
            validated: JSON = {
                "age": max(0, int(time.time()) - shapes.RIPPLE_EPOCH - header.close_time),
                "hash": shapes.hex_upper(header.hash),
                "seq": header.sequence,
            }
            validated.update(_fees(ctx, header.sequence))
            info["validated_ledger"] = validated
    return {"info": info}


def _fees(ctx: Context, sequence: int) -> JSON:
    blob = ctx.backend.fetch_ledger_object(FEE_SETTINGS_KEY, sequence)
    if blob is None:
        return {}
    fees = to_json(blob)

    def drops(new: str, old: str) -> int | None:
        if new in fees:
            return int(fees[new])
        if old in fees:
            value = fees[old]
            return int(value, 16) if isinstance(value, str) else int(value)
        return None

    out: JSON = {}
    for name, new, old in (
        ("base_fee_xrp", "BaseFeeDrops", "BaseFee"),
        ("reserve_base_xrp", "ReserveBaseDrops", "ReserveBase"),
        ("reserve_inc_xrp", "ReserveIncrementDrops", "ReserveIncrement"),
    ):
        value = drops(new, old)
        if value is not None:
            out[name] = value / _DROPS_PER_XRP
    return out


def ledger_range(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``ledger_range`` (Clio): the stored range."""
    del params, api_version
    found = stored_range(ctx)
    return {"ledger_index_min": found.min_sequence, "ledger_index_max": found.max_sequence}


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
    result = _ledger_result(header)
    result["ledger"] = body
    return result


def ledger_data(ctx: Context, params: rq.LedgerDataParams, api_version: int) -> JSON:
    """``ledger_data``: one page of the state, walked through the successor list."""
    header = resolve_ledger(ctx, params.ledger)
    if params.marker is not None and not ctx.backend.fetch_ledger_object(
        params.marker, header.sequence
    ):
        raise invalid_params("markerDoesNotExist")
    page = ctx.backend.fetch_ledger_page(params.marker, header.sequence, params.limit)
    render = shapes.binary_object_json if params.binary else shapes.object_json
    result = _ledger_result(header)
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
    blob = ctx.backend.fetch_ledger_object(params.key, header.sequence)
    if blob is None:
        raise RpcError("entryNotFound")
    result = _ledger_result(header)
    result["index"] = shapes.hex_upper(params.key)
    if params.binary:
        result["node_binary"] = shapes.hex_upper(blob)
    else:
        result["node"] = to_json(blob)
    return result


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
    if ctx.backend.fetch_ledger_object(keylets.account_root(params.subject), high) is None:
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


def nft_info(ctx: Context, params: rq.NftInfoParams, api_version: int) -> JSON:
    """``nft_info`` (Clio): an NFT's owner, URI and burn state at a ledger."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    found = ctx.backend.fetch_nft(params.nft_id, header.sequence)
    if found is None:
        raise RpcError("objectNotFound", "NFT not found")
    result = shapes.nft_json(found, header.sequence)
    result["validated"] = True
    return result


def nfts_by_issuer(ctx: Context, params: rq.NftsByIssuerParams, api_version: int) -> JSON:
    """``nfts_by_issuer`` (Clio): an issuer's NFTs in (taxon, ID) order, paged by NFT ID."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    page = ctx.backend.fetch_nfts_by_issuer(
        params.issuer, params.taxon, header.sequence, params.limit, params.marker
    )
    result: JSON = {
        "issuer": params.issuer_text,
        "ledger_index": header.sequence,
        "limit": params.limit,
        "nfts": [shapes.nft_json(nft, header.sequence) for nft in page.nfts],
        "validated": True,
    }
    if params.taxon is not None:
        result["nft_taxon"] = params.taxon
    if page.cursor is not None:
        result["marker"] = shapes.hex_upper(page.cursor)
    return result


def book_offers(ctx: Context, params: rq.BookOffersParams, api_version: int) -> JSON:
    """``book_offers``: the best offers of a book as stored (no funding adjustments)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    page = ctx.backend.fetch_book_offers(params.book, header.sequence, params.limit)
    offers = []
    for offer in page.offers:
        decoded = to_json(offer.blob)
        decoded["index"] = shapes.hex_upper(offer.key)
        directory = binary.decode(offer.blob).get(sf.BOOK_DIRECTORY)
        if isinstance(directory, bytes):
            decoded["quality"] = shapes.quality_text(directory)
        offers.append(decoded)
    result = _ledger_result(header)
    result["offers"] = offers
    return result


Method = Callable[[Context, Any, int], JSON]

METHODS: dict[str, Method] = {
    "server_info": server_info,
    "ledger_range": ledger_range,
    "ledger": ledger,
    "ledger_data": ledger_data,
    "ledger_entry": ledger_entry,
    "tx": tx,
    "account_tx": account_tx,
    "nft_info": nft_info,
    "nft_history": nft_history,
    "nfts_by_issuer": nfts_by_issuer,
    "book_offers": book_offers,
}
"""Every method, by name (the same names as :data:`.requests.PARSERS`)."""


def answer(ctx: Context, method: str, params: rq.Params, api_version: int) -> JSON:
    """Run one validated call; the ``result`` object (without ``status``)."""
    return METHODS[method](ctx, params, api_version)
