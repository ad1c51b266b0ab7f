"""The VAA workload generator: determinism, verifiable lines, the mainnet-like shape, mixes."""

from __future__ import annotations

from collections import Counter

import pytest

from chainloom.wormhole import (
    RawPayload,
    SignatureCache,
    decode_payload,
    mainnet_emitters,
    parse_vaa,
    verify_vaa,
)
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import DEFAULT_MIX, Mix, generate_vaas

KIT = DevGuardians(count=7, seed=b"workload")


def test_generate_is_deterministic_and_every_line_verifies():
    first = list(generate_vaas(200, seed=11, guardians=KIT))
    assert first == list(generate_vaas(200, seed=11, guardians=KIT))
    assert first != list(generate_vaas(200, seed=12, guardians=KIT))
    sets = KIT.sets(0)
    cache = SignatureCache()
    vaas = [parse_vaa(raw) for raw in first]
    assert all(verify_vaa(v, sets, cache=cache).valid for v in vaas)
    assert cache.hits > 0  # duplicates share signatures


def test_generated_stream_has_the_mainnet_like_shape():
    vaas = [parse_vaa(raw) for raw in generate_vaas(600, seed=3, guardians=KIT)]
    known = mainnet_emitters().with_dev_emitters(range(1, 40))
    kinds = Counter(decode_payload(v, emitters=known).kind for v in vaas)
    assert kinds["token_transfer"] > kinds["token_transfer_with_payload"] > 0
    assert kinds["asset_meta"] > 0
    assert kinds["nft_transfer"] > 0
    assert kinds["raw"] > 0
    assert all(
        isinstance(p, RawPayload) and p.error is None
        for p in (decode_payload(v, emitters=known) for v in vaas)
        if p.kind == "raw"
    )
    by_digest = Counter(v.digest for v in vaas)
    duplicates = sum(n - 1 for n in by_digest.values())
    assert 0.1 * len(vaas) < duplicates < 0.35 * len(vaas)
    copies = [v for v in vaas if by_digest[v.digest] > 1]
    assert len({v.to_bytes() for v in copies}) > len({v.digest for v in copies})  # other subsets
    digests_per_id: dict[str, set[bytes]] = {}
    for v in vaas:
        digests_per_id.setdefault(v.message_id, set()).add(v.digest)
    conflicts = [m for m, d in digests_per_id.items() if len(d) > 1]
    assert conflicts  # a few message ids with two different VAAs
    assert len(conflicts) < 0.05 * len(digests_per_id)


def test_mix_parsing():
    mix = Mix.parse("token_transfer=3,nft_transfer=1,duplicate=0.5,conflict=0")
    assert dict(mix.weights) == {"token_transfer": 3.0, "nft_transfer": 1.0}
    assert (mix.duplicate, mix.conflict) == (0.5, 0.0)
    only = list(generate_vaas(30, seed=1, guardians=KIT, mix=Mix.parse("asset_meta=1,duplicate=0")))
    assert {decode_payload(parse_vaa(v)).kind for v in only} == {"asset_meta"}
    assert Mix.parse("").weights == DEFAULT_MIX.weights


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus=1", "unknown message kinds"),
        ("token_transfer", "expected name=value"),
        ("token_transfer=x", "is not a number"),
        ("duplicate=1.5", "duplicate rate"),
        ("token_transfer=0", "positive sum"),
        ("duplicate=0.6,conflict=0.5", "below 1"),
    ],
)
def test_bad_mixes(text, message):
    with pytest.raises(ValueError, match=message):
        Mix.parse(text)
