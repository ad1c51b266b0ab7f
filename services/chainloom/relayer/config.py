"""The relayer's settings: one typed model for the listener and the workers.

Why typed: the reference relayer parsed ``SUPPORTED_TOKENS`` with ``eval`` and failed late (or
never) on a typo. Here every field is checked when the settings are loaded, and an error names
the source, the field and what was expected, so a bad deployment stops at start-up with one
clear line. The model is loaded by :func:`chainloom.settings.load_settings` (defaults < YAML
file < ``CHAINLOOM_`` environment < CLI flags); ``docs/configuration.md`` lists every field.

A file (``--config`` or ``$CHAINLOOM_RELAYER_CONFIG``) is YAML (JSON is YAML too)::

    redis: {url: "redis://127.0.0.1:6379/0", key_prefix: "chainloom:relay:v1"}
    spy_address: 127.0.0.1:7073          # null: no spy, REST only
    spy_buffer: 10000                    # VAAs held between the stream and the intake
    spy_overflow: block                  # when full: block (push back) or drop (and count)
    rest: {host: 0.0.0.0, port: 4201, max_request_bytes: 65536,
           header_timeout: 20, body_timeout: 20}   # seconds; see docs/relayer-api.md
    guardian_sets: {source: mainnet}     # mainnet | devnet | path of a guardian-set file
    payload3: false                      # also relay payload-3 transfers (with a payload)
    known_emitters: [mainnet, {chain: 2, address: "0x..."}]
    target_chains: [ethereum, 4]
    tokens:
      - {chain: ethereum, address: "*", min_fee: 1000}   # any asset native to Ethereum
      - {chain: "*", address: "*", min_fee: 5000}        # anything else (devnets, load tests)
    worker: {max_retries: 10, backoff: {initial: 1.0, maximum: 3600.0}, lease_ttl: 15.0}
    evm_chains:                          # worker.adapter: evm (docs/evm.md)
      - {chain: 2, rpc_url: "http://127.0.0.1:8545", evm_chain_id: 1337002,
         token_bridge: "0x...", confirmations: 1, gas: {max_fee_gwei: 200}}
    public_rpc: {endpoints: ["https://api.wormholescan.io"]}   # missed-VAA recovery (optional)
    recovery: {grace: 30, check_interval: 5, retry_after: 60,   # state kept in Redis
               start_sequences: [{chain: 2, address: "0x...", sequence: 120000}]}

The environment sets the same fields: ``CHAINLOOM_REDIS__URL``, ``CHAINLOOM_REST__PORT``,
``CHAINLOOM_TARGET_CHAINS='[2, 4]'`` (lists and sections are JSON, never code).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.tables import DEFAULT_PREFIX
from chainloom.relayer.validation import ValidationPolicy
from chainloom.settings import (
    BackoffSettings,
    GuardianSetSettings,
    PublicRpcSettings,
    RedisSettings,
    ServiceSettings,
)
from chainloom.settings.emitters import EMITTER_PRESETS, Address32, ChainId, EmitterSettings
from chainloom.settings.gaps import GapRecoverySettings
from chainloom.settings.parts import Part
from chainloom.wormhole.sequences import MAX_SEQUENCE


class TokenRule(Part):
    """One origin asset (or a wildcard of them) the relayer accepts, and the fee it must carry."""

    chain: ChainId | Literal["*"] = Field(
        description="Chain where the token is native (the transfer's token_chain), or '*'."
    )
    address: Address32 | Literal["*"] = Field(
        description="The token's origin address (20 or 32 bytes of hex), or '*' for any asset "
        "native to the chain."
    )
    min_fee: int = Field(
        default=0,
        ge=0,
        description="Smallest acceptable relayer fee, in the transfer's normalized units.",
    )

    @model_validator(mode="after")
    def _wildcard_chain_means_any_address(self) -> TokenRule:
        if self.chain == "*" and self.address != "*":
            raise ValueError('chain "*" needs address "*" too')
        return self


class RestSettings(Part):
    """The listener's REST endpoint."""

    enabled: bool = Field(default=True, description="Serve REST (false: spy only).")
    host: str = Field(default="127.0.0.1", min_length=1, description="Interface to bind.")
    port: int = Field(default=4201, ge=0, le=65535, description="TCP port (0 picks a free one).")
    max_request_bytes: int = Field(
        default=64 * 1024,
        ge=1,
        le=64 * 1024 * 1024,
        description="Largest request body accepted; larger ones get 413.",
    )
    header_timeout: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a complete request head (from connecting, or "
        "from its previous answer on a kept-alive connection); then the connection is closed. "
        "Also the idle keep-alive timeout.",
    )
    body_timeout: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a whole request body once its head arrived; "
        "then 408.",
    )


