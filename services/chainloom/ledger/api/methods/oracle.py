"""``get_aggregate_price``: statistics over the prices price Oracles publish for one pair.

Each Oracle named is read at the ledger; its ``PriceDataSeries`` entry for the pair gives a price
``AssetPrice * 10^-Scale`` and the Oracle its ``LastUpdateTime``. rippled also looks back through
an Oracle's earlier versions when the newest lacks the pair; this server reads the ledger's
version only. Statistics are computed with 16 significant digits.
"""

from __future__ import annotations

import decimal
from decimal import Decimal

from chainloom.ledger.api import params as pm
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_objects,
    resolve_ledger,
)
from chainloom.ledger.api.shapes import decimal_text
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf

_CONTEXT = decimal.Context(prec=16)
_SERIES = sf.field_key("PriceDataSeries")
_BASE = sf.field_key("BaseAsset")
_QUOTE = sf.field_key("QuoteAsset")
_PRICE = sf.field_key("AssetPrice")
_SCALE = sf.field_key("Scale")
_UPDATED = sf.field_key("LastUpdateTime")


def oracle_price(blob: bytes, base: bytes, quote: bytes) -> tuple[Decimal, int] | None:
    """The Oracle's price for ``base``/``quote`` and its update time, if it publishes one."""
    node = binary.decode(blob)
    updated = node.get(_UPDATED)
    series = node.get(_SERIES, [])
    for _, entry in series if isinstance(series, list) else []:
        price = entry.get(_PRICE)
        if entry.get(_BASE) != base or entry.get(_QUOTE) != quote or not isinstance(price, bytes):
            continue
        scale = entry.get(_SCALE)
        exponent = -int.from_bytes(scale, "big") if isinstance(scale, bytes) else 0
        when = int.from_bytes(updated, "big") if isinstance(updated, bytes) else 0
        return Decimal(int.from_bytes(price, "big")).scaleb(exponent), when
    return None


def statistics(prices: list[Decimal]) -> JSON:
    """``{mean, size, standard_deviation}`` (the sample deviation; 0 for one price)."""
    size = len(prices)
    mean = _CONTEXT.divide(sum(prices, Decimal(0)), Decimal(size))
    deviation = Decimal(0)
    if size > 1:
        squares = sum(((price - mean) ** 2 for price in prices), Decimal(0))
        deviation = _CONTEXT.divide(squares, Decimal(size - 1)).sqrt(_CONTEXT)
    return {
        "mean": decimal_text(mean),
        "size": size,
        "standard_deviation": decimal_text(deviation),
    }


def get_aggregate_price(ctx: Context, params: pm.AggregatePriceParams, api_version: int) -> JSON:
    """``get_aggregate_price``: mean, size and deviation of every price (``entire_set``) and of
    the middle ones (``trimmed_set``, without ``trim`` percent at each end), the median, and the
    newest update time; ``objectNotFound`` when no Oracle publishes the pair."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    keys = [keylets.oracle(owner, document) for owner, document in params.oracles]
    found = [
        price
        for blob in read_objects(ctx, keys, header.sequence)
        if blob and (price := oracle_price(blob, params.base, params.quote)) is not None
    ]
    if not found:
        raise RpcError("objectNotFound")
    newest = max(when for _, when in found)
    if params.time_threshold is not None:
        found = [(p, when) for p, when in found if newest - when <= params.time_threshold]
    prices = sorted(price for price, _ in found)
    middle = len(prices) // 2
    median = (
        prices[middle]
        if len(prices) % 2
        else _CONTEXT.divide(prices[middle - 1] + prices[middle], Decimal(2))
    )
    result = ledger_result(header)
    result["entire_set"] = statistics(prices)
    result["median"] = decimal_text(median)
    result["time"] = newest
    if params.trim is not None:
        cut = len(prices) * params.trim // 100
        result["trimmed_set"] = statistics(prices[cut : len(prices) - cut] or prices)
    return result
