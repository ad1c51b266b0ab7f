"""Issuer-side methods: ``gateway_balances``, ``noripple_check`` and ``deposit_authorized``.

The first two read every trust line of the account (its owner directory) as the account sees it
(:func:`chainloom.ledger.xrpl.lines.line_view`); the third reads two AccountRoots and, when the
destination demands it, one DepositPreauth.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from chainloom.ledger.api import params as pm
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.account import ACCOUNT_FLAGS, account_root, walk_owned
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    resolve_ledger,
)
from chainloom.ledger.api.methods.server import fees
from chainloom.ledger.api.shapes import decimal_text
from chainloom.ledger.types import LedgerHeader
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.jsonform import to_json
from chainloom.ledger.xrpl.lines import LineView, line_view

TF_SET_NO_RIPPLE = 0x00020000
TF_CLEAR_NO_RIPPLE = 0x00040000
ASF_DEFAULT_RIPPLE = 8


def _all_lines(ctx: Context, params: pm.AccountParams, header: LedgerHeader) -> list[LineView]:
    everything = pm.AccountParams(
        account=params.account, account_text=params.account_text, ledger=params.ledger,
        limit=1 << 30,
    )  # fmt: skip
    walked = walk_owned(ctx, everything, header, sf.RIPPLE_STATE)
    return [line_view(blob, params.account) for _, blob in walked.entries]


def gateway_balances(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``gateway_balances``: what the account has issued (``obligations`` per currency), what
    its hot wallets hold (``balances``), what it holds of others' currencies (``assets``), and
    frozen balances apart."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    obligations: dict[str, Decimal] = defaultdict(Decimal)
    balances: dict[str, list[JSON]] = defaultdict(list)
    assets: dict[str, list[JSON]] = defaultdict(list)
    frozen: dict[str, list[JSON]] = defaultdict(list)
    hot = set(params.hotwallets)
    for view in _all_lines(ctx, params, header):
        balance = view.balance_value
        peer = encode_account(view.peer)
        if balance > 0:
            assets[peer].append({"currency": view.currency_text, "value": view.balance})
        elif balance < 0:
            held = {"currency": view.currency_text, "value": decimal_text(-balance)}
            if view.peer in hot:
                balances[peer].append(held)
            elif view.freeze:
                frozen[peer].append(held)
            else:
                obligations[view.currency_text] += -balance
    result = ledger_result(header)
    result["account"] = params.account_text
    if obligations:
        result["obligations"] = {
            currency: decimal_text(total) for currency, total in sorted(obligations.items())
        }
    for name, table in (("balances", balances), ("assets", assets), ("frozen_balances", frozen)):
        if table:
            result[name] = dict(table)
    return result


def noripple_check(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``noripple_check``: where the account's Default Ripple and per-line NoRipple settings
    differ from what its role (``gateway`` or ``user``) should have, with the fixing
    transactions when asked."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    root = to_json(account_root(ctx, params.account, header))
    sequence = int(root.get("Sequence", 0))
    base_fee = fees(ctx, header.sequence).get("base_fee_xrp")
    fee = str(int(base_fee * 1_000_000)) if base_fee is not None else "10"
    address = encode_account(params.account)
    gateway = params.role == "gateway"
    problems: list[str] = []
    transactions: list[JSON] = []
    default_ripple = bool(int(root.get("Flags", 0)) & ACCOUNT_FLAGS["defaultRipple"])
    if gateway and not default_ripple:
        problems.append("You should immediately set your default ripple flag")
        transactions.append({"TransactionType": "AccountSet", "Account": address, "Fee": fee,
                             "Sequence": sequence, "SetFlag": ASF_DEFAULT_RIPPLE})  # fmt: skip
        sequence += 1
    elif not gateway and default_ripple:
        problems.append(
            "You appear to have set your default ripple flag even though you are not a gateway. "
            "This is not recommended unless you are experimenting"
        )
    for view in _all_lines(ctx, params, header)[: params.limit]:
        if view.no_ripple == (not gateway):
            continue
        peer = encode_account(view.peer)
        if gateway:
            problems.append(f"You should clear the no ripple flag on your {view.currency_text} "
                            f"line to {peer}")  # fmt: skip
        else:
            problems.append(f"You should probably set the no ripple flag on your "
                            f"{view.currency_text} line to {peer}")  # fmt: skip
        transactions.append({
            "TransactionType": "TrustSet", "Account": address, "Fee": fee, "Sequence": sequence,
            "Flags": TF_CLEAR_NO_RIPPLE if gateway else TF_SET_NO_RIPPLE,
            "LimitAmount": {"currency": view.currency_text, "issuer": peer, "value": view.limit},
        })  # fmt: skip
        sequence += 1
    result = ledger_result(header)
    result["problems"] = problems
    if params.transactions:
        result["transactions"] = transactions
    return result


def deposit_authorized(ctx: Context, params: pm.DepositAuthorizedParams, api_version: int) -> JSON:
    """``deposit_authorized``: whether the source may pay the destination (Deposit
    Authorization: the destination's flag, or a DepositPreauth it granted)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    if read_object(ctx, keylets.account_root(params.source), header.sequence) is None:
        raise RpcError("srcActNotFound")
    destination = read_object(ctx, keylets.account_root(params.destination), header.sequence)
    if destination is None:
        raise RpcError("dstActNotFound")
    flags = int(to_json(destination).get("Flags", 0))
    authorized = (
        not flags & ACCOUNT_FLAGS["depositAuth"]
        or params.source == params.destination
        or read_object(
            ctx, keylets.deposit_preauth(params.destination, params.source), header.sequence
        )
        is not None
    )
    result = ledger_result(header)
    result["deposit_authorized"] = authorized
    result["source_account"] = params.source_text
    result["destination_account"] = params.destination_text
    return result
