"""Which VAAs the relayer accepts, as named rules with counters and reason strings.

Why a module of its own: the reference listener checked no signatures, treated ``fee > 0`` as
"sufficient", never checked the target chain, and answered 200 for rejections
(wormhole-foundation/wormhole ``relayer/spy_relayer/`` at ``81f411dbf92a``). Here every rule
has a name, a counter and a reason a sender can act on, and the rules are pure: they see
bytes, the guardian sets and the policy, nothing else. The two rules that need state - "not
already in any table" and "not already redeemed" - are named here too, but the intake
(:mod:`chainloom.relayer.intake`) runs them against Redis and the chain adapters.

Rule order (the first failing rule decides):

====================  ==========================================================
``parses``            the bytes are a well-formed signed VAA
``signatures``        signed with quorum by the guardian set it names
``known_emitter``     the emitter is a configured token bridge
``payload_type``      a token-bridge transfer (payload 1; payload 3 if enabled)
``amount``            the amount is not 0 and the fee does not exceed it
``target_chain``      the transfer's target chain is supported
``origin_asset``      the transfer's origin asset is on the allowlist
``fee``               the fee is at least the token's configured minimum
``not_queued``        not already in any table (atomic, by digest)
``not_redeemed``      the target chain's adapter says it is not redeemed yet
====================  ==========================================================
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from chainloom.wormhole import (
    VAA,
    GuardianSets,
    SignatureCache,
    TokenTransfer,
    TokenTransferWithPayload,
    chain_name,
    decode_vaa_text,
    parse_vaa,
    verify_vaa,
)
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.payloads import decode_token_bridge_payload

Transfer = TokenTransfer | TokenTransferWithPayload
"""The token-bridge transfers the relayer can relay."""


class Rule(enum.Enum):
    """The validation rules, in the order they run."""

    PARSES = "parses"
    """The bytes are a well-formed signed VAA."""
    SIGNATURES = "signatures"
    """Signed with quorum by the guardian set the VAA names."""
    KNOWN_EMITTER = "known_emitter"
    """The emitter is a configured token bridge."""
    PAYLOAD_TYPE = "payload_type"
    """A token-bridge transfer: payload 1, or payload 3 when enabled."""
    AMOUNT = "amount"
    """The amount is not 0 and the fee does not exceed it (the token bridge refuses both)."""
    TARGET_CHAIN = "target_chain"
    """The target chain is one this relayer redeems on."""
    ORIGIN_ASSET = "origin_asset"
    """The origin asset is on the allowlist."""
    FEE = "fee"
    """The relayer fee is at least the token's configured minimum."""
    NOT_QUEUED = "not_queued"
    """Not already in any table (deduplicated by digest, atomically)."""
    NOT_REDEEMED = "not_redeemed"
    """Not already redeemed on the target chain."""


PURE_RULES = (
    Rule.PARSES,
    Rule.SIGNATURES,
    Rule.KNOWN_EMITTER,
    Rule.PAYLOAD_TYPE,
    Rule.AMOUNT,
    Rule.TARGET_CHAIN,
    Rule.ORIGIN_ASSET,
    Rule.FEE,
)


@dataclass(frozen=True, slots=True)
class ValidationPolicy:
    """What the relayer accepts (built from :class:`chainloom.relayer.config.RelayerSettings`)."""

    known_emitters: frozenset[tuple[int, bytes]]
    """Token-bridge emitters ``(chain, 32-byte address)`` whose transfers are relayed."""
    target_chains: frozenset[int]
    """Chains this relayer redeems on."""
    min_fees: Mapping[tuple[int, bytes], int]
    """Allowed origin assets ``(token chain, 32-byte address)`` and their minimum fee."""
    allow_payload3: bool = False
    """Also accept payload-3 transfers (they carry no fee: their minimum must be 0)."""
    chain_min_fees: Mapping[int, int] = field(default_factory=dict)
    """Any asset native to these chains is allowed, with this minimum fee (wildcard entries)."""
    any_asset_min_fee: int | None = None
    """Any other origin asset is allowed with this minimum fee; None: refused."""

    def min_fee(self, token_chain: int, token_address: bytes) -> int | None:
        """The minimum fee of an origin asset; None when it is not on the allowlist.

        The most specific entry wins: the exact asset, then its chain, then the catch-all.
        """
        exact = self.min_fees.get((token_chain, token_address))
        if exact is not None:
            return exact
        chain_wide = self.chain_min_fees.get(token_chain)
        if chain_wide is not None:
            return chain_wide
        return self.any_asset_min_fee


