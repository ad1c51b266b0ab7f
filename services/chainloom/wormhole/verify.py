"""Guardian signature verification, with a cache that makes the spy's repeats cheap.

Rules (wormhole-foundation/wormhole ``sdk/vaa/structs.go`` ``verifySignatures`` and the EVM
``Messages.sol``, which agree): the set is the one the
VAA *names*; at least one and at most N signatures; guardian indices in range and strictly
ascending; every signature must recover (secp256k1, no message prefix) to the address in its
slot; quorum is floor(2N/3)+1 signatures; an old set is refused after its expiry.

Recovery costs ~35 microseconds per signature and dominates everything else. The spy delivers
each VAA ~10 times with different 13-of-19 subsets of the same signatures, so
:class:`SignatureCache` remembers which address a (digest, guardian index, signature) triple
recovered to; a repeat then costs a dictionary lookup per signature. Only what was actually
recovered is cached, so a cache can never make a bad signature pass.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from coincurve import PublicKey

from chainloom.wormhole.chains import checksum_address
from chainloom.wormhole.errors import UnknownGuardianSetError
from chainloom.wormhole.guardians import GuardianSet, GuardianSets, quorum
from chainloom.wormhole.hashing import keccak256
from chainloom.wormhole.vaa import VAA, raw_signatures, signature_entries

__all__ = ["SignatureCache", "Verification", "recover_signer", "verify_vaa"]

_from_signature_and_message = PublicKey.from_signature_and_message

_MISSING = object()

# Guardian addresses repeat endlessly; their EIP-55 form costs a hash, so remember them.
_CHECKSUMMED: dict[bytes, str] = {}


def _checksummed(address: bytes) -> str:
    text = _CHECKSUMMED.get(address)
    if text is None:
        if len(_CHECKSUMMED) >= 4096:
            _CHECKSUMMED.clear()
        text = _CHECKSUMMED[address] = checksum_address(address)
    return text


def _recover_entries(digest: bytes, entries: list[bytes]) -> list[bytes | None]:
    return [recover_signer(digest, entry[1:]) for entry in entries]


def recover_signer(digest: bytes, signature: bytes) -> bytes | None:
    """The 20-byte address that produced ``signature`` over ``digest``; None if unrecoverable.

    ``signature`` is r||s||v with v the recovery id 0..3 (EVM's 27/28 are accepted too).
    """
    recovery_id = signature[64]
    if recovery_id >= 27:
        recovery_id -= 27
        signature = signature[:64] + bytes((recovery_id,))
    if recovery_id > 3:
        return None
    try:
        public_key = _from_signature_and_message(signature, digest, hasher=None)
    except (ValueError, TypeError):
        return None
    return keccak256(public_key.format(compressed=False)[1:])[12:]


class SignatureCache:
    """Bounded cache of recovered signers keyed by (digest, guardian index, signature).

    Eviction is first-in first-out once ``max_entries`` is reached: repeats of one VAA arrive
    within seconds of each other, so the oldest entries are the ones no longer needed.
    Safe to share between threads: lookups are single dict reads, and inserts, evictions and
    counters run under a lock.
    """

    __slots__ = ("_entries", "_lock", "hits", "max_entries", "misses")

    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        """Most entries kept."""
        self._entries: dict[bytes, bytes | None] = {}
        self._lock = threading.Lock()
        self.hits = 0
        """Lookups answered from the cache."""
        self.misses = 0
        """Lookups that needed a recovery."""

    def __len__(self) -> int:
        return len(self._entries)

    def recover(self, digest: bytes, guardian_index: int, signature: bytes) -> bytes | None:
        """The recovered signer, from the cache or by recovering (and then remembering it)."""
        return self.recover_entries(digest, [bytes((guardian_index,)) + signature])[0]

    def recover_entries(self, digest: bytes, entries: list[bytes]) -> list[bytes | None]:
        """Recovered signers for 66-byte signature entries (guardian index || r || s || v)."""
        table = self._entries
        get = table.get
        recovered: list[bytes | None] = []
        hits = 0
        for entry in entries:
            key = digest + entry
            address = get(key, _MISSING)
            if address is _MISSING:
                address = recover_signer(digest, entry[1:])
                with self._lock:  # misses only: a recovery costs far more than the lock
                    while len(table) >= self.max_entries:
                        del table[next(iter(table))]
                    table[key] = address
                    self.misses += 1
            else:
                hits += 1
            recovered.append(address)  # type: ignore[arg-type]
        if hits:
            with self._lock:
                self.hits += hits
        return recovered

    def clear(self) -> None:
        """Forget everything (counters too)."""
        with self._lock:
            self._entries.clear()
            self.hits = 0
            self.misses = 0


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of checking a VAA's signatures against its guardian set."""

    valid: bool
    """Every signature matches its slot, quorum is met and the set is not expired."""
    quorum: int
    """Signatures needed for the named set (0 when the set is unknown)."""
    quorum_met: bool
    """Whether the count of matching signatures reaches ``quorum``."""
    signers: tuple[str, ...]
    """EIP-55 addresses recovered from the signatures, in signature order."""
    reason: str | None = None
    """Why the VAA is invalid (the first problem found); None when valid."""
    guardian_set_index: int | None = None
    """The set the VAA was checked against."""


def _invalid(reason: str, *, quorum_needed: int = 0, index: int | None = None) -> Verification:
    return Verification(
        valid=False,
        quorum=quorum_needed,
        quorum_met=False,
        signers=(),
        reason=reason,
        guardian_set_index=index,
    )


def verify_vaa(
    vaa: VAA,
    sets: GuardianSets,
    *,
    now: int | None = None,
    cache: SignatureCache | None = None,
) -> Verification:
    """Check ``vaa``'s signatures against the guardian set it names.

    ``now`` (unix seconds) enables the expiry rule; without it the check is archival (any
    known set is accepted, as when re-verifying stored history). Never raises for a bad VAA:
    the answer says why it is invalid.
    """
    index = vaa.guardian_set_index
    try:
        guardian_set = sets.get(index)
    except UnknownGuardianSetError as error:
        return _invalid(str(error), index=index)
    addresses = guardian_set.addresses
    size = len(addresses)
    needed = quorum(size)
    indices, entries = signature_entries(vaa)
    count = len(entries)
    if not count:
        return _invalid("no signatures", quorum_needed=needed, index=index)
    if count > size:
        return _invalid(
            f"{count} signatures but guardian set {index} has {size} guardians",
            quorum_needed=needed,
            index=index,
        )
    digest = vaa.digest
    well_formed = indices[-1] < size and indices == bytes(sorted(set(indices)))
    if not well_formed:
        return _verify_slowly(vaa, guardian_set, now)
    if cache is not None:
        recovered = cache.recover_entries(digest, entries)
    else:
        recovered = _recover_entries(digest, entries)
    matched = 0
    for guardian, address in zip(indices, recovered, strict=True):
        if address == addresses[guardian]:
            matched += 1
    get_checksum = _CHECKSUMMED.get
    signers = [get_checksum(a) or _checksummed(a) for a in recovered if a is not None]
    reason = None if matched == count else _first_mismatch(indices, recovered, guardian_set)
    return _conclude(signers, matched, reason, now=now, guardian_set=guardian_set)


def _first_mismatch(
    indices: bytes, recovered: list[bytes | None], guardian_set: GuardianSet
) -> str | None:
    for position, (guardian, address) in enumerate(zip(indices, recovered, strict=True)):
        if address is None:
            return f"signature {position} (guardian {guardian}) is not a valid secp256k1 signature"
        if address != guardian_set.addresses[guardian]:
            return (
                f"signature {position} (guardian {guardian}) does not match guardian set "
                f"{guardian_set.index}"
            )
    return None


def _conclude(
    signers: list[str],
    matched: int,
    reason: str | None,
    *,
    now: int | None,
    guardian_set: GuardianSet,
) -> Verification:
    index = guardian_set.index
    size = len(guardian_set.addresses)
    needed = quorum(size)
    quorum_met = matched >= needed
    if reason is None and not quorum_met:
        reason = f"quorum not met: {matched} of {size} guardians signed, {needed} needed"
    if reason is None and now is not None and guardian_set.is_expired(now):
        reason = (
            f"guardian set {index} expired at {guardian_set.expiration_time} "
            f"(checked at {now}); the VAA must be re-signed by the current set"
        )
    return Verification(
        valid=reason is None,
        quorum=needed,
        quorum_met=quorum_met,
        signers=tuple(signers),
        reason=reason,
        guardian_set_index=index,
    )


def _verify_slowly(vaa: VAA, guardian_set: GuardianSet, now: int | None) -> Verification:
    """Signature lists with indices out of order or out of range: explain the first problem."""
    index = guardian_set.index
    addresses = guardian_set.addresses
    size = len(addresses)
    digest = vaa.digest
    signers: list[str] = []
    reason: str | None = None
    previous = -1
    matched = 0
    for position, (guardian, signature) in enumerate(raw_signatures(vaa)):
        if guardian <= previous:
            reason = reason or (
                f"signature {position} (guardian {guardian}) is out of order: guardian indices "
                "must be strictly ascending"
            )
            continue
        previous = guardian
        if guardian >= size:
            reason = reason or (
                f"signature {position} names guardian {guardian} but guardian set {index} has "
                f"{size} guardians"
            )
            continue
        address = recover_signer(digest, signature)
        if address is None:
            reason = reason or (
                f"signature {position} (guardian {guardian}) is not a valid secp256k1 signature"
            )
            continue
        signers.append(_checksummed(address))
        if address == addresses[guardian]:
            matched += 1
        else:
            reason = reason or (
                f"signature {position} (guardian {guardian}) does not match guardian set {index}"
            )
    return _conclude(signers, matched, reason, now=now, guardian_set=guardian_set)
