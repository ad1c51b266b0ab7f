"""What the ETL needs from a transaction and its metadata, read straight from the binary.

Clio parses only the header, the TxMeta (affected accounts, index, result), NFT-related nodes and
directory objects; this module is that subset for Python. Values stay raw (see :mod:`.binary`)
except the handful every caller wants as numbers.

Affected accounts follow rippled's ``TxMeta::getAffectedAccounts``: every AccountID field of a
created node's ``NewFields`` or of a modified/deleted node's ``FinalFields``, plus the issuers of
non-XRP ``LowLimit``, ``HighLimit``, ``TakerPays`` and ``TakerGets`` amounts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.errors import XrplBinaryError, XrplMissingFieldError
from chainloom.ledger.xrpl.hashing import transaction_id

_ISSUER_AMOUNTS = frozenset({sf.LOW_LIMIT, sf.HIGH_LIMIT, sf.TAKER_PAYS, sf.TAKER_GETS})


class NodeKind(enum.Enum):
    """How a transaction touched a ledger object."""

    CREATED = "CreatedNode"
    MODIFIED = "ModifiedNode"
    DELETED = "DeletedNode"


_NODE_KINDS = {
    sf.CREATED_NODE: NodeKind.CREATED,
    sf.MODIFIED_NODE: NodeKind.MODIFIED,
    sf.DELETED_NODE: NodeKind.DELETED,
}


@dataclass(frozen=True, slots=True)
class AffectedNode:
    """One entry of the metadata's ``AffectedNodes``."""

    kind: NodeKind
    """Created, modified or deleted."""
    ledger_entry_type: int
    """The object's LedgerEntryType code (see :mod:`.fields`)."""
    ledger_index: bytes
    """The object's 32-byte key."""
    new_fields: binary.STObject | None
    """``NewFields`` of a created node (raw values)."""
    final_fields: binary.STObject | None
    """``FinalFields`` of a modified or deleted node (raw values)."""
    previous_fields: binary.STObject | None
    """``PreviousFields`` (the changed fields' old values), where present."""

    @property
    def fields_after(self) -> binary.STObject:
        """The object's fields after the transaction (or at deletion), never None."""
        return (self.new_fields if self.kind is NodeKind.CREATED else self.final_fields) or {}


@dataclass(frozen=True, slots=True)
class ParsedMetadata:
    """The parts of a metadata blob the ETL uses."""

    transaction_index: int
    """Position of the transaction in its ledger."""
    transaction_result: int
    """The result code (0 = tesSUCCESS)."""
    nodes: tuple[AffectedNode, ...]
    """Every affected node, in metadata order (sorted by key)."""
    affected_accounts: frozenset[bytes]
    """The 20-byte AccountIDs the transaction touched (the ``account_tx`` rows)."""

    @property
    def result_name(self) -> str:
        """The result code's name (``tesSUCCESS``, ``tecPATH_PARTIAL``, ...)."""
        return sf.result_name(self.transaction_result)


@dataclass(frozen=True, slots=True)
class ParsedTransaction:
    """The parts of a transaction blob the ETL uses."""

    hash: bytes
    """SHA512Half('TXN\\0' + blob): the transaction ID."""
    transaction_type: int
    """The TransactionType code."""
    account: bytes
    """The sending AccountID (20 bytes)."""
    sequence: int
    """The account sequence it consumed (0 when a ticket was used)."""
    fields: binary.STObject
    """Every field, raw (for the NFT derivation)."""

    @property
    def type_name(self) -> str:
        """The TransactionType's name."""
        return sf.transaction_type_name(self.transaction_type)


def u8(value: bytes) -> int:
    """A raw UInt8..UInt64 value as an int."""
    return int.from_bytes(value, "big")


def native_drops(amount: bytes) -> int | None:
    """The drops of an XRP amount, or None for an issued-currency or MPT amount."""
    if len(amount) != 8:
        return None
    raw = int.from_bytes(amount, "big")
    value = raw & 0x3FFFFFFFFFFFFFFF
    return value if raw & 0x4000000000000000 else -value


NFT_TRANSACTION_TYPES = frozenset(
    {
        sf.NFTOKEN_MINT,
        sf.NFTOKEN_BURN,
        sf.NFTOKEN_CREATE_OFFER,
        sf.NFTOKEN_CANCEL_OFFER,
        sf.NFTOKEN_ACCEPT_OFFER,
        sf.NFTOKEN_MODIFY,
    }
)
"""Transaction types whose fields the NFT derivation reads (the ETL fully parses only these)."""


