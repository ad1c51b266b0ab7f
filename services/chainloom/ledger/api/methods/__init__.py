"""The API's methods over :class:`~chainloom.ledger.backend.BackendInterface`, one module per
family.

Each method takes validated parameters (:mod:`..requests`, :mod:`..params`) and the
:class:`.context.Context`, makes the backend calls Clio makes for it (see
``docs/ledger-api.md``), and returns the ``result`` object. Methods are synchronous, like the
backends; the server runs them on a bounded thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.methods import (
    account,
    book,
    gateway,
    history,
    ledger,
    nft,
    oracle,
    server,
)
from chainloom.ledger.api.methods.context import JSON, Context

Method = Callable[[Context, Any, int], JSON]

METHODS: dict[str, Method] = {
    "server_info": server.server_info,
    "ledger_range": server.ledger_range,
    "version": server.version,
    "ping": server.ping,
    "random": server.random,
    "feature": server.feature,
    "ledger": ledger.ledger,
    "ledger_data": ledger.ledger_data,
    "ledger_entry": ledger.ledger_entry,
    "ledger_index": ledger.ledger_index,
    "tx": history.tx,
    "transaction_entry": history.transaction_entry,
    "account_tx": history.account_tx,
    "nft_history": history.nft_history,
    "nft_info": nft.nft_info,
    "nfts_by_issuer": nft.nfts_by_issuer,
    "nft_buy_offers": nft.nft_buy_offers,
    "nft_sell_offers": nft.nft_sell_offers,
    "account_info": account.account_info,
    "account_lines": account.account_lines,
    "account_objects": account.account_objects,
    "account_offers": account.account_offers,
    "account_channels": account.account_channels,
    "account_currencies": account.account_currencies,
    "account_nfts": account.account_nfts,
    "gateway_balances": gateway.gateway_balances,
    "noripple_check": gateway.noripple_check,
    "deposit_authorized": gateway.deposit_authorized,
    "book_offers": book.book_offers,
    "book_changes": book.book_changes,
    "amm_info": book.amm_info,
    "get_aggregate_price": oracle.get_aggregate_price,
    "mpt_holders": nft.mpt_holders,
}
"""Every method, by name (the same names as :data:`..requests.PARSERS`)."""

__all__ = ["METHODS", "Context", "Method", "answer"]


def answer(ctx: Context, method: str, params: rq.Params, api_version: int) -> JSON:
    """Run one validated call; the ``result`` object (without ``status``)."""
    return METHODS[method](ctx, params, api_version)
