"""Turning a token transfer into human figures: scaled amount, USD notional, native addresses.

Pure arithmetic on :class:`~decimal.Decimal`, never floats: the reference multiplied a float64
amount by a float price and lost precision on large transfers (``event_database``'s
``process-transfer.go``).
The token bridge normalizes amounts to at most 8 decimals, so the scale is
``min(decimals, 8)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

BRIDGE_MAX_DECIMALS = 8
"""Token-bridge amounts carry at most this many decimals (``normalizeAmount``)."""

NOTIONAL_QUANTUM = Decimal("0.000001")
"""USD notionals are rounded (half-even) to a millionth of a dollar."""


@dataclass(frozen=True, slots=True)
class AssetInfo:
    """What an AssetMeta attestation says about a token, as the enrichment needs it."""

    token_chain: int
    """Chain where the token is native."""
    token_address: str
    """Its 32-byte address on that chain, 64 lower-case hex characters."""
    decimals: int
    """The token's native decimals (not truncated to 8)."""
    symbol: str
    """Ticker, NUL padding removed."""
    name: str
    """Full name, NUL padding removed."""
    timestamp: int
    """The attestation VAA's timestamp; the newest attestation of a token wins."""

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "decimals": self.decimals,
                "symbol": self.symbol,
                "name": self.name,
                "timestamp": self.timestamp,
            },
            sort_keys=True,
            ensure_ascii=False,
        ).encode()

    @classmethod
    def from_json(cls, token_chain: int, token_address: str, raw: bytes) -> AssetInfo:
        data = json.loads(raw)
        return cls(
            token_chain=token_chain,
            token_address=token_address,
            decimals=int(data["decimals"]),
            symbol=str(data["symbol"]),
            name=str(data["name"]),
            timestamp=int(data["timestamp"]),
        )


@dataclass(frozen=True, slots=True)
class WrappedAsset:
    """The token a transfer yields on a chain other than the token's home chain."""

    address: str
    """The wrapped token's address in the target chain's native form."""
    symbol: str
    """Its symbol on the target chain ("" if unknown)."""
    name: str
    """Its name on the target chain ("" if unknown)."""

    def to_json(self) -> bytes:
        return json.dumps(
            {"address": self.address, "symbol": self.symbol, "name": self.name}, sort_keys=True
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> WrappedAsset:
        data = json.loads(raw)
        return cls(str(data["address"]), str(data.get("symbol", "")), str(data.get("name", "")))


def scale_amount(amount: int, decimals: int) -> Decimal:
    """A bridge amount in whole tokens: ``amount / 10**min(decimals, 8)``, exact."""
    places = min(decimals, BRIDGE_MAX_DECIMALS)
    return Decimal(amount).scaleb(-places)


def notional_usd(amount: int, decimals: int, price_usd: Decimal) -> Decimal:
    """The transfer's value in USD at ``price_usd`` per whole token."""
    value = scale_amount(amount, decimals) * price_usd
    return value.quantize(NOTIONAL_QUANTUM, rounding=ROUND_HALF_EVEN)
