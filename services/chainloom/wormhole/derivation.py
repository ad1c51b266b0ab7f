"""Deriving guardian sets from the chain of guardian-set upgrade VAAs.

Nobody has to be trusted for the list of mainnet guardians beyond the bootstrap key of set 0:
each later set was announced by a Core governance VAA (action 2) signed by a quorum of the set
before it. Walking those VAAs in order, verifying each against the set derived so far, gives
every set with its provenance. The shipped ``data/mainnet_guardian_sets.json`` is the output of
this walk; a unit test re-runs it on the upgrade VAAs in the shared vectors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chainloom.wormhole.emitters import GOVERNANCE_CHAIN, GOVERNANCE_EMITTER
from chainloom.wormhole.errors import GuardianSetUpgradeError, PayloadParseError
from chainloom.wormhole.guardians import GUARDIAN_SET_EXPIRY_SECONDS, GuardianSet, GuardianSets
from chainloom.wormhole.payloads import GuardianSetUpgrade, decode_governance_payload
from chainloom.wormhole.vaa import VAA
from chainloom.wormhole.verify import verify_vaa

__all__ = ["DerivedGuardianSet", "derive_guardian_sets"]


@dataclass(frozen=True, slots=True)
class DerivedGuardianSet:
    """One set of the derived chain and the upgrade VAA it came from."""

    guardian_set: GuardianSet
    """The set (with its expiry filled in once a successor exists)."""
    upgrade_digest: str | None
    """Digest (0x hex) of the upgrade VAA that introduced it; None for the bootstrap set."""
    upgrade_timestamp: int | None
    """Body timestamp of that upgrade VAA."""
    signers: tuple[str, ...]
    """Guardians of the previous set that signed the upgrade (EIP-55)."""


def derive_guardian_sets(
    bootstrap: GuardianSet, upgrades: Iterable[VAA]
) -> list[DerivedGuardianSet]:
    """Walk ``upgrades`` (in any order) from ``bootstrap`` and return every set, oldest first.

    Each upgrade must come from the governance emitter, carry a Core GuardianSetUpgrade whose
    new index is the previous index plus one, and verify (quorum, every signature matching)
    against the previous set. A set's ``expiration_time`` becomes the upgrade's timestamp plus
    24 hours (the EVM rule). Raises :class:`GuardianSetUpgradeError` naming the broken link.
    """
    pending = sorted(upgrades, key=lambda v: (v.guardian_set_index, v.sequence))
    chain = [DerivedGuardianSet(bootstrap, None, None, ())]
    for position, vaa in enumerate(pending):
        previous = chain[-1].guardian_set
        if (vaa.emitter_chain, vaa.emitter_address) != (GOVERNANCE_CHAIN, GOVERNANCE_EMITTER):
            raise GuardianSetUpgradeError(position, "not emitted by the governance emitter")
        try:
            message = decode_governance_payload(vaa.payload)
        except PayloadParseError as error:
            raise GuardianSetUpgradeError(position, str(error)) from None
        if not isinstance(message, GuardianSetUpgrade):
            raise GuardianSetUpgradeError(position, "payload is not a Core guardian set upgrade")
        if vaa.guardian_set_index != previous.index:
            raise GuardianSetUpgradeError(
                position,
                f"signed by set {vaa.guardian_set_index}, expected set {previous.index}",
            )
        if message.new_guardian_set_index != previous.index + 1:
            raise GuardianSetUpgradeError(
                position,
                f"announces set {message.new_guardian_set_index} after set {previous.index}",
            )
        verification = verify_vaa(vaa, GuardianSets([previous]))
        if not verification.valid:
            raise GuardianSetUpgradeError(position, f"does not verify: {verification.reason}")
        expired = GuardianSet(
            index=previous.index,
            addresses=previous.addresses,
            expiration_time=vaa.timestamp + GUARDIAN_SET_EXPIRY_SECONDS,
        )
        last = chain[-1]
        chain[-1] = DerivedGuardianSet(
            expired, last.upgrade_digest, last.upgrade_timestamp, last.signers
        )
        chain.append(
            DerivedGuardianSet(
                GuardianSet(
                    index=message.new_guardian_set_index, addresses=message.new_guardian_keys
                ),
                vaa.digest_hex,
                vaa.timestamp,
                verification.signers,
            )
        )
    return chain