@dataclass(frozen=True, slots=True)
class Rejection:
    """A VAA a rule refused."""

    rule: Rule
    """The rule that refused it."""
    reason: str
    """Why, in words a sender can act on."""
    vaa: VAA | None = field(default=None, repr=False)
    """The parsed VAA, when it parsed."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """A VAA that passed every pure rule."""

    vaa: VAA = field(repr=False)
    """The parsed VAA."""
    transfer: Transfer
    """Its decoded token-bridge transfer."""

    @property
    def target_chain(self) -> int:
        """Chain the transfer is redeemed on."""
        return self.transfer.to_chain


@dataclass(slots=True)
class RuleCounter:
    """How often a rule passed and how often it refused."""

    passed: int = 0
    """VAAs that satisfied the rule."""
    rejected: int = 0
    """VAAs the rule refused."""


@dataclass(slots=True)
class RuleCounters:
    """One counter per rule, safe to bump from several threads."""

    counts: dict[Rule, RuleCounter] = field(
        default_factory=lambda: {r: RuleCounter() for r in Rule}
    )
    """The counters, by rule."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def passed(self, *rules: Rule) -> None:
        """Record that ``rules`` passed."""
        with self._lock:
            for rule in rules:
                self.counts[rule].passed += 1

    def rejected(self, rule: Rule) -> None:
        """Record that ``rule`` refused a VAA."""
        with self._lock:
            self.counts[rule].rejected += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """``{rule: {"passed": n, "rejected": m}}`` for metrics and ``/readyz``."""
        with self._lock:
            return {
                rule.value: {"passed": c.passed, "rejected": c.rejected}
                for rule, c in self.counts.items()
            }


