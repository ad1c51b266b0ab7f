"""The messages of rippled's subscription streams, pure: built from a stored ledger.

A committed ledger (its header, its transactions with metadata, its FeeSettings object) becomes
the messages rippled publishes when it validates a ledger, in rippled's order: ``ledgerClosed``
(stream ``ledger``), ``bookChanges`` (``book_changes``), then one ``transaction`` message per
transaction in ``TransactionIndex`` order (``transactions``, and ``accounts`` / ``books`` for the
transactions that touch them). Shapes follow rippled's ``NetworkOPs::pubLedger`` /
``pubValidatedTransaction`` as Clio rebuilds them (``feed/impl/LedgerFeed.cpp``,
``TransactionFeed.cpp``): version 1 puts the transaction under ``transaction`` with its
``hash``, versions 2 and 3 under ``tx_json`` with ``hash`` beside it.

Which subscribers a transaction reaches is decided here too: the accounts it affects (rippled's
``getAffectedAccounts``, :func:`chainloom.ledger.xrpl.parse.parse_metadata`) and the books of
the offers its metadata touches, keyed as rippled's ``OrderBookDB::processTxn`` looks them up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import orjson

from chainloom.ledger.api import shapes
from chainloom.ledger.api.bookchanges import book_changes_result
from chainloom.ledger.types import LedgerHeader, TransactionAndMetadata
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.jsonform import object_to_json
from chainloom.ledger.xrpl.parse import NodeKind, ParsedMetadata, parse_metadata

JSON = dict[str, Any]

Issue = tuple[bytes, bytes]
"""A currency and its issuer, 20 bytes each; XRP is 40 zero bytes."""

Book = tuple[Issue, Issue]
"""A book as rippled keys its listeners: ``(in, out)``."""

XRP_ISSUE: Issue = (bytes(20), bytes(20))

_DROPS_MASK = 0x3FFFFFFFFFFFFFFF
_BASE_FEE = sf.field_key("BaseFee")
_REFERENCE_FEE_UNITS = sf.field_key("ReferenceFeeUnits")
_RESERVE_BASE = sf.field_key("ReserveBase")
_RESERVE_INCREMENT = sf.field_key("ReserveIncrement")
_BASE_FEE_DROPS = sf.field_key("BaseFeeDrops")
_RESERVE_BASE_DROPS = sf.field_key("ReserveBaseDrops")
_RESERVE_INCREMENT_DROPS = sf.field_key("ReserveIncrementDrops")


@dataclass(frozen=True, slots=True)
class StoredTransaction:
    """One transaction of a committed ledger, as the stream builders take it."""

    hash: bytes
    """The transaction's hash."""
    stored: TransactionAndMetadata
    """Its blobs, ledger and date."""


@dataclass(frozen=True, slots=True)
class Fees:
    """A ledger's fees in drops (its FeeSettings object)."""

    base: int
    """``fee_base``: the reference transaction cost."""
    reserve_base: int
    """``reserve_base``: the account reserve."""
    reserve_inc: int
    """``reserve_inc``: the owner reserve per object."""
    reference_units: int | None = None
    """``fee_ref`` before the XRPFees amendment (``ReferenceFeeUnits``), else ``None``."""


@dataclass(frozen=True, slots=True)
class TransactionMessages:
    """The ``transaction`` message of one transaction and whom it concerns."""

    by_version: Mapping[int, str]
    """The serialized message for API version 1 and for versions 2 and 3 (keys 1 and 2)."""
    accounts: frozenset[bytes]
    """The accounts it affects (the ``accounts`` stream)."""
    books: frozenset[Book]
    """The books whose offers it touches (the ``books`` stream)."""

    def text(self, api_version: int) -> str:
        """The message as a subscriber with ``api_version`` receives it."""
        return self.by_version[1 if api_version < 2 else 2]


@dataclass(frozen=True, slots=True)
class LedgerMessages:
    """Everything one committed ledger publishes, serialized once for every subscriber."""

    sequence: int
    """The ledger."""
    ledger_now: JSON
    """The ledger's ``ledger`` stream fields (the ``subscribe`` answer while it is the newest)."""
    ledger_closed: str
    """The ``ledgerClosed`` message."""
    book_changes: str
    """The ``bookChanges`` message."""
    transactions: Sequence[TransactionMessages]
    """One per transaction, in ``TransactionIndex`` order."""


@cache
def _result_messages() -> dict[str, str]:
    text = resources.files("chainloom.ledger.xrpl").joinpath("result_messages.json").read_text()
    messages: dict[str, str] = json.loads(text)["messages"]
    return messages


def result_message(token: str) -> str:
    """rippled's ``engine_result_message`` of a result (``-`` for one it does not know, as
    rippled's ``transHuman``)."""
    return _result_messages().get(token, "-")


def fees_of(fee_settings: bytes | None) -> Fees | None:
    """The fees of a FeeSettings object blob, old fields or XRPFees' (``None`` without one)."""
    if not fee_settings:
        return None
    node = binary.decode(fee_settings)

    def number(key: int) -> int | None:
        value = node.get(key)
        if not isinstance(value, bytes):
            return None
        return int.from_bytes(value, "big") & _DROPS_MASK  # XRP amounts carry a sign bit

    base = number(_BASE_FEE_DROPS)
    if base is not None:
        return Fees(base, number(_RESERVE_BASE_DROPS) or 0, number(_RESERVE_INCREMENT_DROPS) or 0)
    return Fees(
        number(_BASE_FEE) or 0,
        number(_RESERVE_BASE) or 0,
        number(_RESERVE_INCREMENT) or 0,
        number(_REFERENCE_FEE_UNITS),
    )


