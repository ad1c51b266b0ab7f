"""The pure validation rules: each refuses with its name and a reason, and is counted."""

from __future__ import annotations

import pytest

from chainloom.relayer.validation import (
    PURE_RULES,
    Accepted,
    Rejection,
    Rule,
    ValidationPolicy,
    Validator,
)
from chainloom.wormhole import (
    DEV_NFT_BRIDGE_EMITTER,
    DEV_TOKEN_BRIDGE_EMITTER,
    TOKEN_BRIDGE_EMITTERS,
    GuardianSets,
    SignatureCache,
    TokenTransfer,
    parse_vaa,
)
from tests.ingest_support import (
    GUARDIANS,
    MIN_FEE,
    SOURCE_CHAIN,
    TARGET_CHAIN,
    TOKEN,
    dev_policy,
    flip_signature_byte,
    signed_transfer,
    transfer_payload,
)


def validator(policy: ValidationPolicy | None = None) -> Validator:
    return Validator(policy or dev_policy(), GUARDIANS.sets())


def rejected(result: Accepted | Rejection) -> Rejection:
    assert isinstance(result, Rejection), f"expected a rejection, got {result}"
    return result


def test_a_valid_transfer_passes_every_pure_rule():
    check = validator()
    vaa = signed_transfer(1)

    result = check.check(vaa.to_bytes())

    assert isinstance(result, Accepted)
    assert result.vaa.digest == vaa.digest
    assert result.target_chain == TARGET_CHAIN
    assert isinstance(result.transfer, TokenTransfer)
    assert result.transfer.fee == MIN_FEE
    counts = check.counters.snapshot()
    assert all(counts[rule.value] == {"passed": 1, "rejected": 0} for rule in PURE_RULES)
    assert counts["not_queued"] == {"passed": 0, "rejected": 0}


def test_garbage_does_not_parse():
    result = rejected(validator().check(b"\x01\x00\x00"))
    assert result.rule is Rule.PARSES
    assert result.reason.startswith("not a signed VAA: truncated")
    assert result.vaa is None


def test_a_flipped_signature_byte_is_refused_by_the_signature_rule():
    check = validator()
    result = rejected(check.check(flip_signature_byte(signed_transfer(1).to_bytes())))

    assert result.rule is Rule.SIGNATURES
    assert result.reason.startswith("signatures not verified: ")
    assert result.vaa is not None
    counts = check.counters.snapshot()
    assert counts["parses"] == {"passed": 1, "rejected": 0}
    assert counts["signatures"] == {"passed": 0, "rejected": 1}
    assert counts["known_emitter"] == {"passed": 0, "rejected": 0}


def test_below_quorum_is_refused():
    vaa = signed_transfer(1, signers=list(range(GUARDIANS.quorum - 1)))
    result = rejected(validator().check(vaa.to_bytes()))
    assert result.rule is Rule.SIGNATURES
    assert "quorum" in result.reason


def test_the_set_the_vaa_names_is_used_not_the_latest():
    # Signed by the dev keys but naming set 1, which this registry does not have.
    vaa = signed_transfer(1, guardian_set_index=1)
    result = rejected(validator().check(vaa.to_bytes()))
    assert result.rule is Rule.SIGNATURES
    assert "1" in result.reason


def test_signatures_of_other_keys_are_refused():
    other = GuardianSets([GUARDIANS.guardian_set(0)])
    stranger = type(GUARDIANS)(seed=b"someone else")
    vaa = stranger.sign(
        emitter_chain=SOURCE_CHAIN,
        emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
        sequence=1,
        payload=transfer_payload(),
    )
    result = rejected(Validator(dev_policy(), other).check(vaa.to_bytes()))
    assert result.rule is Rule.SIGNATURES


def test_an_unknown_emitter_is_refused():
    vaa = signed_transfer(1, emitter=DEV_NFT_BRIDGE_EMITTER)
    result = rejected(validator().check(vaa.to_bytes()))
    assert result.rule is Rule.KNOWN_EMITTER
    assert result.reason == (
        f"emitter {DEV_NFT_BRIDGE_EMITTER.hex()} on chain 2 (ethereum) is not a known token bridge"
    )