class RelayRedisSettings(RedisSettings):
    """The Redis of the relay tables (the shared Redis part, with the tables' key prefix)."""

    key_prefix: str = Field(
        default=DEFAULT_PREFIX,
        min_length=1,
        description="Versioned prefix of every key of the relay tables.",
    )


class RelayerWorkerSettings(Part):
    """How a worker claims, submits and retries requests."""

    adapter: Literal["inprocess", "redis-sim", "evm"] = Field(
        default="redis-sim",
        description="Chain adapter: an in-memory chain, a simulated chain kept in Redis, or "
        "a real EVM chain from evm_chains (docs/evm.md).",
    )
    max_retries: int = Field(
        default=10, ge=0, description="Failures allowed before a request goes to Failed."
    )
    backoff: BackoffSettings = Field(
        default_factory=BackoffSettings,
        description="Wait before each retry of a failed request (doubling, jittered).",
    )
    lease_ttl: float = Field(
        default=15.0, ge=0.1, description="Seconds after which a silent worker is reaped."
    )
    batch: int = Field(default=64, ge=1, le=10_000, description="Requests claimed per step.")
    idle_sleep: float = Field(default=0.05, ge=0, description="Seconds slept when idle.")
    recheck: float = Field(
        default=1.0, ge=0, description="Seconds between finality checks of one submission."
    )
    reap_every: float = Field(
        default=5.0, ge=0, description="Seconds between two passes of the reaper."
    )
    balance_every: float = Field(
        default=30.0,
        gt=0,
        description="Seconds between two reads of the wallet's balance (evm adapter): the "
        "chainloom.relayer.wallet.balance gauge and the P:balances hash in Redis.",
    )
    stop_when_idle: float | None = Field(
        default=None,
        ge=0,
        description="Exit after this many seconds without work (batch runs); null: never.",
    )


class StartSequence(Part):
    """Where recovery of one emitter starts when Redis holds no state of it yet."""

    chain: ChainId = Field(description="The emitter's chain (id or name).")
    address: Address32 = Field(description="The emitter's address (20 or 32 bytes of hex).")
    sequence: int = Field(
        ge=0,
        le=MAX_SEQUENCE,
        description="The first sequence to relay: every later one not heard from the spy is "
        "fetched from the public API.",
    )


class RecoverySettings(GapRecoverySettings):
    """Missed-VAA recovery of the listener (on only when public_rpc.endpoints are set)."""

    persist: bool = Field(
        default=True,
        description="Keep each emitter's sequence state (last seen, open gaps) in the relay "
        "tables' Redis, so a restarted listener resumes from it instead of starting over.",
    )
    start_sequences: tuple[StartSequence, ...] = Field(
        default=(),
        description="Per emitter, the first sequence to relay when Redis holds no state of "
        "that emitter (without one, its track starts at the first sequence seen).",
    )


