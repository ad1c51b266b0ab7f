"""Property and fuzz tests: round trips of generated VAAs; hostile input sees only our errors."""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainloom.wormhole import (
    VAA,
    GuardianSets,
    RawPayload,
    Signature,
    WormholeError,
    decode_payload,
    parse_vaa,
    parse_vaa_text,
    verify_vaa,
)
from chainloom.wormhole.errors import PayloadParseError
from chainloom.wormhole.payloads import (
    decode_governance_payload,
    decode_nft_bridge_payload,
    decode_token_bridge_payload,
)
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import generate_vaas

_signatures = st.lists(st.integers(0, 255), unique=True, max_size=30).flatmap(
    lambda indices: st.tuples(
        *[
            st.builds(
                Signature, guardian_index=st.just(i), signature=st.binary(min_size=65, max_size=65)
            )
            for i in sorted(indices)
        ]
    )
)

vaas = st.builds(
    VAA,
    version=st.just(1),
    guardian_set_index=st.integers(0, 2**32 - 1),
    signatures=_signatures,
    timestamp=st.integers(0, 2**32 - 1),
    nonce=st.integers(0, 2**32 - 1),
    emitter_chain=st.integers(0, 2**16 - 1),
    emitter_address=st.binary(min_size=32, max_size=32),
    sequence=st.integers(0, 2**64 - 1),
    consistency_level=st.integers(0, 255),
    payload=st.binary(max_size=600),
)


@settings(max_examples=300, deadline=None)
@given(vaas)
def test_round_trip_is_byte_exact(vaa):
    raw = vaa.to_bytes()
    parsed = parse_vaa(raw)
    assert parsed == vaa
    assert parsed.to_bytes() == raw
    assert parsed.body == vaa.body
    assert parsed.digest == vaa.digest
    assert parse_vaa(parsed.to_bytes()) == parsed
    assert parse_vaa_text(raw.hex()) == vaa
    assert parsed.message_id.split("/") == [
        str(vaa.emitter_chain),
        vaa.emitter_address.hex(),
        str(vaa.sequence),
    ]
    decode_payload(parsed)  # never raises


@settings(max_examples=40, deadline=None)
@given(
    signers=st.lists(st.integers(0, 6), min_size=1, max_size=7, unique=True),
    payload=st.binary(max_size=200),
    sequence=st.integers(0, 2**64 - 1),
)
def test_dev_signed_vaas_verify_exactly_when_quorum_is_met(signers, payload, sequence):
    kit = _KIT
    vaa = kit.sign(
        emitter_chain=5,
        emitter_address=bytes(31) + b"\x09",
        sequence=sequence,
        payload=payload,
        signers=signers,
    )
    result = verify_vaa(vaa, _KIT_SETS)
    assert result.quorum == 5
    assert result.quorum_met == (len(signers) >= 5)
    assert result.valid == result.quorum_met
    assert list(result.signers) == [_KIT_SETS.current.checksummed[i] for i in sorted(signers)]


_KIT = DevGuardians(count=7, seed=b"property")
_KIT_SETS = _KIT.sets(0)

# --------------------------------------------------------------------------------------------
# Fuzz: >= 100,000 random and mutated inputs; only WormholeError may come out.


def _mutations(seeds: list[bytes], rng: random.Random, count: int):
    for _ in range(count):
        base = bytearray(rng.choice(seeds))
        kind = rng.randrange(8)
        if kind == 0:  # truncation
            yield bytes(base[: rng.randrange(len(base) + 1)])
        elif kind == 1:  # bit flips
            for _ in range(rng.randrange(1, 6)):
                position = rng.randrange(len(base))
                base[position] ^= 1 << rng.randrange(8)
            yield bytes(base)
        elif kind == 2:  # length lie: signature count
            base[5] = rng.randrange(256)
            yield bytes(base)
        elif kind == 3:  # length lies inside payloads (uri length, guardian count ...)
            if len(base) > 6:
                position = rng.randrange(6, len(base))
                base[position] = rng.choice((0, 1, 2, 3, 19, 127, 200, 201, 255))
            yield bytes(base)
        elif kind == 4:  # random bytes, VAA-ish prefix
            yield bytes([1]) + rng.randbytes(rng.randrange(0, 400))
        elif kind == 5:  # pure noise
            yield rng.randbytes(rng.randrange(0, 200))
        elif kind == 6:  # splice two inputs
            other = rng.choice(seeds)
            cut = rng.randrange(len(base) + 1)
            yield bytes(base[:cut]) + other[rng.randrange(len(other) + 1) :]
        else:  # insert or delete a run
            position = rng.randrange(len(base) + 1)
            if rng.random() < 0.5:
                yield (
                    bytes(base[:position])
                    + rng.randbytes(rng.randrange(1, 70))
                    + bytes(base[position:])
                )
            else:
                yield bytes(base[:position]) + bytes(base[position + rng.randrange(1, 70) :])


STRICT_DECODERS = (
    decode_token_bridge_payload,
    decode_nft_bridge_payload,
    decode_governance_payload,
)


@pytest.mark.slow
def test_fuzz_only_library_errors(vaa_vectors):
    rng = random.Random(20261122)
    kit = DevGuardians(count=7, seed=b"fuzz")
    seeds = [bytes.fromhex(v["hex"]) for v in vaa_vectors]
    seeds += list(generate_vaas(40, seed=5, guardians=kit))
    sets = GuardianSets.mainnet()
    dev_sets = kit.sets(0)
    outcomes = {"parsed": 0, "refused": 0}
    for position, data in enumerate(_mutations(seeds, rng, 110_000)):
        try:
            vaa = parse_vaa(data)
        except WormholeError:
            outcomes["refused"] += 1
            continue
        except Exception as error:  # pragma: no cover - the assertion
            raise AssertionError(f"input {position} ({data.hex()}) raised {error!r}") from error
        outcomes["parsed"] += 1
        payload = decode_payload(vaa)
        assert payload.kind
        if isinstance(payload, RawPayload) and payload.error:
            assert payload.error  # malformed known payloads say why
        assert vaa.to_bytes() == data
        for strict in STRICT_DECODERS:  # the strict decoders raise only PayloadParseError
            with contextlib.suppress(PayloadParseError):
                strict(vaa.payload)
        if position % 50 == 0:  # recovery is slow; verify a sample
            result = verify_vaa(vaa, dev_sets if position % 100 else sets)
            assert result.valid == (result.reason is None)
    assert outcomes["parsed"] > 10_000
    assert outcomes["refused"] > 10_000
    # text inputs: random strings only ever give our errors
    for _ in range(5_000):
        text = "".join(
            rng.choice("0123456789abcdefxAQ+/=_- z") for _ in range(rng.randrange(0, 60))
        )
        with contextlib.suppress(WormholeError):
            parse_vaa_text(text)
