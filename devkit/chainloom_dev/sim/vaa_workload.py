"""Realistic VAA streams for tests, benchmarks and the demo.

A spy stream is not a list of distinct messages: most traffic is token transfers, each VAA
arrives several times with different signature subsets, and now and then two *different* VAAs
share one message id (reorgs, re-observations; reference 1.5-1.6). :func:`generate_vaas`
produces that shape deterministically from a seed, signed by a :class:`DevGuardians` kit so
every line verifies. Token and NFT transfers come from the kit's dev bridge emitters.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from chainloom.wormhole.hashing import keccak256
from chainloom.wormhole.vaa import encode_body
from chainloom_dev.sim.dev_guardians import DEFAULT_TIMESTAMP, DevGuardians

__all__ = ["DEFAULT_MIX", "KINDS", "Mix", "generate_vaas"]

KINDS = ("token_transfer", "transfer_with_payload", "asset_meta", "nft_transfer", "other")
"""Message kinds the generator can produce."""

_SOURCE_CHAINS = (2, 1, 4, 5, 6, 23, 24, 30)
"""Chains the dev emitters are used on (all EVM-addressed in the dev kit)."""


@dataclass(frozen=True, slots=True)
class Mix:
    """What share of the stream each kind of message is, and how often copies occur."""

    weights: Mapping[str, float] = field(
        default_factory=lambda: {
            "token_transfer": 0.62,
            "transfer_with_payload": 0.14,
            "asset_meta": 0.08,
            "nft_transfer": 0.08,
            "other": 0.08,
        }
    )
    """Relative weight per kind in :data:`KINDS`."""
    duplicate: float = 0.2
    """Probability that a line repeats an earlier VAA with another signature subset."""
    conflict: float = 0.01
    """Probability that a line is a different VAA for an earlier message id."""

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown message kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        for name, rate in (("duplicate", self.duplicate), ("conflict", self.conflict)):
            if not 0 <= rate < 1:
                raise ValueError(f"{name} rate must be in [0, 1), got {rate}")
        if self.duplicate + self.conflict >= 1:
            raise ValueError("duplicate + conflict must stay below 1")

    @classmethod
    def parse(cls, text: str) -> Mix:
        """``token_transfer=6,nft_transfer=1,duplicate=0.3,conflict=0.02`` (missing kinds = 0).

        Only the named kinds are produced when any kind is named; the rates keep their
        defaults unless given.
        """
        weights: dict[str, float] = {}
        rates: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"expected name=value, got {item!r}")
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"{name}: {value!r} is not a number") from None
            if name.strip() in ("duplicate", "conflict"):
                rates[name.strip()] = number
            else:
                weights[name.strip()] = number
        default = cls()
        return cls(
            weights=weights or dict(default.weights),
            duplicate=rates.get("duplicate", default.duplicate),
            conflict=rates.get("conflict", default.conflict),
        )


DEFAULT_MIX = Mix()
"""A mainnet-like mix: mostly transfers, 20 % repeats, 1 % conflicting VAAs."""


def _address(rng: random.Random) -> bytes:
    return bytes(12) + rng.randbytes(20)


def _amount(rng: random.Random) -> int:
    return rng.choice((1, 10, 100, 1000, 10_000)) * rng.randrange(1, 10**8)


def _padded(text: str) -> bytes:
    return text.encode("utf-8")[:32].ljust(32, b"\x00")


_TOKENS = (("USDC", "USD Coin", 6), ("WETH", "Wrapped Ether", 18), ("WBTC", "Wrapped BTC", 8))


def _payload(kind: str, rng: random.Random, source: int) -> bytes:
    target = rng.choice([c for c in _SOURCE_CHAINS if c != source])
    token_chain = rng.choice((source, 2))
    if kind == "token_transfer":
        amount = _amount(rng)
        fee = amount // rng.choice((100, 1000, 10**6)) if rng.random() < 0.5 else 0
        return (
            b"\x01"
            + amount.to_bytes(32, "big")
            + _address(rng)
            + token_chain.to_bytes(2, "big")
            + _address(rng)
            + target.to_bytes(2, "big")
            + fee.to_bytes(32, "big")
        )
    if kind == "transfer_with_payload":
        extra = rng.randbytes(rng.randrange(0, 200))
        return (
            b"\x03"
            + _amount(rng).to_bytes(32, "big")
            + _address(rng)
            + token_chain.to_bytes(2, "big")
            + _address(rng)
            + target.to_bytes(2, "big")
            + _address(rng)
            + extra
        )
    if kind == "asset_meta":
        symbol, name, decimals = rng.choice(_TOKENS)
        return (
            b"\x02"
            + _address(rng)
            + source.to_bytes(2, "big")
            + bytes((decimals,))
            + _padded(symbol)
            + _padded(name)
        )
    if kind == "nft_transfer":
        uri = f"https://nft.example/{rng.randrange(10**9)}.json".encode()
        return (
            b"\x01"
            + _address(rng)
            + source.to_bytes(2, "big")
            + _padded("DEV")
            + _padded("Dev Collection")
            + rng.randrange(2**64).to_bytes(32, "big")
            + bytes((len(uri),))
            + uri
            + _address(rng)
            + target.to_bytes(2, "big")
        )
    # "other": an application payload from an arbitrary emitter
    return b"\x7f" + rng.randbytes(rng.randrange(0, 300))


def generate_vaas(
    count: int,
    seed: int,
    guardians: DevGuardians,
    mix: Mix = DEFAULT_MIX,
    *,
    guardian_set_index: int = 0,
    start_timestamp: int = DEFAULT_TIMESTAMP,
) -> Iterator[bytes]:
    """Yield ``count`` signed VAAs (bytes), deterministic for (count, seed, guardians, mix).

    Fresh messages get increasing sequences per emitter; every fresh VAA is signed by a random
    quorum-or-larger subset. Duplicates re-sign an earlier body with another subset (same
    digest); conflicts sign a new body (new timestamp and payload) for an earlier message id.
    """
    if count < 0:
        raise ValueError("count must not be negative")
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not a secret
    kinds = [k for k in KINDS if mix.weights.get(k, 0) > 0]
    weights = [mix.weights[k] for k in kinds]
    sequences: dict[tuple[int, bytes], int] = {}
    bodies: list[tuple[bytes, str, int, bytes, int]] = []
    slots = list(range(guardians.count))
    other_emitters = [
        keccak256(seed.to_bytes(8, "big", signed=True) + bytes((i,))) for i in range(4)
    ]
    timestamp = start_timestamp

    def subset() -> list[int]:
        size = rng.randrange(guardians.quorum, guardians.count + 1)
        return sorted(rng.sample(slots, size))

    for _ in range(count):
        roll = rng.random()
        if bodies and roll < mix.duplicate:
            body = rng.choice(bodies)[0]
        elif bodies and roll < mix.duplicate + mix.conflict:
            _, kind, chain, emitter, sequence = rng.choice(bodies)
            timestamp += rng.randrange(1, 5)
            body = encode_body(
                timestamp=timestamp,
                nonce=rng.randrange(2**32),
                emitter_chain=chain,
                emitter_address=emitter,
                sequence=sequence,
                consistency_level=200,
                payload=_payload(kind, rng, chain),
            )
        else:
            kind = rng.choices(kinds, weights)[0]
            chain = rng.choice(_SOURCE_CHAINS)
            if kind == "nft_transfer":
                emitter = guardians.nft_bridge_emitter
            elif kind == "other":
                emitter = rng.choice(other_emitters)
            else:
                emitter = guardians.token_bridge_emitter
            sequence = sequences.get((chain, emitter), 0)
            sequences[(chain, emitter)] = sequence + 1
            timestamp += rng.randrange(0, 3)
            body = encode_body(
                timestamp=timestamp,
                nonce=rng.randrange(2**32),
                emitter_chain=chain,
                emitter_address=emitter,
                sequence=sequence,
                consistency_level=rng.choice((1, 15, 32, 200, 201)),
                payload=_payload(kind, rng, chain),
            )
            bodies.append((body, kind, chain, emitter, sequence))
            if len(bodies) > 1000:
                bodies.pop(0)
        yield guardians.sign_body(body, guardian_set_index=guardian_set_index, signers=subset())
