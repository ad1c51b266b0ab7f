"""A deterministic test-guardian kit: real signatures without real guardians.

Tests, benchmarks and the demo need VAAs that *verify*, for any body, signed by any subset of
a guardian set. :class:`DevGuardians` derives N secp256k1 keys from a seed (keccak256 of the
seed and the slot number), so every run and every machine produces the same guardian set and,
because libsecp256k1 signs with RFC 6979 nonces, byte-identical VAAs. The keys are test keys
by construction; nothing here may ever sign for a real network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from coincurve import PrivateKey

from chainloom.wormhole.emitters import DEV_NFT_BRIDGE_EMITTER, DEV_TOKEN_BRIDGE_EMITTER
from chainloom.wormhole.guardians import GuardianSet, GuardianSets, quorum
from chainloom.wormhole.hashing import double_keccak256, keccak256
from chainloom.wormhole.vaa import VAA, Signature, encode_body, parse_vaa
from chainloom_dev.sim.errors import DevGuardianError

__all__ = ["DEFAULT_TIMESTAMP", "DevGuardians", "sign_digest"]

DEFAULT_TIMESTAMP = 1_700_000_000
"""The body timestamp used when a caller does not give one (2023-11-14T22:13:20Z)."""

_CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def sign_digest(key: PrivateKey, digest: bytes) -> bytes:
    """r||s||v over a 32-byte digest, v the recovery id (what ``crypto.Sign`` produces)."""
    signature: bytes = key.sign_recoverable(digest, hasher=None)
    return signature


def _derive_key(seed: bytes, slot: int) -> bytes:
    counter = 0
    while True:
        candidate = keccak256(seed + slot.to_bytes(4, "big") + counter.to_bytes(4, "big"))
        if 0 < int.from_bytes(candidate, "big") < _CURVE_ORDER:
            return candidate
        counter += 1  # pragma: no cover - probability ~2**-128


class DevGuardians:
    """N deterministic guardian keys and a signer for VAAs with any body.

    ``DevGuardians(count=19, seed=b"chainloom")`` always gives the same 19 keys.
    """

    token_bridge_emitter = DEV_TOKEN_BRIDGE_EMITTER
    """The emitter the kit's token transfers come from (declare it known in test configs)."""
    nft_bridge_emitter = DEV_NFT_BRIDGE_EMITTER
    """The emitter the kit's NFT transfers come from."""

    def __init__(self, count: int = 19, seed: bytes = b"chainloom") -> None:
        if not 1 <= count <= 255:
            raise DevGuardianError(f"a guardian set has 1..255 guardians, not {count}")
        self.seed = seed
        """The seed the keys derive from."""
        self._keys = [PrivateKey(_derive_key(seed, slot)) for slot in range(count)]
        self._addresses = tuple(
            keccak256(key.public_key.format(compressed=False)[1:])[12:] for key in self._keys
        )

    @classmethod
    def from_private_keys(cls, keys: Sequence[bytes]) -> DevGuardians:
        """A kit for given 32-byte keys (e.g. the public Tilt devnet guardian keys)."""
        if not 1 <= len(keys) <= 255:
            raise DevGuardianError(f"a guardian set has 1..255 guardians, not {len(keys)}")
        kit = cls.__new__(cls)
        kit.seed = b""
        kit._keys = [PrivateKey(bytes(k)) for k in keys]
        kit._addresses = tuple(
            keccak256(key.public_key.format(compressed=False)[1:])[12:] for key in kit._keys
        )
        return kit

    @property
    def count(self) -> int:
        """Number of guardians."""
        return len(self._keys)

    @property
    def addresses(self) -> tuple[bytes, ...]:
        """The guardians' 20-byte addresses in slot order."""
        return self._addresses

    @property
    def quorum(self) -> int:
        """Signatures needed for quorum."""
        return quorum(len(self._keys))

    def guardian_set(self, index: int = 0) -> GuardianSet:
        """These guardians as the set with ``index``."""
        return GuardianSet(index=index, addresses=self._addresses, expiration_time=None)

    def sets(self, index: int = 0) -> GuardianSets:
        """A registry that holds just :meth:`guardian_set` (``index``)."""
        return GuardianSets([self.guardian_set(index)], name=f"dev-{len(self._keys)}")

    def sign_body(
        self, body: bytes, *, guardian_set_index: int = 0, signers: Iterable[int] | None = None
    ) -> bytes:
        """A signed VAA (bytes) for a ready-made body.

        ``signers`` are guardian slots (any order; they are sorted); the default is the first
        ``quorum`` slots.
        """
        chosen = self._signers(signers)
        digest = double_keccak256(body)
        parts = [
            bytes((1,)),
            guardian_set_index.to_bytes(4, "big"),
            bytes((len(chosen),)),
        ]
        for slot in chosen:
            parts.append(bytes((slot,)))
            parts.append(sign_digest(self._keys[slot], digest))
        parts.append(body)
        return b"".join(parts)

    def sign(
        self,
        *,
        emitter_chain: int,
        emitter_address: bytes,
        sequence: int,
        payload: bytes,
        timestamp: int = DEFAULT_TIMESTAMP,
        nonce: int = 0,
        consistency_level: int = 1,
        guardian_set_index: int = 0,
        signers: Iterable[int] | None = None,
    ) -> VAA:
        """A VAA with this body, signed by ``signers`` (default: the first quorum slots)."""
        if len(emitter_address) != 32:
            raise DevGuardianError(f"emitter_address must be 32 bytes, got {len(emitter_address)}")
        try:
            body = encode_body(
                timestamp=timestamp,
                nonce=nonce,
                emitter_chain=emitter_chain,
                emitter_address=emitter_address,
                sequence=sequence,
                consistency_level=consistency_level,
                payload=payload,
            )
        except Exception as error:  # struct.error for out-of-range fields
            raise DevGuardianError(f"cannot encode body: {error}") from None
        encoded = self.sign_body(body, guardian_set_index=guardian_set_index, signers=signers)
        return parse_vaa(encoded)

    def resign(
        self,
        vaa: VAA,
        *,
        guardian_set_index: int | None = None,
        signers: Iterable[int] | None = None,
    ) -> VAA:
        """The same body signed again (another subset, or for another set index)."""
        index = vaa.guardian_set_index if guardian_set_index is None else guardian_set_index
        return parse_vaa(self.sign_body(vaa.body, guardian_set_index=index, signers=signers))

    def signature(self, slot: int, digest: bytes) -> Signature:
        """One guardian's signature over a digest."""
        self._signers([slot])
        return Signature(guardian_index=slot, signature=sign_digest(self._keys[slot], digest))

    def _signers(self, signers: Iterable[int] | None) -> list[int]:
        if signers is None:
            return list(range(self.quorum))
        given = list(signers)
        chosen = sorted(set(given))
        if len(chosen) != len(given):
            raise DevGuardianError(f"signers repeat a guardian: {given}")
        for slot in chosen:
            if not 0 <= slot < len(self._keys):
                raise DevGuardianError(
                    f"signer {slot} is not a guardian slot (0..{len(self._keys) - 1})"
                )
        return chosen
