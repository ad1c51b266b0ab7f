"""The filtered lists' query parameters and cursors, parsed before any store read: pure.

Names follow wormholescan's ``api/v1`` (``sourceChain``, ``targetChain``, ``txHash``,
``from``/``to``, ``pageSize``); ``order`` is ``asc`` or ``desc``. A cursor is opaque: URL-safe
base64 of ``v3:ORDER:LIST:SUFFIX`` (``LIST`` a digest of the filters, ``SUFFIX`` the last index
row's time and row key), ``.``, and 128 bits of an HMAC-SHA256 of it under the server's cursor
key, so it is refused (400 on ``cursor``) on another list, in another order, or when forged.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from chainloom.eventstore.api import params
from chainloom.eventstore.api.errors import BadParameterError
from chainloom.eventstore.filter_index import Filters, canonical_address
from chainloom.eventstore.keys import FILTER_ORDERS, normalize_tx_id

LIST_PARAMETERS = (
    "sourceChain",
    "targetChain",
    "emitter",
    "payloadType",
    "tokenChain",
    "tokenAddress",
    "sender",
    "recipient",
    "txHash",
    "from",
    "to",
    "order",
    "pageSize",
    "cursor",
)
"""What ``GET /api/v1/vaas`` takes."""

ADDRESS_PARAMETERS = ("payloadType", "from", "to", "order", "pageSize", "cursor")
"""What ``GET /api/v1/addresses/{chain}/{address}`` takes."""

DEFAULT_ORDER = "desc"
"""Newest first unless ``order=asc``, as the explorer lists."""

CURSOR_VERSION = "v3"
_MAC_BYTES = 16
_SUFFIX = re.compile(r"[0-9]{10}:[0-9a-f:]+~?")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True, slots=True)
class ListQuery:
    """A parsed filtered list request."""

    filters: Filters
    """What the messages must match."""
    order: str
    """``asc`` or ``desc``."""
    size: int
    """Page size."""
    after: str | None
    """The cursor's suffix: the page starts after it."""


def parse_time(text: str, name: str) -> int:
    """``YYYY-MM-DD`` (midnight UTC) or an RFC 3339 time with a zone, as unix seconds."""
    try:
        if _DAY.fullmatch(text):
            day = dt.date.fromisoformat(text)
            moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        else:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                raise ValueError(text)
        seconds = int(moment.timestamp())
        if not 0 <= seconds <= 2**32 - 1:
            raise ValueError(text)
        return seconds
    except ValueError:
        raise BadParameterError(
            name, f"{text[:80]!r} is not a day YYYY-MM-DD or an RFC 3339 time with a zone"
        ) from None


def parse_payload_types(text: str) -> frozenset[int]:
    """``payloadType``: one or more payload type bytes, comma-separated (``1,3``)."""
    values = [part.strip() for part in text.split(",")]
    if not values or any(not v.isascii() or not v.isdigit() or int(v) > 255 for v in values):
        raise BadParameterError(
            "payloadType", f"{text[:80]!r} is not a comma-separated list of numbers 0-255"
        )
    return frozenset(int(v) for v in values)


def parse_address(chain: int, text: str, name: str) -> str:
    """An address on ``chain`` in native form or as 32-byte hex, as the index keys it."""
    if len(text) > 128:
        raise BadParameterError(name, "an address of at most 128 characters")
    try:
        return canonical_address(chain, text)
    except ValueError as error:
        raise BadParameterError(name, str(error)) from None


def parse_order(values: Mapping[str, str]) -> str:
    text = values.get("order", DEFAULT_ORDER)
    if text not in FILTER_ORDERS:
        raise BadParameterError("order", f"{text[:80]!r} is not asc or desc")
    return text


def _time_range(values: Mapping[str, str]) -> tuple[int | None, int | None]:
    start = None if "from" not in values else parse_time(values["from"], "from")
    end = None if "to" not in values else parse_time(values["to"], "to")
    if start is not None and end is not None and end <= start:
        raise BadParameterError("to", "must be after from")
    return start, end


