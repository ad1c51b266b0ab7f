"""The volume routes' answers (``/api/v1/volume/...``), typed for the OpenAPI document."""

from __future__ import annotations

from pydantic import Field

from chainloom.eventstore.api.models import ApiModel


class VolumeDoc(ApiModel):
    """Token transfers and their USD notional."""

    transfers: int = Field(ge=0, description="Token transfers (token bridge payloads 1 and 3).")
    priced_transfers: int = Field(ge=0, description="Those with a USD notional.")
    volume_usd: str = Field(description="Sum of their notional, decimal USD (6 places).")


class PeriodVolume(VolumeDoc):
    """One chain's transfers in one day or hour."""

    period: str = Field(description="UTC day YYYY-MM-DD, or hour YYYY-MM-DDTHH.")
    chain: int = Field(description="Source (emitter) chain id.")
    chain_name: str = Field(description="Its lower-case name.")


class VolumeTotals(ApiModel):
    """``GET /api/v1/volume/totals``."""

    from_: str = Field(serialization_alias="from", description="First day, YYYY-MM-DD.")
    to: str = Field(description="Last day, YYYY-MM-DD (included).")
    by: str = Field(description="day or hour.")
    chain: int | None = Field(description="The chain asked for; null for every chain.")
    total: VolumeDoc = Field(description="The whole range.")
    data: list[PeriodVolume] = Field(description="By period, then chain; empty ones left out.")


class TokenVolume(VolumeDoc):
    """One origin token's transfers."""

    token_chain: int = Field(description="The token's origin chain.")
    token_address: str = Field(description="Its origin address, 64 hex.")
    token_native_address: str = Field(description="The same in its chain's native form.")


class CorridorVolume(VolumeDoc):
    """Transfers from one chain to another."""

    source_chain: int = Field(description="Source chain id.")
    target_chain: int = Field(description="Target chain id.")


class TopTokens(ApiModel):
    """``GET /api/v1/volume/top-tokens``: by USD volume, then transfers."""

    from_: str = Field(serialization_alias="from", description="First day, YYYY-MM-DD.")
    to: str = Field(description="Last day, YYYY-MM-DD (included).")
    data: list[TokenVolume]


class TopCorridors(ApiModel):
    """``GET /api/v1/volume/top-corridors``: by USD volume, then transfers."""

    from_: str = Field(serialization_alias="from", description="First day, YYYY-MM-DD.")
    to: str = Field(description="Last day, YYYY-MM-DD (included).")
    data: list[CorridorVolume]
