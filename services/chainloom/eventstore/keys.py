"""Row keys of the events table and the index table.

The events row key is fixed by the schema spec: ``EmitterChain:EmitterAddress:Sequence`` with
the chain as unpadded decimal, the emitter as 64 lower-case hex characters and the sequence as
decimal left-padded with ``0`` to *at least* 16 characters. Two consequences shape the queries:

* A scan of one chain must use the prefix ``"<chain>:"`` with the colon, or chain 1 would also
  match chains 10-19.
* Sequences of 17-20 digits produce longer keys that do not sort numerically against 16-digit
  ones (``"1:e:10000000000000000"`` sorts before ``"1:e:9999999999999999"``). Within one key
  width the order is numeric, so an ordered sequence-range scan is split into one key range per
  width (16, 17, ... 20) read one after the other (:func:`sequence_key_ranges`).

The index table keys are built here too, so both tables' layouts live in one module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chainloom.wormhole.errors import MessageKeyError
from chainloom.wormhole.sequences import MAX_SEQUENCE

SEQUENCE_MIN_WIDTH = 16
"""The row key pads sequences to at least this many digits (``%016d``)."""

SEQUENCE_MAX_WIDTH = 20
"""A uint64 has at most 20 decimal digits."""

MAX_CHAIN = 2**16 - 1
MAX_TIMESTAMP = 2**32 - 1

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True, order=True)
class MessageKey:
    """The identity of one Wormhole message: (emitter chain, emitter address, sequence)."""

    chain: int
    """Wormhole chain id of the emitter (uint16)."""
    emitter: str
    """The 32-byte emitter address as 64 lower-case hex characters."""
    sequence: int
    """The emitter's sequence number (uint64)."""

    def __post_init__(self) -> None:
        if not 0 <= self.chain <= MAX_CHAIN:
            raise MessageKeyError(str(self.chain), "the chain id must be a uint16")
        if not _HEX64.match(self.emitter):
            raise MessageKeyError(self.emitter, "the emitter must be 64 lower-case hex characters")
        if not 0 <= self.sequence <= MAX_SEQUENCE:
            raise MessageKeyError(str(self.sequence), "the sequence must be a uint64")

    @property
    def row_key(self) -> str:
        """``chain:emitter:%016d``, the events table's row key."""
        return f"{self.chain}:{self.emitter}:{self.sequence:016d}"

    @property
    def message_id(self) -> str:
        """``chain/emitter/sequence``, Wormhole's MessageID form."""
        return f"{self.chain}/{self.emitter}/{self.sequence}"

    @classmethod
    def parse(cls, text: str) -> MessageKey:
        """Parse a message id (``C/E/S``) or a row key (``C:E:SEQ``).

        The emitter may carry a ``0x`` prefix and be shorter than 64 hex characters (it is
        left-padded, as Wormhole pads native addresses).
        """
        stripped = text.strip()
        parts = stripped.split("/") if "/" in stripped else stripped.split(":")
        if len(parts) != 3:
            raise MessageKeyError(text, "expected CHAIN/EMITTER/SEQUENCE")
        chain_text, emitter_text, sequence_text = parts
        if not (chain_text.isascii() and chain_text.isdigit()):
            raise MessageKeyError(text, f"chain {chain_text!r} is not a decimal number")
        if not (sequence_text.isascii() and sequence_text.isdigit()):
            raise MessageKeyError(text, f"sequence {sequence_text!r} is not a decimal number")
        return cls(int(chain_text), normalize_emitter(emitter_text, text), int(sequence_text))


def normalize_emitter(emitter: str, context: str | None = None) -> str:
    """An emitter address as 64 lower-case hex characters (left-padded, ``0x`` removed)."""
    value = emitter.lower().removeprefix("0x")
    if not value or len(value) > 64 or not re.fullmatch(r"[0-9a-f]+", value):
        raise MessageKeyError(
            context or emitter, f"emitter {emitter!r} is not a hex address of up to 32 bytes"
        )
    return value.rjust(64, "0")


def chain_prefix(chain: int) -> str:
    """The row-key prefix of one chain, colon included."""
    return f"{chain}:"


def emitter_prefix(chain: int, emitter: str) -> str:
    """The row-key prefix of one emitter."""
    return f"{chain}:{emitter}:"