def test_the_emitter_is_matched_with_its_chain():
    # The dev token bridge address, but on a chain where it is not declared.
    vaa = signed_transfer(1, emitter_chain=5)
    assert rejected(validator().check(vaa.to_bytes())).rule is Rule.KNOWN_EMITTER


def test_asset_meta_is_not_a_transfer():
    meta = bytes((2,)) + TOKEN + (2).to_bytes(2, "big") + bytes((6,)) + b"USDC".ljust(32, b"\0")
    meta += b"USD Coin".ljust(32, b"\0")
    result = rejected(validator().check(signed_transfer(1, payload=meta).to_bytes()))
    assert result.rule is Rule.PAYLOAD_TYPE
    assert result.reason == "payload 2 is not a token-bridge transfer (payload 1)"


def test_payload_3_is_refused_unless_enabled():
    vaa = signed_transfer(1, payload_id=3, extra=b"hello")
    result = rejected(validator().check(vaa.to_bytes()))
    assert result.rule is Rule.PAYLOAD_TYPE
    assert "payload 3 (transfer with payload) is not relayed" in result.reason

    # Enabled, it needs a minimum fee of 0: payload 3 carries no fee.
    policy = dev_policy(allow_payload3=True)
    result = rejected(validator(policy).check(vaa.to_bytes()))
    assert result.rule is Rule.FEE
    assert result.reason.startswith(f"fee 0 is below the minimum {MIN_FEE}")

    free = ValidationPolicy(
        known_emitters=policy.known_emitters,
        target_chains=policy.target_chains,
        min_fees=dict.fromkeys(policy.min_fees, 0),
        allow_payload3=True,
    )
    accepted = validator(free).check(vaa.to_bytes())
    assert isinstance(accepted, Accepted)
    assert accepted.target_chain == TARGET_CHAIN


def test_a_truncated_transfer_is_malformed():
    payload = transfer_payload()[:120]
    result = rejected(validator().check(signed_transfer(1, payload=payload).to_bytes()))
    assert result.rule is Rule.PAYLOAD_TYPE
    assert result.reason.startswith("malformed token-bridge transfer")


def test_an_unsupported_target_chain_is_refused():
    result = rejected(validator().check(signed_transfer(1, to_chain=5).to_bytes()))
    assert result.rule is Rule.TARGET_CHAIN
    assert result.reason == "target chain 5 (polygon) is not supported"


def test_an_origin_asset_off_the_allowlist_is_refused():
    other = bytes(12) + b"\x77" * 20
    result = rejected(validator().check(signed_transfer(1, token=other).to_bytes()))
    assert result.rule is Rule.ORIGIN_ASSET
    assert (
        result.reason == f"origin asset {other.hex()} on chain 2 (ethereum) is not on the allowlist"
    )
    # The same address native to another chain is another asset.
    result = rejected(validator().check(signed_transfer(2, token_chain=6).to_bytes()))
    assert result.rule is Rule.ORIGIN_ASSET


@pytest.mark.parametrize(
    ("fee", "accepted"), [(MIN_FEE - 1, False), (MIN_FEE, True), (10**30, True)]
)
def test_the_fee_must_reach_the_tokens_minimum(fee, accepted):
    result = validator().check(signed_transfer(1, fee=fee, amount=10**30).to_bytes())
    assert isinstance(result, Accepted) is accepted
    if not accepted:
        assert rejected(result).rule is Rule.FEE
        assert rejected(result).reason == (
            f"fee {fee} is below the minimum {MIN_FEE} for origin asset {TOKEN.hex()} "
            "on chain 2 (ethereum)"
        )


@pytest.mark.parametrize(
    ("amount", "fee", "reason"),
    [
        (0, 0, "amount is 0: the token bridge does not transfer nothing"),
        (0, MIN_FEE, "amount is 0: the token bridge does not transfer nothing"),
        (MIN_FEE, MIN_FEE + 1, f"fee {MIN_FEE + 1} exceeds the amount {MIN_FEE}"),
        (1, 2**256 - 1, f"fee {2**256 - 1} exceeds the amount 1"),
    ],
)
def test_a_transfer_of_nothing_or_with_a_fee_above_its_amount_is_refused(amount, fee, reason):
    check = validator()
    result = rejected(check.check(signed_transfer(1, amount=amount, fee=fee).to_bytes()))
    assert (result.rule, result.reason) == (Rule.AMOUNT, reason)
    counts = check.counters.snapshot()
    assert counts["amount"] == {"passed": 0, "rejected": 1}
    assert counts["payload_type"] == {"passed": 1, "rejected": 0}
    assert counts["target_chain"] == {"passed": 0, "rejected": 0}


