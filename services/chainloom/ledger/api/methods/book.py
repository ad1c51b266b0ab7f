"""Order-book and AMM methods: ``book_offers``, Clio's ``book_changes`` (a ledger's trades
per book, from its transactions' metadata) and ``amm_info``."""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from decimal import Decimal

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    resolve_ledger,
)
from chainloom.ledger.api.methods.gateway import decimal_text
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.jsonform import currency_text, issued_value_text, to_json
from chainloom.ledger.xrpl.lines import line_view

_RATE_CONTEXT = decimal.Context(prec=16)
_AMM_ID = sf.field_key("AMMID")
_ASSET = sf.field_key("Asset")
_ASSET2 = sf.field_key("Asset2")
_LP_TOKEN_BALANCE = sf.field_key("LPTokenBalance")
_TRADING_FEE = sf.field_key("TradingFee")
_GLOBAL_FREEZE = 0x00400000  # lsfGlobalFreeze of an issuer


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
    result = ledger_result(header)
    result["offers"] = offers
    return result


# ------------------------------------------------------------------------------ book_changes


def _amount(value: bytes) -> tuple[str, Decimal]:
    """An Amount as ``(asset, quantity)``: ``XRP_drops`` and drops, or ``issuer/currency``."""
    if len(value) == 8:
        raw = int.from_bytes(value, "big")
        drops = raw & 0x3FFFFFFFFFFFFFFF
        return "XRP_drops", Decimal(drops if raw & 0x4000000000000000 or drops == 0 else -drops)
    if len(value) == 48:
        asset = f"{encode_account(value[28:48])}/{currency_text(value[8:28])}"
        return asset, Decimal(issued_value_text(value[:8]))
    return "", Decimal(0)


@dataclass
class _Book:
    volume_a: Decimal = Decimal(0)
    volume_b: Decimal = Decimal(0)
    rates: list[Decimal] = field(default_factory=list)


def trades(meta_blob: bytes) -> list[tuple[str, Decimal, str, Decimal]]:
    """The offer fills one transaction's metadata records, as ``(asset_a, quantity_a, asset_b,
    quantity_b)`` with XRP first, else the assets in text order."""
    found = []
    meta = binary.decode(meta_blob)
    nodes = meta.get(sf.AFFECTED_NODES, [])
    for kind, node in nodes if isinstance(nodes, list) else []:
        if kind not in (sf.MODIFIED_NODE, sf.DELETED_NODE):
            continue
        entry = node.get(sf.LEDGER_ENTRY_TYPE)
        if not isinstance(entry, bytes) or int.from_bytes(entry, "big") != sf.OFFER:
            continue
        final, previous = node.get(sf.FINAL_FIELDS), node.get(sf.PREVIOUS_FIELDS)
        if not isinstance(final, dict) or not isinstance(previous, dict):
            continue
        values = [d.get(k) for d in (previous, final) for k in (sf.TAKER_GETS, sf.TAKER_PAYS)]
        if not all(isinstance(v, bytes) for v in values):
            continue
        (gets_asset, gets_before), (pays_asset, pays_before), (_, gets_after), (_, pays_after) = (
            _amount(v) for v in values if isinstance(v, bytes)
        )
        gets, pays = gets_before - gets_after, pays_before - pays_after
        if gets <= 0 or pays <= 0:
            continue
        keep = gets_asset == "XRP_drops" or (pays_asset != "XRP_drops" and gets_asset < pays_asset)
        found.append(
            (gets_asset, gets, pays_asset, pays) if keep else (pays_asset, pays, gets_asset, gets)
        )
    return found


def _transaction_index(meta_blob: bytes) -> int:
    value = binary.decode(meta_blob).get(sf.TRANSACTION_INDEX)
    return int.from_bytes(value, "big") if isinstance(value, bytes) else 0


