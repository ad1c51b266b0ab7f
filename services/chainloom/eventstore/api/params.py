"""Path and query parameters, parsed before the store is asked anything: pure.

Every refusal is a :class:`~chainloom.eventstore.api.errors.BadParameterError` naming the
parameter as the client wrote it. Unknown and repeated query parameters are refused too: a
typo (``pagesize``) silently falling back to the default would look like missing data.

Cursors are opaque to clients (base64url of ``v2:CHAIN:EMITTER:SEQUENCE``, the last message
of the page before, then ``.`` and a 128-bit HMAC-SHA256 of that text under the server's
cursor key) and bound to the list they came from: a cursor of chain 2 given to chain 4's list
is a 400, not a silent jump, and so is one the server did not issue (written by hand, altered,
or signed with another key). The next page holds the messages after that key, so a walk
returns each stored message exactly once, whatever is written meanwhile behind the cursor.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import re
import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from chainloom.eventstore.api.errors import BadParameterError
from chainloom.eventstore.keys import normalize_emitter
from chainloom.wormhole import chain_id
from chainloom.wormhole.errors import MessageKeyError, WormholeError
from chainloom.wormhole.sequences import MAX_SEQUENCE

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

CURSOR_VERSION = "v2"
"""The first field of every cursor; a cursor of another version is refused."""
MAC_BYTES = 16
"""Bytes of the HMAC-SHA256 a cursor carries (128 bits)."""


def parse_query(target: str, allowed: Collection[str]) -> dict[str, str]:
    """The query string of ``target`` as name -> value (each name at most once, all allowed)."""
    query = urllib.parse.urlsplit(target).query
    values: dict[str, str] = {}
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadParameterError("query", "not valid percent-encoded UTF-8") from None
    for name, value in pairs:
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise BadParameterError(name, f"unknown query parameter (this route takes: {known})")
        if name in values:
            raise BadParameterError(name, "given more than once")
        values[name] = value
    return values


def parse_chain(text: str, name: str = "chain") -> int:
    """A Wormhole chain id from its decimal id or its name (``ethereum``)."""
    try:
        return chain_id(text)
    except WormholeError:
        raise BadParameterError(
            name, f"{_shown(text)!r} is not a chain id (0-65535) or a chain name"
        ) from None


def parse_emitter(text: str) -> str:
    """An emitter address as 64 lower-case hex (``0x`` and left padding accepted)."""
    try:
        return normalize_emitter(text)
    except MessageKeyError:
        raise BadParameterError(
            "emitter", f"{_shown(text)!r} is not a hex address of up to 32 bytes"
        ) from None


def parse_sequence(text: str, name: str = "seq") -> int:
    """A uint64 sequence in decimal."""
    if not text.isascii() or not text.isdigit() or int(text) > MAX_SEQUENCE:
        raise BadParameterError(name, f"{_shown(text)!r} is not a decimal uint64")
    return int(text)


def parse_page_size(values: Mapping[str, str], default: int, maximum: int) -> int:
    """``pageSize``: 1..``maximum``, ``default`` when absent."""
    text = values.get("pageSize")
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= maximum:
        raise BadParameterError("pageSize", f"{_shown(text)!r} is not a whole number 1-{maximum}")
    return int(text)


def parse_date(text: str | None, name: str) -> dt.date:
    """A UTC day as ``YYYY-MM-DD`` (required)."""
    if text is None:
        raise BadParameterError(name, "required (a UTC day, YYYY-MM-DD)")
    try:
        if not _DAY.fullmatch(text):
            raise ValueError(text)
        return dt.date.fromisoformat(text)
    except ValueError:
        raise BadParameterError(name, f"{_shown(text)!r} is not a day YYYY-MM-DD") from None


def parse_day_range(values: Mapping[str, str], max_days: int) -> tuple[dt.date, dt.date]:
    """``from`` and ``to`` (both required, ``from <= to``, at most ``max_days`` days)."""
    first = parse_date(values.get("from"), "from")
    last = parse_date(values.get("to"), "to")
    if last < first:
        raise BadParameterError("to", f"{last} is before from ({first})")
    days = (last - first).days + 1
    if days > max_days:
        raise BadParameterError("to", f"the range spans {days} days (at most {max_days})")
    return first, last


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a list page ends: the key of its last message (the next page starts after it)."""

    chain: int
    """The list's chain."""
    emitter: str
    """The last message's emitter, 64 lower-case hex."""
    sequence: int
    """The last message's sequence."""


def encode_cursor(cursor: Cursor, key: bytes) -> str:
    """The opaque text of a cursor (URL-safe base64, no padding), MACed with ``key``."""
    text = f"{CURSOR_VERSION}:{cursor.chain}:{cursor.emitter}:{cursor.sequence}".encode()
    return f"{_b64(text)}.{_b64(_mac(key, text))}"


def decode_cursor(text: str, chain: int, emitter: str | None, key: bytes) -> Cursor:
    """A cursor given back by a client: issued under ``key``, and for the list it is used on."""
    refused = BadParameterError("cursor", "not a cursor this API returned")
    body, dot, mac = text.partition(".")
    try:
        data = _unb64(body)
        if not dot or not hmac.compare_digest(_unb64(mac), _mac(key, data)):
            raise refused
        raw = data.decode("ascii")
    except (binascii.Error, ValueError):
        raise refused from None
    parts = raw.split(":")
    if len(parts) != 4 or parts[0] != CURSOR_VERSION:
        raise refused
    _, chain_text, emitter_text, sequence_text = parts
    try:
        cursor = Cursor(
            parse_chain(chain_text), parse_emitter(emitter_text), parse_sequence(sequence_text)
        )
    except BadParameterError:
        raise refused from None
    if len(emitter_text) != 64 or not (chain_text.isascii() and chain_text.isdigit()):
        raise refused
    if cursor.chain != chain or (emitter is not None and cursor.emitter != emitter):
        raise BadParameterError("cursor", "the cursor belongs to another list")
    return cursor


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()[:MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _shown(text: str) -> str:
    """A client's value for a reason line: at most 80 characters."""
    return text if len(text) <= 80 else text[:80] + "..."
