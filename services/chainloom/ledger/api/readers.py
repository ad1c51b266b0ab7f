"""Readers of request fields, pure: each takes a JSON value and returns it typed, or raises
rippled's error naming the field (``invalidParams``, ``actMalformed``, ...).

Every method's parser (:mod:`.requests`, :mod:`.params`) builds on these, so a field means the
same thing, and is refused the same way, in every method.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.types import UINT32_MAX
from chainloom.ledger.xrpl.address import decode_account
from chainloom.ledger.xrpl.errors import XrplBinaryError

_SHORTCUTS = ("validated", "closed", "current")

ACCOUNT_CACHE_SIZE = 1 << 16
"""Addresses remembered decoded: wallets ask about the same accounts again and again, and
base58check (a big-number conversion and two SHA-256) is most of the cost of parsing a call."""

_account_id = functools.lru_cache(maxsize=ACCOUNT_CACHE_SIZE)(decode_account)


@dataclass(frozen=True, slots=True)
class LedgerSelector:
    """Which ledger a request means: by sequence, by hash, or (neither) the newest validated."""

    sequence: int | None = None
    """An explicit ledger index."""
    ledger_hash: bytes | None = None
    """A 32-byte ledger hash."""


def read_bool(params: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise invalid_params(f"Invalid field '{name}', not bool.")
    return value


def ascii_decimal(value: Any) -> bool:
    """A decimal number as text, in ASCII digits only (``int()`` reads any script's digits)."""
    return isinstance(value, str) and value.isascii() and value.isdigit()


def read_uint32(value: Any, name: str) -> int:
    if ascii_decimal(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT32_MAX:
        raise invalid_params(f"Invalid field '{name}', not unsigned integer.")
    return int(value)


def read_hash(value: Any, name: str) -> bytes:
    if isinstance(value, str) and len(value) == 64:
        try:
            return bytes.fromhex(value)
        except ValueError:
            pass
    raise invalid_params(f"Invalid field '{name}', not a 256-bit hex hash.")


def read_account(value: Any, name: str, *, error: str = "actMalformed") -> bytes:
    if not isinstance(value, str):
        raise RpcError(error, f"Invalid field '{name}', not string.")
    try:
        return _account_id(value)
    except XrplBinaryError:
        raise RpcError(error) from None


def read_limit(params: Mapping[str, Any], bounds: tuple[int, int]) -> int:
    default, largest = bounds
    if "limit" not in params:
        return default
    value = params["limit"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_params("Invalid field 'limit'.")
    return min(int(value), largest)


def read_currency(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise invalid_params(f"Invalid field '{name}', not string.")
    if value == "XRP":
        return bytes(20)
    if len(value) == 3 and value.isascii():
        return bytes(12) + value.encode("ascii") + bytes(5)
    if len(value) == 40:
        try:
            return bytes.fromhex(value)
        except ValueError:
            pass
    raise invalid_params(f"Invalid field '{name}', bad currency.")


def parse_ledger_selector(params: Mapping[str, Any]) -> LedgerSelector:
    """``ledger_hash`` or ``ledger_index`` (a number, a numeric string or a shortcut, which all
    mean the newest stored ledger: this server holds validated ledgers only)."""
    if "ledger_hash" in params and params["ledger_hash"] is not None:
        value = params["ledger_hash"]
        if not isinstance(value, str) or len(value) != 64:
            raise invalid_params("ledgerHashMalformed")
        try:
            return LedgerSelector(ledger_hash=bytes.fromhex(value))
        except ValueError:
            raise invalid_params("ledgerHashMalformed") from None
    value = params.get("ledger_index")
    if value is None or value in _SHORTCUTS:
        return LedgerSelector()
    if ascii_decimal(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT32_MAX:
        raise invalid_params("ledgerIndexMalformed")
    return LedgerSelector(sequence=value)


def read_issue(value: Any, name: str) -> tuple[bytes, bytes]:
    if not isinstance(value, dict):
        raise invalid_params(f"Missing field '{name}'.")
    currency = read_currency(value.get("currency"), f"{name}.currency")
    if not any(currency):
        if value.get("issuer") not in (None, "rrrrrrrrrrrrrrrrrrrrrhoLvTp"):
            raise invalid_params(f"Invalid field '{name}.issuer', XRP has no issuer.")
        return currency, bytes(20)
    issuer = read_account(value.get("issuer"), f"{name}.issuer", error="invalidParams")
    return currency, issuer