def ledger_fields(header: LedgerHeader, fees: Fees | None, first_sequence: int) -> JSON:
    """The fields the ``ledger`` stream's messages and its ``subscribe`` answer share."""
    out: JSON = {
        "ledger_index": header.sequence,
        "ledger_hash": shapes.hex_upper(header.hash),
        "ledger_time": header.close_time,
    }
    if fees is not None:
        if fees.reference_units is not None:
            out["fee_ref"] = fees.reference_units
        out["fee_base"] = fees.base
        out["reserve_base"] = fees.reserve_base
        out["reserve_inc"] = fees.reserve_inc
    out["validated_ledgers"] = f"{first_sequence}-{header.sequence}"
    return out


def ledger_closed(
    header: LedgerHeader, fees: Fees | None, first_sequence: int, transaction_count: int
) -> JSON:
    """The ``ledger`` stream's ``ledgerClosed`` message."""
    return {
        "type": "ledgerClosed",
        **ledger_fields(header, fees, first_sequence),
        "txn_count": transaction_count,
    }


def transaction_message(header: LedgerHeader, tx: StoredTransaction, api_version: int) -> JSON:
    """A ``transaction`` message (validated, ``status: closed``) in one API version's shape."""
    stored = tx.stored
    fields = binary.decode(stored.transaction)
    body = object_to_json(fields)
    meta = shapes.metadata_json(fields, stored.metadata, stored)
    body["date"] = header.close_time
    out: JSON
    if api_version < 2:
        body["hash"] = shapes.hex_upper(tx.hash)
        out = {"transaction": body}
    else:
        out = {"tx_json": body, "hash": shapes.hex_upper(tx.hash)}
    out["meta"] = meta
    result_token = meta.get("TransactionResult", "")
    result_raw = binary.decode(stored.metadata).get(sf.TRANSACTION_RESULT)
    out.update(
        {
            "type": "transaction",
            "validated": True,
            "status": "closed",
            "close_time_iso": shapes.close_time_iso(header.close_time),
            "ledger_index": header.sequence,
            "ledger_hash": shapes.hex_upper(header.hash),
            "engine_result_code": (
                int.from_bytes(result_raw, "big") if isinstance(result_raw, bytes) else 0
            ),
            "engine_result": result_token,
            "engine_result_message": result_message(str(result_token)),
        }
    )
    return out


def _issue(amount: object) -> Issue | None:
    """The issue of an Amount blob (``None`` for an MPT amount)."""
    if not isinstance(amount, bytes):
        return None
    if len(amount) == 8:
        return XRP_ISSUE
    if len(amount) == 48:
        return amount[8:28], amount[28:48]
    return None


def affected_books(meta: ParsedMetadata) -> frozenset[Book]:
    """The books of the offers a transaction's metadata touches, keyed as rippled looks up its
    book listeners: ``(TakerGets' issue, TakerPays' issue)`` of the offer's ``PreviousFields``
    (modified), ``NewFields`` (created) or ``FinalFields`` (deleted)."""
    found: set[Book] = set()
    for node in meta.nodes:
        if node.ledger_entry_type != sf.OFFER:
            continue
        if node.kind is NodeKind.MODIFIED:
            data = node.previous_fields
        elif node.kind is NodeKind.CREATED:
            data = node.new_fields
        else:
            data = node.final_fields
        if not data:
            continue
        gets, pays = _issue(data.get(sf.TAKER_GETS)), _issue(data.get(sf.TAKER_PAYS))
        if gets is not None and pays is not None:
            found.add((gets, pays))
    return frozenset(found)


def subscribed_book(taker_pays: Issue, taker_gets: Issue) -> Book:
    """The book a ``books`` entry of ``subscribe`` listens to (rippled's ``Book(in, out)``):
    ``in`` is ``taker_pays``, ``out`` is ``taker_gets``."""
    return taker_pays, taker_gets


def _dumps(message: JSON) -> str:
    return orjson.dumps(message).decode()


def ledger_messages(
    header: LedgerHeader,
    transactions: Iterable[StoredTransaction],
    fees: Fees | None,
    first_sequence: int,
) -> LedgerMessages:
    """Every message one committed ledger publishes, serialized."""
    parsed = sorted(
        ((parse_metadata(tx.stored.metadata), tx) for tx in transactions),
        key=lambda pair: pair[0].transaction_index,
    )
    ordered = [tx for _, tx in parsed]
    built = []
    for meta, tx in parsed:
        built.append(
            TransactionMessages(
                by_version={
                    1: _dumps(transaction_message(header, tx, 1)),
                    2: _dumps(transaction_message(header, tx, 2)),
                },
                accounts=meta.affected_accounts,
                books=affected_books(meta),
            )
        )
    changes = book_changes_result(header, (tx.stored for tx in ordered))
    return LedgerMessages(
        sequence=header.sequence,
        ledger_now=ledger_fields(header, fees, first_sequence),
        ledger_closed=_dumps(ledger_closed(header, fees, first_sequence, len(ordered))),
        book_changes=_dumps(changes),
        transactions=built,
    )
