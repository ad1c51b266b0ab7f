"""Order-book and AMM methods: ``book_offers``, Clio's ``book_changes`` (a ledger's trades
per book, from its transactions' metadata) and ``amm_info``."""

from __future__ import annotations

import decimal

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.bookchanges import book_changes_result
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    resolve_ledger,
)
from chainloom.ledger.api.methods.context import book_offers as book_offers_of
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.jsonform import currency_text, to_json
from chainloom.ledger.xrpl.lines import line_view

_RATE_CONTEXT = decimal.Context(prec=16)
_AMM_ID = sf.field_key("AMMID")
_ASSET = sf.field_key("Asset")
_ASSET2 = sf.field_key("Asset2")
_LP_TOKEN_BALANCE = sf.field_key("LPTokenBalance")
_TRADING_FEE = sf.field_key("TradingFee")
_GLOBAL_FREEZE = 0x00400000  # lsfGlobalFreeze of an issuer


def book_offers(ctx: Context, params: rq.BookOffersParams, api_version: int) -> JSON:
    """``book_offers``: the best offers of a book as stored (no funding adjustments), from
    the cache on the newest ledger."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    offers = []
    for offer in book_offers_of(ctx, params.book, header.sequence, params.limit):
        decoded = to_json(offer.blob)
        decoded["index"] = shapes.hex_upper(offer.key)
        directory = decoded.get("BookDirectory")
        if isinstance(directory, str):
            decoded["quality"] = shapes.quality_text(bytes.fromhex(directory))
        offers.append(decoded)
    result = ledger_result(header)
    result["offers"] = offers
    return result


# ------------------------------------------------------------------------------ book_changes


def book_changes(ctx: Context, params: pm.LedgerOnlyParams, api_version: int) -> JSON:
    """``book_changes`` (Clio): per pair of assets, the volumes traded in the ledger and the
    open, close, high and low rate (``a / b``), in transaction order
    (:func:`chainloom.ledger.api.bookchanges.book_changes_result`)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    found = ctx.backend.fetch_all_transactions_in_ledger(header.sequence)
    return book_changes_result(header, found)


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