class Validator:
    """Runs the pure rules, counting each outcome."""

    def __init__(
        self,
        policy: ValidationPolicy,
        guardian_sets: GuardianSets,
        *,
        cache: SignatureCache | None = None,
        clock: Callable[[], float] = time.time,
        counters: RuleCounters | None = None,
    ) -> None:
        self.policy = policy
        self.guardian_sets = guardian_sets
        self.cache = cache if cache is not None else SignatureCache()
        self.clock = clock
        self.counters = counters if counters is not None else RuleCounters()

    def check(self, data: bytes) -> Accepted | Rejection:
        """Apply every pure rule to ``data``; the first failing one decides."""
        result = self._check(data)
        if isinstance(result, Accepted):
            self.counters.passed(*PURE_RULES)
        else:
            self.counters.passed(*PURE_RULES[: PURE_RULES.index(result.rule)])
            self.counters.rejected(result.rule)
        return result

    def _check(self, data: bytes) -> Accepted | Rejection:
        try:
            vaa = parse_vaa(data)
        except WormholeError as error:
            return Rejection(Rule.PARSES, f"not a signed VAA: {error}")
        for rule, vaa_test in (
            (Rule.SIGNATURES, self._signatures),
            (Rule.KNOWN_EMITTER, self._known_emitter),
        ):
            reason = vaa_test(vaa)
            if reason is not None:
                return Rejection(rule, reason, vaa)
        transfer = self._transfer(vaa)
        if isinstance(transfer, str):
            return Rejection(Rule.PAYLOAD_TYPE, transfer, vaa)
        for rule, transfer_test in (
            (Rule.AMOUNT, self._amount),
            (Rule.TARGET_CHAIN, self._target_chain),
            (Rule.ORIGIN_ASSET, self._origin_asset),
            (Rule.FEE, self._fee),
        ):
            reason = transfer_test(transfer)
            if reason is not None:
                return Rejection(rule, reason, vaa)
        return Accepted(vaa, transfer)

    # Each rule returns None when satisfied, else the reason it refuses.

    def _signatures(self, vaa: VAA) -> str | None:
        try:
            verification = verify_vaa(
                vaa, self.guardian_sets, now=int(self.clock()), cache=self.cache
            )
        except WormholeError as error:
            return f"signatures not verified: {error}"
        if not verification.valid:
            return f"signatures not verified: {verification.reason}"
        return None

    def _known_emitter(self, vaa: VAA) -> str | None:
        if (vaa.emitter_chain, vaa.emitter_address) in self.policy.known_emitters:
            return None
        return (
            f"emitter {vaa.emitter_hex} on chain {_chain(vaa.emitter_chain)} "
            "is not a known token bridge"
        )

    def _transfer(self, vaa: VAA) -> Transfer | str:
        """The decoded transfer, or why the payload is not one this relayer takes."""
        payload_id = vaa.payload[0] if vaa.payload else None
        wanted = "payload 1 or 3" if self.policy.allow_payload3 else "payload 1"
        if payload_id == 3 and not self.policy.allow_payload3:
            return (
                "payload 3 (transfer with payload) is not relayed: only its recipient can "
                "redeem it (enable payload3 to accept it)"
            )
        if payload_id not in (1, 3):
            return f"payload {payload_id} is not a token-bridge transfer ({wanted})"
        try:
            payload = decode_token_bridge_payload(vaa.payload)
        except WormholeError as error:
            return f"malformed token-bridge transfer: {error}"
        if not isinstance(payload, TokenTransfer | TokenTransferWithPayload):
            return f"payload {payload_id} is not a token-bridge transfer ({wanted})"
        return payload

    def _amount(self, transfer: Transfer) -> str | None:
        # The token bridge sends neither (Bridge.sol requires a non-zero amount and
        # fee <= amount), so such a VAA is forged or broken: queuing it would only spend a
        # worker's attempts, and gas, on a redemption that pays nothing or fails.
        if transfer.amount == 0:
            return "amount is 0: the token bridge does not transfer nothing"
        fee = transfer.fee if isinstance(transfer, TokenTransfer) else 0
        if fee > transfer.amount:
            return f"fee {fee} exceeds the amount {transfer.amount}"
        return None

    def _target_chain(self, transfer: Transfer) -> str | None:
        if transfer.to_chain in self.policy.target_chains:
            return None
        return f"target chain {_chain(transfer.to_chain)} is not supported"

    def _origin_asset(self, transfer: Transfer) -> str | None:
        if self.policy.min_fee(transfer.token_chain, transfer.token_address) is not None:
            return None
        return (
            f"origin asset {transfer.token_address.hex()} on chain "
            f"{_chain(transfer.token_chain)} is not on the allowlist"
        )

    def _fee(self, transfer: Transfer) -> str | None:
        minimum = self.policy.min_fee(transfer.token_chain, transfer.token_address) or 0
        fee = transfer.fee if isinstance(transfer, TokenTransfer) else 0
        if fee >= minimum:
            return None
        return (
            f"fee {fee} is below the minimum {minimum} for origin asset "
            f"{transfer.token_address.hex()} on chain {_chain(transfer.token_chain)}"
        )


def decode_text(text: str) -> bytes:
    """VAA bytes from hex (with or without ``0x``) or base64 text.

    Hex goes through ``bytes.fromhex`` (C speed: this runs once per REST request and per
    replayed line); anything else falls back to :func:`chainloom.wormhole.decode_vaa_text`,
    which also decodes base64 and raises the error that names what is wrong.
    """
    stripped = text.strip()
    try:
        return bytes.fromhex(stripped[2:] if stripped[:2] in ("0x", "0X") else stripped)
    except ValueError:
        return decode_vaa_text(text)


def _chain(chain: int) -> str:
    try:
        return f"{chain} ({chain_name(chain)})"
    except WormholeError:
        return str(chain)
