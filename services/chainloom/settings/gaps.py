"""The settings of missed-VAA recovery, shared by the indexer and the relayer's listener.

Both track every emitter's sequences with :mod:`chainloom.wormhole.sequences`, wait for a gap
to stay open past a grace period (VAAs arrive out of order by seconds), then ask the guardians'
public API for the missing sequences a bounded number at a time. The numbers that shape that
loop are the same for both, so they are declared here once; each service adds only what is its
own (the indexer's persistence of gap state).
"""

from __future__ import annotations

from pydantic import Field

from chainloom.settings.parts import Part


class GapRecoverySettings(Part):
    """When an open gap in an emitter's sequences is fetched, and how much is kept and asked."""

    grace: float = Field(
        default=30.0,
        ge=0,
        description="Seconds a gap must stay open before it is fetched (VAAs arrive out of "
        "order by seconds; a gap that closes by itself is never fetched).",
    )
    check_interval: float = Field(
        default=5.0, gt=0, description="Seconds between looks for overdue gaps."
    )
    retry_after: float = Field(
        default=60.0,
        ge=0,
        description="Seconds before a sequence that was not found (or whose fetch failed) is "
        "asked for again; it stays listed meanwhile, with its attempts and last error.",
    )
    per_round: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="Most sequences fetched per look (one call after another, each bounded by "
        "public_rpc.timeout and public_rpc.rounds).",
    )
    max_gaps: int = Field(
        default=10_000,
        ge=1,
        description="Most open gaps (ranges) kept per emitter; past it the lowest is given up "
        "and counted.",
    )
