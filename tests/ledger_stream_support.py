"""Helpers of the subscription tests: what a dump should publish, and subscribers that collect.

The expected messages come from the dump file itself, decoded by xrpl-py and hashed with
``hashlib`` (never the API's code): each ledger's hash from its header, each transaction's hash
(SHA-512Half of ``TXN\\0`` and the blob), its ``TransactionIndex`` and result, and the accounts
it affects by rippled's rule (every AccountID field of a created node's ``NewFields`` or another
node's ``FinalFields``, and the issuers of ``LowLimit``, ``HighLimit``, ``TakerPays``,
``TakerGets``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from xrpl.clients import WebsocketClient
from xrpl.core import binarycodec
from xrpl.core.binarycodec.definitions import definitions
from xrpl.models.requests import Subscribe
from xrpl.models.requests.request import Request

_ISSUER_AMOUNTS = ("LowLimit", "HighLimit", "TakerPays", "TakerGets")


@dataclass(frozen=True)
class ExpectedTransaction:
    ledger_index: int
    hash: str
    index: int
    result: str
    accounts: frozenset[str]
    books: frozenset[tuple[str, str]]
    """``(taker_pays, taker_gets)`` of the ``books`` subscriptions it reaches."""
    tx: dict[str, Any]


@dataclass
class ExpectedHistory:
    """The diff ledgers of a dump, in order, with their transactions in ledger order."""

    ledgers: list[tuple[int, str, int]] = field(default_factory=list)
    """``(sequence, hash, transaction count)``."""
    transactions: list[ExpectedTransaction] = field(default_factory=list)

    def after(self, sequence: int) -> ExpectedHistory:
        """Only the ledgers after ``sequence``."""
        return ExpectedHistory(
            [item for item in self.ledgers if item[0] > sequence],
            [tx for tx in self.transactions if tx.ledger_index > sequence],
        )


def _affected(meta: dict[str, Any]) -> frozenset[str]:
    found = set()
    for wrapper in meta.get("AffectedNodes", []):
        ((kind, node),) = wrapper.items()
        fields = node.get("NewFields" if kind == "CreatedNode" else "FinalFields", {})
        for name, value in fields.items():
            if name in _ISSUER_AMOUNTS and isinstance(value, dict):
                found.add(value["issuer"])
            elif definitions.get_field_type_name(name) == "AccountID":
                found.add(value)
    return frozenset(found)


def _asset(amount: Any) -> str:
    return "XRP" if isinstance(amount, str) else f"{amount['issuer']}/{amount['currency']}"


def _books(meta: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """rippled looks up the listeners of an offer's book as ``Book(in = TakerGets' issue, out =
    TakerPays' issue)`` (``OrderBookDB::processTxn``), from the offer's ``PreviousFields``
    (modified), ``NewFields`` (created) or ``FinalFields`` (deleted); a subscription listens to
    ``Book(in = taker_pays, out = taker_gets)``."""
    found = set()
    part = {"ModifiedNode": "PreviousFields", "CreatedNode": "NewFields",
            "DeletedNode": "FinalFields"}  # fmt: skip
    for wrapper in meta.get("AffectedNodes", []):
        ((kind, node),) = wrapper.items()
        if node.get("LedgerEntryType") != "Offer":
            continue
        fields = node.get(part[kind], {})
        if "TakerGets" in fields and "TakerPays" in fields:
            found.add((_asset(fields["TakerGets"]), _asset(fields["TakerPays"])))
    return frozenset(found)


def expected_history(dump: Path) -> ExpectedHistory:
    history = ExpectedHistory()
    for line in dump.read_text().splitlines():
        record = orjson.loads(line)
        if record["kind"] != "diff":
            continue
        sequence = record["sequence"]
        ledger_hash = record["header"][-64:].upper()
        found = []
        for tx_hex, meta_hex in record["transactions"]:
            digest = hashlib.sha512(b"TXN\x00" + bytes.fromhex(tx_hex)).digest()[:32]
            meta = binarycodec.decode(meta_hex)
            found.append(
                ExpectedTransaction(
                    ledger_index=sequence,
                    hash=digest.hex().upper(),
                    index=meta["TransactionIndex"],
                    result=meta["TransactionResult"],
                    accounts=_affected(meta),
                    books=_books(meta),
                    tx=binarycodec.decode(tx_hex),
                )
            )
        found.sort(key=lambda tx: tx.index)
        history.ledgers.append((sequence, ledger_hash, len(found)))
        history.transactions += found
    return history


class Collector:
    """A WebSocket client whose stream messages a thread collects."""

    def __init__(self, url: str) -> None:
        self.client = WebsocketClient(url)
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._collect, daemon=True)

    def open(self) -> Collector:
        self.client.open()
        self._thread.start()
        return self

    def _collect(self) -> None:
        for message in self.client:
            with self._lock:
                self.messages.append(message)

    def request(self, request: Request) -> dict[str, Any]:
        response = self.client.request(request)
        assert response.is_successful(), response.result
        return response.result

    def subscribe(self, **fields: Any) -> dict[str, Any]:
        return self.request(Subscribe(**fields))

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [message for message in self.messages if message.get("type") == kind]

    def wait_for(self, done: Callable[[Collector], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self):
            assert time.monotonic() < deadline, f"gave up waiting; got {len(self.messages)}"
            time.sleep(0.05)

    def close(self) -> None:
        self.client.close()
        self._thread.join(timeout=10)


@contextmanager
def collectors(url: str, count: int) -> Iterator[list[Collector]]:
    opened = [Collector(url).open() for _ in range(count)]
    try:
        yield opened
    finally:
        for collector in opened:
            collector.close()


def got_ledger(sequence: int, transactions: int) -> Callable[[Collector], bool]:
    """Done once ledger ``sequence`` and ``transactions`` transaction messages arrived."""

    def done(collector: Collector) -> bool:
        ledgers = collector.of_type("ledgerClosed")
        seen = bool(ledgers) and ledgers[-1]["ledger_index"] >= sequence
        return seen and len(collector.of_type("transaction")) >= transactions

    return done
