"""A trust line (RippleState) seen from one of its two accounts, pure.

A RippleState stores one balance from the low account's side and two limits, qualities and
flag sets, one per side. ``account_lines``, ``account_currencies``, ``gateway_balances`` and
``noripple_check`` all want the line as *one* account sees it: its balance (positive: the peer
owes it), its own limit and the peer's, which flags are its own. :func:`line_view` flips the
stored line once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.jsonform import currency_text, issued_value_text

LOW_AUTH = 0x00040000
HIGH_AUTH = 0x00080000
LOW_NO_RIPPLE = 0x00100000
HIGH_NO_RIPPLE = 0x00200000
LOW_FREEZE = 0x00400000
HIGH_FREEZE = 0x00800000
LOW_DEEP_FREEZE = 0x02000000
HIGH_DEEP_FREEZE = 0x04000000

_QUALITY = {
    name: sf.field_key(name)
    for name in ("LowQualityIn", "LowQualityOut", "HighQualityIn", "HighQualityOut")
}


@dataclass(frozen=True, slots=True)
class LineView:
    """A trust line from one account's side."""

    peer: bytes
    """The other account."""
    currency: bytes
    """The 20-byte currency code."""
    currency_text: str
    """The currency as rippled prints it (``USD`` or 40 hex digits)."""
    balance: str
    """The balance from this side (positive: the peer owes this account), rippled's text."""
    limit: str
    """This account's limit (what it trusts the peer for)."""
    limit_peer: str
    """The peer's limit."""
    quality_in: int
    """This side's ``QualityIn`` (0 when unset)."""
    quality_out: int
    """This side's ``QualityOut``."""
    no_ripple: bool
    """This side set NoRipple."""
    no_ripple_peer: bool
    """The peer set NoRipple."""
    authorized: bool
    """This account authorized the peer to hold its currency."""
    peer_authorized: bool
    """The peer authorized this account."""
    freeze: bool
    """This account froze the line."""
    freeze_peer: bool
    """The peer froze the line."""
    deep_freeze: bool
    """This account deep-froze the line."""
    deep_freeze_peer: bool
    """The peer deep-froze the line."""

    @property
    def balance_value(self) -> Decimal:
        """The balance as a number."""
        return Decimal(self.balance)

    @property
    def limit_value(self) -> Decimal:
        """This side's limit as a number."""
        return Decimal(self.limit)

    @property
    def limit_peer_value(self) -> Decimal:
        """The peer's limit as a number."""
        return Decimal(self.limit_peer)


def negate(text: str) -> str:
    """rippled's text of ``-value``."""
    if text == "0":
        return text
    return text[1:] if text.startswith("-") else f"-{text}"


def _uint(node: binary.STObject, key: int) -> int:
    value = node.get(key)
    return int.from_bytes(value, "big") if isinstance(value, bytes) else 0


def _issued(node: binary.STObject, key: int) -> bytes:
    value = node.get(key)
    if not isinstance(value, bytes) or len(value) != 48:
        raise XrplBinaryError("RippleState without an issued Balance, LowLimit or HighLimit")
    return value


def line_view(blob: bytes, account: bytes) -> LineView:
    """The RippleState ``blob`` as ``account`` sees it; :class:`XrplBinaryError` when the blob is
    not a RippleState of ``account``."""
    node = binary.decode(blob)
    balance, low, high = (_issued(node, key) for key in (sf.BALANCE, sf.LOW_LIMIT, sf.HIGH_LIMIT))
    is_low = low[28:48] == account
    if not is_low and high[28:48] != account:
        raise XrplBinaryError("RippleState of other accounts")
    flags = _uint(node, sf.FLAGS)
    own, other = (low, high) if is_low else (high, low)
    side = "Low" if is_low else "High"
    text = issued_value_text(balance[:8])

    def flag(low_bit: int, high_bit: int, mine: bool) -> bool:
        return bool(flags & (low_bit if is_low == mine else high_bit))

    return LineView(
        peer=other[28:48],
        currency=balance[8:28],
        currency_text=currency_text(balance[8:28]),
        balance=text if is_low else negate(text),
        limit=issued_value_text(own[:8]),
        limit_peer=issued_value_text(other[:8]),
        quality_in=_uint(node, _QUALITY[f"{side}QualityIn"]),
        quality_out=_uint(node, _QUALITY[f"{side}QualityOut"]),
        no_ripple=flag(LOW_NO_RIPPLE, HIGH_NO_RIPPLE, True),
        no_ripple_peer=flag(LOW_NO_RIPPLE, HIGH_NO_RIPPLE, False),
        authorized=flag(LOW_AUTH, HIGH_AUTH, True),
        peer_authorized=flag(LOW_AUTH, HIGH_AUTH, False),
        freeze=flag(LOW_FREEZE, HIGH_FREEZE, True),
        freeze_peer=flag(LOW_FREEZE, HIGH_FREEZE, False),
        deep_freeze=flag(LOW_DEEP_FREEZE, HIGH_DEEP_FREEZE, True),
        deep_freeze_peer=flag(LOW_DEEP_FREEZE, HIGH_DEEP_FREEZE, False),
    )