class RelayerSettings(ServiceSettings):
    """Everything ``chainloom relayer listen`` and ``relayer work`` need."""

    config_file_env: ClassVar[str] = "CHAINLOOM_RELAYER_CONFIG"

    redis: RelayRedisSettings = Field(
        default_factory=RelayRedisSettings, description="Redis holding the relay tables."
    )
    spy_address: str | None = Field(
        default=None,
        pattern=r"^[^:]+:\d+$",
        description="host:port of a guardian spy (or `chainloom-dev spy serve`); null: REST only.",
    )
    spy_buffer: int = Field(
        default=10_000,
        ge=1,
        le=10_000_000,
        description="VAAs the spy client holds between the stream and the intake.",
    )
    spy_overflow: Literal["block", "drop"] = Field(
        default="block",
        description="When that buffer is full: block (push back on the stream) or drop (count).",
    )
    rest: RestSettings = Field(default_factory=RestSettings, description="The REST endpoint.")
    intake_threads: int = Field(
        default=8, ge=1, le=256, description="Threads verifying and queueing VAAs."
    )
    redeem_check: Literal["none", "redis-sim"] = Field(
        default="none",
        description="Ask a chain adapter at intake whether a transfer is already redeemed: none "
        "(the workers still check) or the Redis-simulated chain used in tests.",
    )
    guardian_sets: GuardianSetSettings = Field(
        default_factory=GuardianSetSettings, description="Guardian sets VAAs are verified against."
    )
    payload3: bool = Field(
        default=False, description="Also relay token-bridge payload 3 (transfer with payload)."
    )
    known_emitters: tuple[Literal["mainnet", "devnet"] | EmitterSettings, ...] = Field(
        default=(),
        description="Token-bridge emitters whose transfers are relayed: presets (mainnet, "
        "devnet) or {chain, address}.",
    )
    target_chains: tuple[ChainId, ...] = Field(
        default=(), description="Chains this relayer redeems on (ids or names)."
    )
    tokens: tuple[TokenRule, ...] = Field(
        default=(), description="Origin assets accepted, with their minimum fee."
    )
    worker: RelayerWorkerSettings = Field(
        default_factory=RelayerWorkerSettings, description="The workers (`relayer work`)."
    )
    evm_chains: tuple[EvmChainSettings, ...] = Field(
        default=(),
        description="EVM target chains the evm adapter redeems on: chain, rpc_url, "
        "evm_chain_id, token_bridge, confirmations, gas (docs/evm.md).",
    )
    public_rpc: PublicRpcSettings = Field(
        default_factory=PublicRpcSettings,
        description="Guardian public-API endpoints missed VAAs are fetched from (none: no "
        "missed-VAA recovery).",
    )
    recovery: RecoverySettings = Field(
        default_factory=RecoverySettings,
        description="Missed-VAA recovery of the listener (needs public_rpc.endpoints and a spy).",
    )

    def emitter_keys(self) -> tuple[tuple[int, bytes], ...]:
        """``known_emitters`` expanded: ``(chain, 32-byte address)``, presets included."""
        found: dict[tuple[int, bytes], None] = {}
        for entry in self.known_emitters:
            if isinstance(entry, str):
                found.update(dict.fromkeys(EMITTER_PRESETS[entry].items()))
            else:
                found[(entry.chain, bytes.fromhex(entry.address))] = None
        return tuple(found)

    def validation_policy(self) -> ValidationPolicy:
        """The pure validation rules' view of these settings."""
        return ValidationPolicy(
            known_emitters=frozenset(self.emitter_keys()),
            target_chains=frozenset(self.target_chains),
            min_fees={
                (t.chain, bytes.fromhex(t.address)): t.min_fee
                for t in self.tokens
                if t.chain != "*" and t.address != "*"
            },
            chain_min_fees={
                t.chain: t.min_fee for t in self.tokens if t.chain != "*" and t.address == "*"
            },
            any_asset_min_fee=next((t.min_fee for t in self.tokens if t.chain == "*"), None),
            allow_payload3=self.payload3,
        )
