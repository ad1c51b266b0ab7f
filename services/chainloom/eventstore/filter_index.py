"""The filter index: which index rows a stored message has, and whether it matches a filter.

One pure function, :func:`filter_index_entries`, turns an events row (as stored, or as it will
be once a plan is written) into its index rows, so every writer keeps the same rows: the event
writer (``chainloom events put``, the streaming indexer, the Spark jobs that store VAAs through
it) and ``chainloom events reindex`` over rows stored before the index existed.

Each message gets one row per *dimension* it has a value for (source chain, target chain,
emitter, payload type, token, sender, recipient, source transaction, and ``all``), in each
order: ``f{a|d}:{dimension}:{value}:{time}:{row key}`` (:mod:`chainloom.eventstore.keys`). A
prefix scan of one value is then that value's messages in time order, and a time range is a
key range, never a table scan. Every row holds the same value: the message's
:class:`MessageFacts` as JSON, so a combination of filters is served by scanning the rows of
the most selective one and testing the others on the facts (:func:`matches`), without reading
the events rows of messages that do not match.

The cells carry the VAA's timestamp, and the facts are a function of the row alone, so storing
a message again writes the very same cells.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from chainloom.eventstore import keys, schema
from chainloom.eventstore.cells import IndexEntry, vaa_time_micros
from chainloom.eventstore.encoding import decode_int, decode_text, decode_timestamp
from chainloom.eventstore.schema import Q
from chainloom.wormhole import native_address

RowSnapshot = dict[str, dict[str, bytes]]

FACTS_QUALIFIER = "f"
"""The one column of a filter index row; its value is the message's facts (JSON)."""

DIMENSIONS = ("all", "src", "dst", "em", "pt", "tok", "snd", "rcv", "tx")
"""The dimension names of the filter index rows, in key form."""


