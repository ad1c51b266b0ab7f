"""Settings of the relayer's EVM chains: one entry per target chain the workers redeem on.

Kept apart from :mod:`chainloom.relayer.evm_adapter` so that loading the relayer's settings
never imports web3. Wallet keys are never settings: a worker reads its key from the file
``relayer work --wallet-file`` names (a mounted Kubernetes Secret in a pod).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chainloom.settings.parts import BackoffSettings, Part

EvmAddress = Annotated[str, Field(pattern=r"^0x[0-9a-fA-F]{40}$")]
"""A 20-byte EVM address, ``0x`` and 40 hex digits."""


class EvmGasSettings(Part):
    """How a redemption's gas and fees are chosen."""

    max_fee_gwei: float = Field(
        default=200.0,
        gt=0,
        description="Fee cap: the most a redemption may pay per gas (maxFeePerGas), in gwei.",
    )
    priority_fee_gwei: float = Field(
        default=1.0, ge=0, description="Tip per gas to the block producer, in gwei."
    )
    estimate_multiplier: float = Field(
        default=1.25, ge=1.0, le=10.0, description="Gas limit = the node's estimate times this."
    )
    max_gas: int = Field(
        default=3_000_000, ge=21_000, description="Largest gas limit a redemption may ask for."
    )


class EvmFailoverBackoff(BackoffSettings):
    """How long a failed or lagging RPC endpoint is skipped (grows with its failures)."""

    initial: float = Field(default=1.0, ge=0, description="Seconds of the first wait.")
    maximum: float = Field(default=60.0, ge=0, description="Upper bound of any wait, seconds.")


class EvmFailoverSettings(Part):
    """How the endpoints of one chain are health-checked and failed over (docs/evm.md)."""

    backoff: EvmFailoverBackoff = Field(
        default_factory=EvmFailoverBackoff,
        description="Wait before a failed or lagging endpoint is tried again.",
    )
    health_interval: float = Field(
        default=5.0,
        gt=0,
        description="Seconds between two health checks (eth_blockNumber of every endpoint).",
    )
    max_lag_blocks: int = Field(
        default=5,
        ge=0,
        description="Blocks an endpoint may be behind the highest answer before it is skipped.",
    )


class EvmChainSettings(Part):
    """One EVM target chain: where it is, what it must be, and the token bridge on it."""

    chain: int = Field(ge=1, le=0xFFFF, description="The Wormhole chain id transfers name.")
    rpc_url: str = Field(min_length=1, description="JSON-RPC URL of the chain (http or https).")
    rpc_urls: tuple[Annotated[str, Field(min_length=1)], ...] = Field(
        default=(),
        description="More JSON-RPC URLs of the same chain, used in this order when rpc_url "
        "fails or lags (health-checked failover).",
    )
    failover: EvmFailoverSettings = Field(
        default_factory=EvmFailoverSettings,
        description="Health checks and backoff of the endpoints.",
    )
    evm_chain_id: int = Field(
        ge=1, description="The EIP-155 chain id the endpoint must report (checked at start)."
    )
    token_bridge: EvmAddress = Field(description="Address of the token bridge contract.")
    confirmations: int = Field(
        default=1,
        ge=0,
        description="Blocks (the receipt's included) before a redemption is final; 0: final "
        "once mined. With instant mining (a block per transaction) use 1.",
    )
    rpc_timeout: float = Field(default=10.0, gt=0, description="Seconds per JSON-RPC request.")
    gas: EvmGasSettings = Field(
        default_factory=EvmGasSettings, description="Gas limit and fee policy."
    )

    def endpoints(self) -> tuple[str, ...]:
        """Every endpoint of the chain, preferred first, each once."""
        return tuple(dict.fromkeys((self.rpc_url, *self.rpc_urls)))