def parse_list_filters(values: Mapping[str, str]) -> Filters:
    """The filters of ``GET /api/v1/vaas``."""
    source = _chain(values, "sourceChain")
    target = _chain(values, "targetChain")
    token = None
    if ("tokenChain" in values) != ("tokenAddress" in values):
        missing = "tokenAddress" if "tokenChain" in values else "tokenChain"
        raise BadParameterError(missing, "tokenChain and tokenAddress go together")
    if "tokenChain" in values:
        token_chain = params.parse_chain(values["tokenChain"], "tokenChain")
        token = f"{token_chain}/{_token_hex(values['tokenAddress'])}"
    sender = recipient = None
    if "sender" in values:
        if source is None:
            raise BadParameterError("sender", "needs sourceChain (an address is per chain)")
        sender = (source, parse_address(source, values["sender"], "sender"))
    if "recipient" in values:
        if target is None:
            raise BadParameterError("recipient", "needs targetChain (an address is per chain)")
        recipient = (target, parse_address(target, values["recipient"], "recipient"))
    tx_hash = None
    if "txHash" in values:
        if not values["txHash"].strip() or len(values["txHash"]) > 200:
            raise BadParameterError("txHash", "a transaction id of 1-200 characters")
        tx_hash = normalize_tx_id(values["txHash"])
    start, end = _time_range(values)
    return Filters(
        source_chain=source,
        target_chain=target,
        emitter=None if "emitter" not in values else params.parse_emitter(values["emitter"]),
        payload_types=frozenset()
        if "payloadType" not in values
        else parse_payload_types(values["payloadType"]),
        token=token,
        sender=sender,
        recipient=recipient,
        tx_hash=tx_hash,
        start=start,
        end=end,
    )


def parse_address_filters(chain: int, address: str, values: Mapping[str, str]) -> Filters:
    """The filters of ``GET /api/v1/addresses/{chain}/{address}``."""
    start, end = _time_range(values)
    return Filters(
        address=(chain, parse_address(chain, address, "address")),
        payload_types=frozenset()
        if "payloadType" not in values
        else parse_payload_types(values["payloadType"]),
        start=start,
        end=end,
    )


def _chain(values: Mapping[str, str], name: str) -> int | None:
    return None if name not in values else params.parse_chain(values[name], name)


def _token_hex(text: str) -> str:
    body = text.strip().lower().removeprefix("0x")
    if not body or len(body) > 64 or not re.fullmatch(r"[0-9a-f]+", body):
        raise BadParameterError(
            "tokenAddress", f"{text[:80]!r} is not a hex address of up to 32 bytes"
        )
    return body.rjust(64, "0")


def parse_list_query(
    values: Mapping[str, str], filters: Filters, default_size: int, max_size: int, key: bytes
) -> ListQuery:
    """Order, page size and cursor of a filtered list over ``filters``."""
    order = parse_order(values)
    size = params.parse_page_size(values, default_size, max_size)
    text = values.get("cursor")
    after = None if text is None else decode_cursor(text, order, filters, key)
    return ListQuery(filters, order, size, after)


def _list_id(filters: Filters) -> str:
    return hashlib.sha256(filters.digest_text().encode()).hexdigest()[:16]


def encode_cursor(order: str, filters: Filters, suffix: str, key: bytes) -> str:
    """The opaque cursor of a page ending at ``suffix``."""
    text = f"{CURSOR_VERSION}:{order}:{_list_id(filters)}:{suffix}".encode()
    return f"{_b64(text)}.{_b64(_mac(key, text))}"


def decode_cursor(text: str, order: str, filters: Filters, key: bytes) -> str:
    """The suffix of a cursor this server issued for this list in this order."""
    refused = BadParameterError("cursor", "not a cursor this API returned")
    body, dot, mac = text.partition(".")
    try:
        data = _unb64(body)
        if not dot or not hmac.compare_digest(_unb64(mac), _mac(key, data)):
            raise refused
        raw = data.decode("ascii")
    except (binascii.Error, ValueError):
        raise refused from None
    parts = raw.split(":", 3)
    if len(parts) != 4 or parts[0] != CURSOR_VERSION or not _SUFFIX.fullmatch(parts[3]):
        raise refused
    if parts[1] != order or parts[2] != _list_id(filters):
        raise BadParameterError("cursor", "the cursor belongs to another list or order")
    return parts[3]


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
