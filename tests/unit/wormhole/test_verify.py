"""Signature verification: every rule, the cache and expiry (VAAs signed by the dev kit)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pytest

from chainloom.wormhole import (
    VAA,
    GuardianSet,
    GuardianSets,
    Signature,
    SignatureCache,
    parse_vaa,
    recover_signer,
    verify_vaa,
)
from chainloom_dev.sim.dev_guardians import DevGuardians

KIT = DevGuardians(count=7, seed=b"verify-tests")
SETS = KIT.sets(3)


def _signed(signers: Iterable[int] | None = None, **overrides: Any) -> VAA:
    fields: dict[str, Any] = {
        "emitter_chain": 2,
        "emitter_address": KIT.token_bridge_emitter,
        "sequence": 11,
        "payload": b"\x01payload",
        "guardian_set_index": 3,
    }
    fields.update(overrides)
    return KIT.sign(signers=signers, **fields)


def test_valid_with_quorum():
    vaa = _signed(signers=[0, 2, 3, 5, 6])
    result = verify_vaa(vaa, SETS)
    assert result.valid
    assert result.reason is None
    assert result.quorum == 5
    assert result.quorum_met
    assert result.guardian_set_index == 3
    assert list(result.signers) == [SETS.get(3).checksummed[i] for i in (0, 2, 3, 5, 6)]


def test_below_quorum():
    result = verify_vaa(_signed(signers=[0, 1, 2, 3]), SETS)
    assert not result.valid
    assert not result.quorum_met
    assert result.reason == "quorum not met: 4 of 7 guardians signed, 5 needed"
    assert len(result.signers) == 4


def test_unknown_set_is_an_answer_not_an_exception():
    result = verify_vaa(_signed(guardian_set_index=9), SETS)
    assert not result.valid
    assert result.reason == "unknown guardian set 9 (known: 3)"
    assert result.quorum == 0


def test_signature_from_another_guardian_set():
    other = DevGuardians(count=7, seed=b"someone-else")
    vaa = other.sign(
        emitter_chain=2, emitter_address=bytes(32), sequence=1, payload=b"", guardian_set_index=3
    )
    result = verify_vaa(vaa, SETS)
    assert not result.valid
    assert result.reason == "signature 0 (guardian 0) does not match guardian set 3"
    assert not result.quorum_met


def test_signature_in_the_wrong_slot():
    vaa = _signed(signers=[0, 1, 2, 3, 4])
    moved = list(vaa.signatures)
    moved[4] = Signature(guardian_index=6, signature=moved[4].signature)  # guardian 4's sig
    result = verify_vaa(dataclasses.replace(vaa, signatures=tuple(moved)), SETS)
    assert not result.valid
    assert result.reason == "signature 4 (guardian 6) does not match guardian set 3"


def test_tampered_body_fails():
    vaa = _signed(signers=range(7))
    tampered = dataclasses.replace(vaa, payload=b"\x01PAYLOAD")
    result = verify_vaa(tampered, SETS)
    assert not result.valid
    assert "does not match guardian set 3" in (result.reason or "")


def test_index_out_of_range():
    vaa = _signed(signers=[0, 1, 2, 3, 4])
    sigs = list(vaa.signatures)
    sigs[4] = Signature(guardian_index=7, signature=sigs[4].signature)
    result = verify_vaa(dataclasses.replace(vaa, signatures=tuple(sigs)), SETS)
    assert result.reason == "signature 4 names guardian 7 but guardian set 3 has 7 guardians"


def test_out_of_order_built_in_memory():
    vaa = _signed(signers=[0, 1, 2, 3, 4])
    sigs = list(vaa.signatures)
    sigs[1], sigs[2] = sigs[2], sigs[1]
    result = verify_vaa(dataclasses.replace(vaa, signatures=tuple(sigs)), SETS)
    assert not result.valid
    assert "out of order" in (result.reason or "")


def test_more_signatures_than_guardians():
    small = GuardianSets([GuardianSet(index=3, addresses=KIT.addresses[:3])])
    result = verify_vaa(_signed(signers=[0, 1, 2, 3, 4]), small)
    assert result.reason == "5 signatures but guardian set 3 has 3 guardians"


def test_no_signatures():
    vaa = dataclasses.replace(_signed(), signatures=())
    assert verify_vaa(vaa, SETS).reason == "no signatures"


def test_unrecoverable_signature():
    vaa = _signed(signers=[0, 1, 2, 3, 4])
    sigs = list(vaa.signatures)
    sigs[0] = Signature(guardian_index=0, signature=b"\xff" * 64 + b"\x00")  # r, s >= n
    sigs[1] = Signature(guardian_index=1, signature=sigs[1].signature[:64] + b"\x09")  # bad v
    result = verify_vaa(dataclasses.replace(vaa, signatures=tuple(sigs)), SETS)
    assert result.reason == "signature 0 (guardian 0) is not a valid secp256k1 signature"
    assert len(result.signers) == 3


def test_evm_style_v_is_accepted():
    vaa = _signed()
    sig = vaa.signatures[0].signature
    evm = sig[:64] + bytes((sig[64] + 27,))
    assert recover_signer(vaa.digest, evm) == recover_signer(vaa.digest, sig) == KIT.addresses[0]


def test_expiry_rule():
    expiring = GuardianSets([KIT.guardian_set(3), KIT.guardian_set(4)])
    expiring = expiring.with_set(
        GuardianSet(index=3, addresses=KIT.addresses, expiration_time=1_000)
    )
    vaa = _signed(signers=range(5))
    assert verify_vaa(vaa, expiring).valid  # archival: no clock, no expiry
    assert verify_vaa(vaa, expiring, now=1_000).valid
    late = verify_vaa(vaa, expiring, now=1_001)
    assert not late.valid
    assert late.reason is not None
    assert "guardian set 3 expired at 1000" in late.reason
    current = KIT.resign(vaa, guardian_set_index=4, signers=range(5))
    assert verify_vaa(current, expiring, now=10**9).valid
    assert current.digest == vaa.digest


def test_cache_hits_for_repeats_and_never_accepts_a_bad_signature():
    cache = SignatureCache(max_entries=1_000)
    first = _signed(signers=[0, 1, 2, 3, 4])
    second = KIT.resign(first, signers=[2, 3, 4, 5, 6])
    assert verify_vaa(first, SETS, cache=cache).valid
    assert (cache.hits, cache.misses) == (0, 5)
    assert verify_vaa(second, SETS, cache=cache).valid
    assert (cache.hits, cache.misses) == (3, 7)
    assert verify_vaa(parse_vaa(first.to_bytes()), SETS, cache=cache).valid
    assert cache.hits == 8
    # a signature moved to another slot is a different key: recovered and refused
    sigs = list(first.signatures)
    sigs[0] = Signature(guardian_index=5, signature=sigs[0].signature)
    sigs.sort(key=lambda s: s.guardian_index)
    moved = dataclasses.replace(first, signatures=tuple(sigs))
    result = verify_vaa(moved, SETS, cache=cache)
    assert not result.valid
    assert "(guardian 5) does not match" in (result.reason or "")
    # a tampered body has another digest, so nothing cached applies
    tampered = dataclasses.replace(first, nonce=first.nonce + 1)
    assert not verify_vaa(tampered, SETS, cache=cache).valid


def test_cache_is_bounded_first_in_first_out():
    cache = SignatureCache(max_entries=3)
    vaa = _signed(signers=[0, 1, 2, 3, 4])
    verify_vaa(vaa, SETS, cache=cache)
    assert len(cache) == 3
    misses = cache.misses
    verify_vaa(vaa, SETS, cache=cache)  # the first two were evicted, then the rest in turn
    assert cache.misses > misses
    cache.clear()
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)
    with pytest.raises(ValueError, match="positive"):
        SignatureCache(max_entries=0)


# --------------------------------------------------------------------------------------------
# The dev kit


def test_cache_shared_between_threads():
    from concurrent.futures import ThreadPoolExecutor

    cache = SignatureCache(max_entries=8)
    vaas = [_signed(signers=range(7), sequence=n) for n in range(6)]

    def check(vaa: VAA) -> bool:
        return all(verify_vaa(vaa, SETS, cache=cache).valid for _ in range(3))

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(check, vaas * 3))
    assert len(cache) <= 8
    assert cache.hits + cache.misses == 6 * 3 * 3 * 7
