"""Guardian sets: who may sign a VAA with a given ``guardian_set_index``.

The mainnet sets ship as data (``data/mainnet_guardian_sets.json``) with their provenance: set
0 is the bootstrap key, and every later set was taken from the governance upgrade VAA that
introduced it after that VAA verified against the set before it (see
:mod:`chainloom.wormhole.derivation`, which a unit test re-runs on the shared vectors). Shipping
the result instead of deriving at import time keeps start-up free of signature recovery.

Expiry follows the EVM core contract (``Messages.sol``; whitepaper 0003: "Guardian Sets are
guaranteed to be valid for at least 24 hours"): a set stays valid for 24 hours after the
next set replaces it, and the current set never expires.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from chainloom.wormhole.chains import checksum_address
from chainloom.wormhole.errors import GuardianSetFileError, UnknownGuardianSetError

__all__ = ["GUARDIAN_SET_EXPIRY_SECONDS", "GuardianSet", "GuardianSets", "quorum"]

GUARDIAN_SET_EXPIRY_SECONDS = 24 * 60 * 60


def quorum(size: int) -> int:
    """Signatures needed for a set of ``size`` guardians: floor(2N/3) + 1 (13 of 19)."""
    return (size * 2) // 3 + 1


@dataclass(frozen=True, slots=True)
class GuardianSet:
    """The guardians of one set index, in slot order."""

    index: int
    """The guardian set index VAAs name (uint32)."""
    addresses: tuple[bytes, ...]
    """Each guardian's 20-byte Ethereum-style address; position = guardian index."""
    expiration_time: int | None = None
    """Unix seconds after which VAAs signed by this set are refused; None = never expires."""

    def __post_init__(self) -> None:
        for slot, address in enumerate(self.addresses):
            if len(address) != 20:
                raise ValueError(f"guardian {slot} address has {len(address)} bytes, not 20")

    @property
    def quorum(self) -> int:
        """Signatures needed for quorum."""
        return quorum(len(self.addresses))

    @property
    def checksummed(self) -> tuple[str, ...]:
        """The addresses in EIP-55 form."""
        return tuple(checksum_address(a) for a in self.addresses)

    def is_expired(self, now: int) -> bool:
        """Whether VAAs signed by this set are refused at unix time ``now``."""
        return self.expiration_time is not None and now > self.expiration_time

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the format :meth:`GuardianSets.from_file` reads)."""
        return {
            "index": self.index,
            "addresses": list(self.checksummed),
            "expiration_time": self.expiration_time,
        }


def _parse_address(text: object, where: str) -> bytes:
    if not isinstance(text, str):
        raise ValueError(f"{where}: address must be a string")
    hex_text = text[2:] if text[:2] in ("0x", "0X") else text
    try:
        raw = bytes.fromhex(hex_text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not hex") from None
    if len(raw) == 32 and raw[:12] == bytes(12):
        raw = raw[12:]
    if len(raw) != 20:
        raise ValueError(f"{where}: {text!r} is not a 20-byte address")
    return raw


def _set_from_json(entry: object, where: str) -> GuardianSet:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object with index and addresses")
    index = entry.get("index")
    addresses = entry.get("addresses", entry.get("keys"))
    expiration = entry.get("expiration_time")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= 0xFFFFFFFF:
        raise ValueError(f"{where}: index must be a uint32")
    if not isinstance(addresses, list) or not addresses:
        raise ValueError(f"{where}: addresses must be a non-empty list")
    if len(addresses) > 255:
        raise ValueError(f"{where}: at most 255 guardians fit a VAA's uint8 index")
    if expiration is not None and (not isinstance(expiration, int) or isinstance(expiration, bool)):
        raise ValueError(f"{where}: expiration_time must be an integer or null")
    parsed = tuple(_parse_address(a, f"{where} address {i}") for i, a in enumerate(addresses))
    return GuardianSet(index=index, addresses=parsed, expiration_time=expiration)


class GuardianSets:
    """A registry of guardian sets by index, with the newest one as ``current``."""

    def __init__(
        self, sets: list[GuardianSet] | tuple[GuardianSet, ...], *, name: str = ""
    ) -> None:
        if not sets:
            raise ValueError("a guardian set registry needs at least one set")
        self._by_index = {s.index: s for s in sets}
        if len(self._by_index) != len(sets):
            raise ValueError("guardian set indices must be unique")
        self.name = name
        """Where these sets came from (``mainnet``, ``devnet``, a path)."""

    @property
    def current(self) -> GuardianSet:
        """The set with the highest index."""
        return self._by_index[max(self._by_index)]

    @property
    def indices(self) -> list[int]:
        """Known indices, ascending."""
        return sorted(self._by_index)

    def get(self, index: int) -> GuardianSet:
        """The set with this index; raises :class:`UnknownGuardianSetError`."""
        found = self._by_index.get(index)
        if found is None:
            raise UnknownGuardianSetError(index, self.indices)
        return found

    def __contains__(self, index: object) -> bool:
        return index in self._by_index

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._by_index[i] for i in self.indices)

    def __len__(self) -> int:
        return len(self._by_index)

    def __repr__(self) -> str:
        return f"GuardianSets(name={self.name!r}, indices={self.indices})"

    def with_set(self, guardian_set: GuardianSet) -> GuardianSets:
        """A registry that also holds (or replaces) ``guardian_set``."""
        merged = dict(self._by_index)
        merged[guardian_set.index] = guardian_set
        return GuardianSets(list(merged.values()), name=self.name)

    def to_json(self) -> dict[str, Any]:
        """The file format :meth:`from_file` reads."""
        return {"guardian_sets": [s.to_json() for s in self]}

    # ---- constructors ------------------------------------------------------------------

    @classmethod
    def from_json(cls, document: object, *, name: str = "") -> GuardianSets:
        """Sets from a parsed document: ``{"guardian_sets": [...]}``, a list, or one set.

        Each set is ``{"index": 4, "addresses": ["0x...", ...], "expiration_time": null}``.
        Raises :class:`ValueError` with the position of the bad entry.
        """
        if isinstance(document, dict) and "guardian_sets" in document:
            entries = document["guardian_sets"]
        elif isinstance(document, dict):
            entries = [document]
        else:
            entries = document
        if not isinstance(entries, list) or not entries:
            raise ValueError("expected a non-empty list of guardian sets")
        sets = [_set_from_json(e, f"guardian_sets[{i}]") for i, e in enumerate(entries)]
        return cls(sets, name=name)

    @classmethod
    def from_file(cls, path: str | Path) -> GuardianSets:
        """Sets from a JSON file (see :meth:`from_json`); raises :class:`GuardianSetFileError`."""
        location = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise GuardianSetFileError(location, error.strerror or str(error)) from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise GuardianSetFileError(location, f"not JSON ({error})") from None
        try:
            return cls.from_json(document, name=location)
        except ValueError as error:
            raise GuardianSetFileError(location, str(error)) from None

    @classmethod
    def mainnet(cls) -> GuardianSets:
        """Mainnet sets 0..current, as derived from the upgrade VAAs (with expiry times)."""
        return _mainnet()

    @classmethod
    def devnet(cls) -> GuardianSets:
        """The Tilt devnet's 19 guardians (``scripts/devnet-consts.json``), as set 0."""
        return _devnet()


def _load_data(name: str) -> Any:
    return json.loads(resources.files("chainloom.wormhole").joinpath("data", name).read_text())


@cache
def _mainnet() -> GuardianSets:
    return GuardianSets.from_json(_load_data("mainnet_guardian_sets.json"), name="mainnet")


@cache
def _devnet() -> GuardianSets:
    return GuardianSets.from_json(_load_data("devnet_guardian_set.json"), name="devnet")


def mainnet_provenance() -> list[dict[str, Any]]:
    """Where each shipped mainnet set came from (the upgrade VAA digest, signer set...)."""
    document = _load_data("mainnet_guardian_sets.json")
    return [
        dict(entry.get("provenance", {}), index=entry["index"])
        for entry in document["guardian_sets"]
    ]