def test_a_fee_equal_to_the_amount_is_accepted():
    result = validator().check(signed_transfer(1, amount=MIN_FEE, fee=MIN_FEE).to_bytes())
    assert isinstance(result, Accepted)


def test_a_payload3_transfer_of_nothing_is_refused():
    check = validator(dev_policy(allow_payload3=True))
    result = rejected(check.check(signed_transfer(1, payload_id=3, amount=0).to_bytes()))
    assert result.rule is Rule.AMOUNT


def test_every_copy_of_a_vaa_is_judged_alike_and_the_cache_makes_repeats_cheap():
    cache = SignatureCache()
    check = Validator(dev_policy(), GUARDIANS.sets(), cache=cache)
    original = signed_transfer(1)
    copies = [GUARDIANS.resign(original, signers=list(range(i, i + 13))) for i in range(7)]

    results = [check.check(c.to_bytes()) for c in copies]

    assert all(isinstance(r, Accepted) for r in results)
    assert {r.vaa.digest for r in results if isinstance(r, Accepted)} == {original.digest}
    assert cache.hits > 0


def test_a_real_mainnet_transfer_is_accepted_and_a_tampered_copy_refused(vaa_vectors):
    vector = next(
        v
        for v in vaa_vectors
        if v["expected"]["category"] == "token_transfer"
        and v["expected"]["verified_against"].startswith("mainnet")
        and int(v["expected"]["token_bridge"]["fee"]) > 0
    )
    raw = bytes.fromhex(vector["hex"])
    vaa = parse_vaa(raw)
    transfer = vector["expected"]["token_bridge"]
    policy = ValidationPolicy(
        known_emitters=frozenset(TOKEN_BRIDGE_EMITTERS.items()),
        target_chains=frozenset({transfer["to_chain"]}),
        min_fees={(transfer["token_chain"], bytes.fromhex(transfer["token_address"])): 1},
    )
    check = Validator(policy, GuardianSets.mainnet(), clock=lambda: vaa.timestamp)

    accepted = check.check(raw)
    assert isinstance(accepted, Accepted), accepted
    assert accepted.vaa.digest_hex == vector["expected"]["digest"]

    result = rejected(check.check(flip_signature_byte(raw, signature_number=3)))
    assert result.rule is Rule.SIGNATURES
    assert result.reason.startswith("signatures not verified: ")


def test_wildcard_assets_are_allowed_with_their_own_minimum():
    base = dev_policy()
    policy = ValidationPolicy(
        known_emitters=base.known_emitters,
        target_chains=base.target_chains,
        min_fees=base.min_fees,
        chain_min_fees={6: 10},
        any_asset_min_fee=1000,
    )
    check = validator(policy)
    other = bytes(12) + b"\x77" * 20
    # Listed exactly: its own minimum.
    assert isinstance(check.check(signed_transfer(1, fee=MIN_FEE).to_bytes()), Accepted)
    # Native to chain 6: the chain-wide minimum.
    assert isinstance(
        check.check(signed_transfer(2, token=other, token_chain=6, fee=10).to_bytes()), Accepted
    )
    # Anything else: the catch-all minimum.
    cheap = rejected(check.check(signed_transfer(3, token=other, fee=999).to_bytes()))
    assert cheap.rule is Rule.FEE
    assert "below the minimum 1000" in cheap.reason
    assert isinstance(check.check(signed_transfer(4, token=other, fee=1000).to_bytes()), Accepted)


def test_vaa_text_is_hex_or_base64():
    import base64

    from chainloom.relayer.validation import decode_text
    from chainloom.wormhole.errors import VAAParseError

    raw = signed_transfer(1).to_bytes()
    for text in (
        raw.hex(),
        "0x" + raw.hex().upper(),
        f"  {raw.hex()}\n",
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    ):
        assert decode_text(text) == raw
    # The wording is the wormhole decoder's; it names the offending character.
    with pytest.raises(VAAParseError, match="'g'"):
        decode_text("0x0g")
    with pytest.raises(VAAParseError, match=r"'!'|'n'"):
        decode_text("not a vaa!")