@dataclass(frozen=True, slots=True)
class MessageFacts:
    """What the filters can ask of one message, read from its events row."""

    row_key: str
    """The events row key."""
    timestamp: int
    """The VAA's unix time."""
    source_chain: int
    """The emitter chain."""
    emitter: str
    """The emitter address, 64 lower-case hex."""
    payload_type: int | None = None
    """The decoded payload's type byte (token bridge 1, 2, 3; NFT bridge 1); None for other
    payloads."""
    target_chain: int | None = None
    """The transfer's target chain."""
    token: str | None = None
    """The token transferred or attested: ``CHAIN/hex64`` of its origin."""
    sender: str | None = None
    """The sender on the source chain, :func:`canonical_address` form."""
    recipient: str | None = None
    """The recipient on the target chain, :func:`canonical_address` form."""
    tx_hash: str | None = None
    """The source transaction id, when observed."""

    def to_json(self) -> bytes:
        data = {
            "k": self.row_key,
            "t": self.timestamp,
            "s": self.source_chain,
            "e": self.emitter,
            "p": self.payload_type,
            "d": self.target_chain,
            "o": self.token,
            "f": self.sender,
            "r": self.recipient,
            "x": self.tx_hash,
        }
        present = {key: value for key, value in data.items() if value is not None}
        return json.dumps(present, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> MessageFacts:
        data = json.loads(raw)
        return cls(
            row_key=data["k"],
            timestamp=data["t"],
            source_chain=data["s"],
            emitter=data["e"],
            payload_type=data.get("p"),
            target_chain=data.get("d"),
            token=data.get("o"),
            sender=data.get("f"),
            recipient=data.get("r"),
            tx_hash=data.get("x"),
        )

    def dimensions(self) -> list[tuple[str, str]]:
        """(dimension, value) of every filter index row this message has."""
        found = [("all", "*"), ("src", f"{self.source_chain:05d}"), ("em", self.emitter)]
        if self.target_chain is not None:
            found.append(("dst", f"{self.target_chain:05d}"))
        if self.payload_type is not None:
            found.append(("pt", str(self.payload_type)))
        if self.token is not None:
            found.append(("tok", self.token))
        if self.sender is not None:
            found.append(("snd", address_value(self.source_chain, self.sender)))
        if self.recipient is not None and self.target_chain is not None:
            found.append(("rcv", address_value(self.target_chain, self.recipient)))
        if self.tx_hash is not None:
            found.append(("tx", self.tx_hash))
        return found


def address_value(chain: int, canonical: str) -> str:
    """The dimension value of an address on a chain."""
    return f"{chain:05d}/{canonical}"


_HEX = re.compile(r"(0x)?[0-9a-fA-F]{1,64}")


def canonical_address(chain: int, text: str) -> str:
    """An address as the index keys it: the chain's native form, hex lower-cased.

    Accepts the native form (EIP-55 or lower-case ``0x`` for EVM chains, base58 for Solana-like
    chains, bech32 for Cosmos chains), or hex: with ``0x`` of any length up to 32 bytes, or
    without it 40 digits (an EVM address) or 64 (the 32-byte Wormhole form). Raises ValueError
    for an empty one.
    """
    value = text.strip()
    if not value:
        raise ValueError("an empty address")
    body = value[2:] if value[:2].lower() == "0x" else value
    if _HEX.fullmatch(value) and (body is not value or len(value) in {40, 64}):
        raw = bytes.fromhex(body.rjust(len(body) + len(body) % 2, "0")).rjust(32, b"\x00")
        native = native_address(chain, raw)
        return native.lower() if native.startswith("0x") else native
    return value


def facts_of(row_key: str, row: RowSnapshot) -> MessageFacts | None:
    """The facts of a stored message; None for a row without its publication (a conflict or
    signature-only row written before its body)."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    stamp = publication.get(Q.TIMESTAMP)
    chain = publication.get(Q.EMITTER_CHAIN)
    emitter = publication.get(Q.EMITTER_ADDRESS)
    if stamp is None or chain is None or emitter is None:
        return None
    source_chain = decode_int(chain)
    payload_type = target_chain = None
    token = None
    for family in (schema.TOKEN_TRANSFER_PAYLOAD, schema.NFT_TRANSFER_PAYLOAD):
        columns = row.get(family)
        if columns and Q.PAYLOAD_ID in columns:
            payload_type = decode_int(columns[Q.PAYLOAD_ID])
            if Q.TARGET_CHAIN in columns:
                target_chain = decode_int(columns[Q.TARGET_CHAIN])
            if Q.ORIGIN_CHAIN in columns and Q.ORIGIN_ADDRESS in columns:
                token = _token(columns[Q.ORIGIN_CHAIN], columns[Q.ORIGIN_ADDRESS])
    meta = row.get(schema.ASSET_META_PAYLOAD)
    if meta and Q.PAYLOAD_ID in meta:
        payload_type = decode_int(meta[Q.PAYLOAD_ID])
        if Q.TOKEN_CHAIN in meta and Q.TOKEN_ADDRESS in meta:
            token = _token(meta[Q.TOKEN_CHAIN], meta[Q.TOKEN_ADDRESS])
    details = row.get(schema.CHAIN_DETAILS, {})
    sender = details.get(Q.SENDER_ADDRESS)
    recipient = details.get(Q.RECEIVER_ADDRESS)
    tx = publication.get(Q.INITIATING_TX_ID)
    return MessageFacts(
        row_key=row_key,
        timestamp=decode_timestamp(stamp),
        source_chain=source_chain,
        emitter=decode_text(emitter),
        payload_type=payload_type,
        target_chain=target_chain,
        token=token,
        sender=None if sender is None else canonical_address(source_chain, decode_text(sender)),
        recipient=None
        if recipient is None or target_chain is None
        else canonical_address(target_chain, decode_text(recipient)),
        tx_hash=None if tx is None else keys.normalize_tx_id(decode_text(tx)),
    )


def _token(chain: bytes, address: bytes) -> str:
    return f"{decode_int(chain)}/{decode_text(address)}"


def filter_index_entries(row_key: str, row: RowSnapshot) -> list[IndexEntry]:
    """Every filter index cell of a stored message (both orders), or none for a row without
    its publication. The same row always gives the same cells."""
    facts = facts_of(row_key, row)
    if facts is None:
        return []
    value = facts.to_json()
    stamp = vaa_time_micros(facts.timestamp)
    entries: list[IndexEntry] = []
    for order in keys.FILTER_ORDERS:
        suffix = keys.filter_suffix(order, facts.timestamp, row_key)
        for dimension, dimension_value in facts.dimensions():
            key = keys.filter_prefix(order, dimension, dimension_value) + suffix
            entries.append(IndexEntry(key, FACTS_QUALIFIER, value, stamp))
    return entries


# ------------------------------------------------------------------------------------------
# Filters


@dataclass(frozen=True, slots=True)
class Filters:
    """What a filtered list asks for; every field set must hold (None / empty: any)."""

    source_chain: int | None = None
    """The emitter chain."""
    target_chain: int | None = None
    """The transfer's target chain."""
    emitter: str | None = None
    """The emitter, 64 lower-case hex."""
    payload_types: frozenset[int] = frozenset()
    """Any of these payload types."""
    token: str | None = None
    """``CHAIN/hex64`` of the origin token."""
    sender: tuple[int, str] | None = None
    """(source chain, canonical address)."""
    recipient: tuple[int, str] | None = None
    """(target chain, canonical address)."""
    address: tuple[int, str] | None = None
    """Sender or recipient: (its chain, canonical address)."""
    tx_hash: str | None = None
    """The normalized source transaction id."""
    start: int | None = None
    """Earliest VAA time included (unix seconds)."""
    end: int | None = None
    """VAA times before this one (unix seconds)."""

    def digest_text(self) -> str:
        """A stable text of the filters, to bind cursors to the list they came from."""
        return json.dumps(
            [self.source_chain, self.target_chain, self.emitter, sorted(self.payload_types),
             self.token, self.sender, self.recipient, self.address, self.tx_hash,
             self.start, self.end],
            separators=(",", ":"),
        )  # fmt: skip


def matches(facts: MessageFacts, filters: Filters) -> bool:
    """Whether a message's facts satisfy every filter."""
    f = filters
    return (
        (f.source_chain is None or facts.source_chain == f.source_chain)
        and (f.target_chain is None or facts.target_chain == f.target_chain)
        and (f.emitter is None or facts.emitter == f.emitter)
        and (not f.payload_types or facts.payload_type in f.payload_types)
        and (f.token is None or facts.token == f.token)
        and (f.sender is None or (facts.source_chain, facts.sender) == f.sender)
        and (f.recipient is None or (facts.target_chain, facts.recipient) == f.recipient)
        and (f.address is None or f.address in _roles(facts))
        and (f.tx_hash is None or facts.tx_hash == f.tx_hash)
        and (f.start is None or facts.timestamp >= f.start)
        and (f.end is None or facts.timestamp < f.end)
    )


def _roles(facts: MessageFacts) -> tuple[tuple[int | None, str | None], ...]:
    """(chain, address) of the message's sender and of its recipient."""
    return ((facts.source_chain, facts.sender), (facts.target_chain, facts.recipient))


def scan_dimensions(filters: Filters) -> list[tuple[str, str]]:  # noqa: PLR0911 (one per filter)
    """The filter index values whose rows together hold every match, the most selective
    first choice: a transaction, an address, a token, an emitter, a target chain, a source
    chain, the payload types, else every message."""
    f = filters
    if f.tx_hash is not None:
        return [("tx", f.tx_hash)]
    if f.sender is not None:
        return [("snd", address_value(*f.sender))]
    if f.recipient is not None:
        return [("rcv", address_value(*f.recipient))]
    if f.address is not None:
        return [("snd", address_value(*f.address)), ("rcv", address_value(*f.address))]
    if f.token is not None:
        return [("tok", f.token)]
    if f.emitter is not None:
        return [("em", f.emitter)]
    if f.target_chain is not None:
        return [("dst", f"{f.target_chain:05d}")]
    if f.source_chain is not None:
        return [("src", f"{f.source_chain:05d}")]
    if f.payload_types:
        return [("pt", str(t)) for t in sorted(f.payload_types)]
    return [("all", "*")]


def exact(filters: Filters, dimensions: Iterable[tuple[str, str]]) -> bool:
    """Whether scanning ``dimensions`` within the time range yields only matches (no other
    filter left to test), so a page needs no more rows than it returns."""
    chosen = {name for name, _ in dimensions}
    f = filters
    left = {
        "src": f.source_chain is not None,
        "dst": f.target_chain is not None,
        "em": f.emitter is not None,
        "pt": bool(f.payload_types),
        "tok": f.token is not None,
        "snd": f.sender is not None,
        "rcv": f.recipient is not None,
        "tx": f.tx_hash is not None,
    }
    others = [name for name, wanted in left.items() if wanted and name not in chosen]
    return not others and f.address is None and len(chosen) == 1