def transaction_type(blob: bytes) -> int:
    """The TransactionType of a transaction blob, read from its first field (canonical order
    always puts it first), without decoding the rest."""
    if len(blob) < 3 or blob[0] != 0x12:
        raise XrplMissingFieldError("transaction does not start with its TransactionType")
    return int.from_bytes(blob[1:3], "big")


def parse_transaction(blob: bytes) -> ParsedTransaction:
    """Parse a signed transaction blob."""
    obj = binary.decode(blob)
    tx_type = obj.get(sf.TRANSACTION_TYPE)
    account = obj.get(sf.ACCOUNT)
    if not isinstance(tx_type, bytes):
        raise XrplMissingFieldError("transaction has no TransactionType field")
    if not isinstance(account, bytes):
        raise XrplMissingFieldError("transaction has no Account field")
    sequence = obj.get(sf.SEQUENCE, b"\x00\x00\x00\x00")
    assert isinstance(sequence, bytes)
    return ParsedTransaction(
        hash=transaction_id(blob),
        transaction_type=u8(tx_type),
        account=account,
        sequence=u8(sequence),
        fields=obj,
    )


def parse_metadata(blob: bytes) -> ParsedMetadata:
    """Parse a metadata blob (``TransactionIndex``, ``TransactionResult``, ``AffectedNodes``)."""
    obj = binary.decode(blob)
    index = obj.get(sf.TRANSACTION_INDEX)
    result = obj.get(sf.TRANSACTION_RESULT)
    if not isinstance(index, bytes):
        raise XrplMissingFieldError("metadata has no TransactionIndex")
    if not isinstance(result, bytes):
        raise XrplMissingFieldError("metadata has no TransactionResult")
    raw_nodes = obj.get(sf.AFFECTED_NODES, [])
    if not isinstance(raw_nodes, list):
        raise XrplBinaryError("metadata AffectedNodes is not an array")
    nodes: list[AffectedNode] = []
    accounts: set[bytes] = set()
    for wrapper, body in raw_nodes:
        kind = _NODE_KINDS.get(wrapper)
        if kind is None:
            raise XrplBinaryError(f"AffectedNodes holds an unknown node type {wrapper:#x}")
        entry_type = body.get(sf.LEDGER_ENTRY_TYPE)
        ledger_index = body.get(sf.LEDGER_INDEX)
        if not isinstance(entry_type, bytes) or not isinstance(ledger_index, bytes):
            raise XrplMissingFieldError(f"{kind.value} without LedgerEntryType or LedgerIndex")
        new_fields = body.get(sf.NEW_FIELDS)
        final_fields = body.get(sf.FINAL_FIELDS)
        previous_fields = body.get(sf.PREVIOUS_FIELDS)
        node = AffectedNode(
            kind=kind,
            ledger_entry_type=u8(entry_type),
            ledger_index=ledger_index,
            new_fields=new_fields if isinstance(new_fields, dict) else None,
            final_fields=final_fields if isinstance(final_fields, dict) else None,
            previous_fields=previous_fields if isinstance(previous_fields, dict) else None,
        )
        nodes.append(node)
        _collect_accounts(node.fields_after, accounts)
    return ParsedMetadata(
        transaction_index=u8(index),
        transaction_result=u8(result),
        nodes=tuple(nodes),
        affected_accounts=frozenset(accounts),
    )


def _collect_accounts(inner: binary.STObject, accounts: set[bytes]) -> None:
    for field_key, value in inner.items():
        if field_key >> 16 == sf.ACCOUNT_ID:
            assert isinstance(value, bytes)
            accounts.add(value)
        elif field_key in _ISSUER_AMOUNTS:
            assert isinstance(value, bytes)
            if len(value) == 48:
                accounts.add(value[28:48])


def is_book_directory(blob: bytes) -> bool:
    """Clio's ``isBookDir``: a DirectoryNode without an ``Owner`` field."""
    if len(blob) < 3 or blob[0] != 0x11:  # LedgerEntryType comes first in canonical order
        return False
    if u8(blob[1:3]) != sf.DIRECTORY_NODE:
        return False
    return sf.OWNER not in binary.decode(blob)


def book_base(directory_key: bytes) -> bytes:
    """The base of the book a book directory belongs to: its key with the low 64 bits (the
    quality) zeroed. The base of a book from its asset pair is
    :func:`chainloom.ledger.xrpl.keylets.book`."""
    return directory_key[:24] + b"\x00" * 8


def ledger_entry_type(blob: bytes) -> int:
    """The LedgerEntryType of an object blob (read from its first field)."""
    if len(blob) < 3 or blob[0] != 0x11:
        raise XrplMissingFieldError("ledger object does not start with LedgerEntryType")
    return u8(blob[1:3])
