"""Clio's ``book_changes``, pure: a ledger's offer fills per pair of assets, from its
transactions' metadata.

Both the ``book_changes`` method and the ``book_changes`` stream build their answer here, from a
header and the ledger's stored transactions, so the two cannot drift apart.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chainloom.ledger.api.shapes import decimal_text, hex_upper
from chainloom.ledger.types import LedgerHeader, TransactionAndMetadata
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.address import encode_account
from chainloom.ledger.xrpl.jsonform import currency_text, issued_value_text

_RATE_CONTEXT = decimal.Context(prec=16)


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


def transaction_index(meta_blob: bytes) -> int:
    """The ``TransactionIndex`` of a metadata blob (0 when it has none)."""
    value = binary.decode(meta_blob).get(sf.TRANSACTION_INDEX)
    return int.from_bytes(value, "big") if isinstance(value, bytes) else 0


def book_changes_result(
    header: LedgerHeader, transactions: Iterable[TransactionAndMetadata]
) -> dict[str, Any]:
    """Clio's ``bookChanges`` object of one ledger: per pair of assets, the volumes traded and
    the open, close, high and low rate (``a / b``), in transaction order."""
    books: dict[tuple[str, str], _Book] = {}
    ordered = sorted(transactions, key=lambda tx: transaction_index(tx.metadata))
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
        "ledger_hash": hex_upper(header.hash),
        "ledger_index": header.sequence,
        "ledger_time": header.close_time,
        "validated": True,
        "changes": changes,
    }