def book_changes(ctx: Context, params: pm.LedgerOnlyParams, api_version: int) -> JSON:
    """``book_changes`` (Clio): per pair of assets, the volumes traded in the ledger and the
    open, close, high and low rate (``a / b``), in transaction order."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    books: dict[tuple[str, str], _Book] = {}
    found = ctx.backend.fetch_all_transactions_in_ledger(header.sequence)
    ordered = sorted(found, key=lambda tx: _transaction_index(tx.metadata))
    for tx in ordered:
        for asset_a, quantity_a, asset_b, quantity_b in trades(tx.metadata):
            book = books.setdefault((asset_a, asset_b), _Book())
            book.volume_a += quantity_a
            book.volume_b += quantity_b
            book.rates.append(_RATE_CONTEXT.divide(quantity_a, quantity_b))
    changes = [
        {
            "currency_a": asset_a,
            "currency_b": asset_b,
            "volume_a": decimal_text(book.volume_a),
            "volume_b": decimal_text(book.volume_b),
            "high": decimal_text(max(book.rates)),
            "low": decimal_text(min(book.rates)),
            "open": decimal_text(book.rates[0]),
            "close": decimal_text(book.rates[-1]),
        }
        for (asset_a, asset_b), book in sorted(books.items())
    ]
    return {
        "type": "bookChanges",
        "ledger_hash": shapes.hex_upper(header.hash),
        "ledger_index": header.sequence,
        "ledger_time": header.close_time,
        "validated": True,
        "changes": changes,
    }


# ---------------------------------------------------------------------------------- amm_info


def _issue(value: object) -> tuple[bytes, bytes]:
    if isinstance(value, bytes) and len(value) >= 20:
        currency = value[:20]
        return currency, value[20:40] if any(currency) else bytes(20)
    return bytes(20), bytes(20)


def amm_info(ctx: Context, params: pm.AmmInfoParams, api_version: int) -> JSON:
    """``amm_info``: the AMM's pool (its account's balances of both assets), LP tokens, fee,
    votes and auction slot. An ``amm_account`` that is not an AMM is ``actMalformed`` before
    version 3 and ``actNotFound`` from it on."""
    header = resolve_ledger(ctx, params.ledger)
    if params.amm_account is not None:
        root = read_object(ctx, keylets.account_root(params.amm_account), header.sequence)
        if root is None:
            raise RpcError("actNotFound")
        amm_id = binary.decode(root).get(_AMM_ID)
        if not isinstance(amm_id, bytes):
            raise RpcError("actNotFound" if api_version >= 3 else "actMalformed")
        key = amm_id
    else:
        assert params.assets is not None
        key = keylets.amm(*params.assets)
    blob = read_object(ctx, key, header.sequence)
    if blob is None:
        raise RpcError("actNotFound")
    node = binary.decode(blob)
    decoded = to_json(blob)
    account_raw = node.get(sf.ACCOUNT)
    if not isinstance(account_raw, bytes):
        raise RpcError("internal", "AMM object without Account")
    amm: JSON = {"account": decoded["Account"]}
    for name, field_key in (("amount", _ASSET), ("amount2", _ASSET2)):
        currency, issuer = _issue(node.get(field_key))
        amm[name] = _pool_balance(ctx, account_raw, currency, issuer, header.sequence)
        if any(currency):
            issuer_root = read_object(ctx, keylets.account_root(issuer), header.sequence)
            flags = int(to_json(issuer_root).get("Flags", 0)) if issuer_root else 0
            amm[f"asset{'' if name == 'amount' else '2'}_frozen"] = bool(flags & _GLOBAL_FREEZE)
    amm["lp_token"] = decoded.get("LPTokenBalance")
    amm["trading_fee"] = int(decoded.get("TradingFee", 0))
    if "VoteSlots" in decoded:
        amm["vote_slots"] = [
            {"account": slot["VoteEntry"]["Account"],
             "trading_fee": slot["VoteEntry"].get("TradingFee", 0),
             "vote_weight": slot["VoteEntry"].get("VoteWeight", 0)}
            for slot in decoded["VoteSlots"]
        ]  # fmt: skip
    if "AuctionSlot" in decoded:
        amm["auction_slot"] = decoded["AuctionSlot"]
    result = ledger_result(header)
    result["amm"] = amm
    return result


def _pool_balance(
    ctx: Context, account: bytes, currency: bytes, issuer: bytes, sequence: int
) -> object:
    if not any(currency):
        root = read_object(ctx, keylets.account_root(account), sequence)
        return to_json(root)["Balance"] if root else "0"
    line = read_object(ctx, keylets.ripple_state(account, issuer, currency), sequence)
    value = "0" if line is None else line_view(line, account).balance
    return {"currency": currency_text(currency), "issuer": encode_account(issuer), "value": value}