def sequence_key_ranges(chain: int, emitter: str, first: int, last: int) -> list[tuple[str, str]]:
    """Closed row-key ranges covering sequences ``first..last`` in numeric order.

    One range per key width: the 16-character width covers 0..10**16-1, then one width per
    extra digit. A range also spans longer keys with the same leading digits, so a reader
    must keep only keys of the range's width; then reading the ranges in the returned order
    yields rows in sequence order.
    """
    prefix = emitter_prefix(chain, emitter)
    ranges: list[tuple[str, str]] = []
    first = max(first, 0)
    last = min(last, MAX_SEQUENCE)
    for width in range(SEQUENCE_MIN_WIDTH, SEQUENCE_MAX_WIDTH + 1):
        low = 0 if width == SEQUENCE_MIN_WIDTH else 10 ** (width - 1)
        high = 10**width - 1
        start, end = max(first, low), min(last, high)
        if start > end:
            continue
        ranges.append((f"{prefix}{start:0{width}d}", f"{prefix}{end:0{width}d}"))
    return ranges


# ------------------------------------------------------------------------------------------
# Index table


def tx_index_key(tx_id: str) -> str:
    """Index row of a source transaction id; one cell per message it emitted."""
    return f"tx:{normalize_tx_id(tx_id)}"


def normalize_tx_id(tx_id: str) -> str:
    """Transaction ids are compared case-insensitively for hex and kept as-is otherwise.

    EVM hashes arrive with or without ``0x`` and in either case; Solana signatures are
    case-sensitive base58 and are left untouched.
    """
    text = tx_id.strip()
    body = text[2:] if text[:2].lower() == "0x" else text
    if (
        body
        and re.fullmatch(r"[0-9a-fA-F]+", body)
        and (text[:2].lower() == "0x" or len(body) == 64)
    ):
        return "0x" + body.lower()
    return text


def recent_index_key(chain: int, timestamp: int, row_key: str) -> str:
    """Index row that sorts a chain's messages newest first (inverted VAA timestamp)."""
    return f"recent:{chain:05d}:{MAX_TIMESTAMP - timestamp:010d}:{row_key}"


def recent_prefix(chain: int) -> str:
    return f"recent:{chain:05d}:"


def count_index_key(day: str, chain: int, hour: int) -> str:
    """Index row holding one cell per message of one chain in one UTC hour of ``day``.

    ``day`` is ``YYYYMMDD``; the hour shard keeps busy chains' rows small.
    """
    return f"count:{day}:{chain:05d}:{hour:02d}"


def asset_index_key(token_chain: int, token_address: str) -> str:
    """Index row of a token's attestations (AssetMeta), for decimals, symbol and name."""
    return f"asset:{token_chain:05d}:{token_address}"


def wrapped_index_key(token_chain: int, token_address: str, target_chain: int) -> str:
    """Index row naming the token a transfer of this origin token yields on a target chain."""
    return f"wrapped:{token_chain:05d}:{token_address}:{target_chain:05d}"


GAP_STATE_PREFIX = "gaps:"
"""Index rows holding a streaming gap filler's state, one per emitter (docs/indexer.md)."""


def gap_state_prefix(chain: int) -> str:
    """The ``gaps:`` rows of one chain."""
    return f"{GAP_STATE_PREFIX}{chain:05d}:"


def gap_state_key(chain: int, emitter: str) -> str:
    """Index row of one emitter's gap state (emitter: 64 lower-case hex)."""
    return f"{gap_state_prefix(chain)}{emitter}"


# ------------------------------------------------------------------------------------------
# Filter index rows (chainloom.eventstore.filter_index)

FILTER_ORDERS = ("asc", "desc")
"""The two orders a filter index row is written in (``fa:`` oldest first, ``fd:`` newest
first): the Python data client has no reversed scan, so each order has its own rows."""


def filter_prefix(order: str, dimension: str, value: str) -> str:
    """The index rows of one filter value in one order, e.g. ``fd:src:00002:``."""
    if order not in FILTER_ORDERS:
        raise ValueError(f"order must be asc or desc, not {order!r}")
    return f"f{order[0]}:{dimension}:{value}:"


def filter_time(order: str, timestamp: int) -> str:
    """The time part of a filter row key: the VAA's unix time, inverted for ``desc``."""
    return f"{timestamp if order == 'asc' else MAX_TIMESTAMP - timestamp:010d}"


_ROW_KEY_CHARS = "0123456789:abcdef"
_INVERTED = str.maketrans(_ROW_KEY_CHARS, _ROW_KEY_CHARS[::-1])


def filter_suffix(order: str, timestamp: int, row_key: str) -> str:
    """What follows a filter prefix: time, then the events row key.

    For ``desc`` the row key's characters are inverted and ``~`` (above every inverted
    character) ends it, so messages of the same second are listed in exactly the reverse of
    the ``asc`` order, whatever their key lengths.
    """
    if order == "asc":
        return f"{filter_time(order, timestamp)}:{row_key}"
    return f"{filter_time(order, timestamp)}:{row_key.translate(_INVERTED)}~"
