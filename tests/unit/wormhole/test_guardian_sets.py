"""Guardian sets: the shipped mainnet sets re-derive from the upgrade VAAs; files; devnet."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from chainloom.wormhole import (
    VAA,
    GuardianSet,
    GuardianSets,
    GuardianSetUpgrade,
    decode_payload,
    derive_guardian_sets,
    parse_vaa,
    quorum,
)
from chainloom.wormhole.errors import (
    GuardianSetFileError,
    GuardianSetUpgradeError,
    UnknownGuardianSetError,
)
from chainloom.wormhole.guardians import mainnet_provenance
from chainloom.wormhole.payloads import encode_guardian_set_upgrade
from chainloom_dev.sim.dev_guardians import DevGuardians

BOOTSTRAP = GuardianSet(
    index=0, addresses=(bytes.fromhex("58cc3ae5c097b213ce3c81979e1b9f9570746aa5"),)
)


def _upgrade_vaas(vaa_vectors: list[dict[str, Any]]) -> list[VAA]:
    found = []
    for vector in vaa_vectors:
        vaa = parse_vaa(bytes.fromhex(vector["hex"]))
        if isinstance(decode_payload(vaa), GuardianSetUpgrade):
            found.append(vaa)
    return found


def test_shipped_mainnet_sets_re_derive_from_the_upgrade_vaas(vaa_vectors):
    upgrades = _upgrade_vaas(vaa_vectors)
    assert len(upgrades) == 7
    derived = derive_guardian_sets(BOOTSTRAP, reversed(upgrades))  # order does not matter
    shipped = GuardianSets.mainnet()
    assert [d.guardian_set.index for d in derived] == shipped.indices == list(range(8))
    for entry, provenance in zip(derived, mainnet_provenance(), strict=True):
        assert entry.guardian_set == shipped.get(entry.guardian_set.index)
        assert provenance.get("upgrade_vaa_digest") == entry.upgrade_digest
    assert shipped.current.index == 7
    assert shipped.current.expiration_time is None
    last_upgrade = derived[-1].upgrade_timestamp
    assert last_upgrade is not None
    assert shipped.get(6).expiration_time == last_upgrade + 86_400
    assert shipped.current.checksummed[17] == "0x7899cEAB1DC961Dae9defDB7A4f521269a5448FC"
    assert len(shipped.current.addresses) == 19
    assert shipped.current.quorum == 13


def test_derivation_refuses_a_broken_chain(vaa_vectors):
    upgrades = _upgrade_vaas(vaa_vectors)
    with pytest.raises(GuardianSetUpgradeError, match="signed by set 2, expected set 1"):
        derive_guardian_sets(BOOTSTRAP, [upgrades[0], upgrades[2]])
    impostor = GuardianSet(index=0, addresses=(bytes(20),))
    with pytest.raises(GuardianSetUpgradeError, match="does not verify"):
        derive_guardian_sets(impostor, upgrades[:1])
    not_governance = dataclasses.replace(upgrades[0], emitter_chain=2)
    with pytest.raises(GuardianSetUpgradeError, match="governance emitter"):
        derive_guardian_sets(BOOTSTRAP, [not_governance])


def test_derivation_with_the_dev_kit():
    old = DevGuardians(count=4, seed=b"old")
    new = DevGuardians(count=5, seed=b"new")
    payload = encode_guardian_set_upgrade(1, new.addresses)
    upgrade = old.sign(
        emitter_chain=1,
        emitter_address=bytes(31) + b"\x04",
        sequence=1,
        payload=payload,
        timestamp=5_000,
        signers=range(4),
    )
    chain = derive_guardian_sets(old.guardian_set(0), [upgrade])
    assert chain[1].guardian_set == new.guardian_set(1)
    assert chain[0].guardian_set.expiration_time == 5_000 + 86_400
    skipping = old.sign(
        emitter_chain=1,
        emitter_address=bytes(31) + b"\x04",
        sequence=2,
        payload=encode_guardian_set_upgrade(2, new.addresses),
        signers=range(4),
    )
    with pytest.raises(GuardianSetUpgradeError, match="announces set 2 after set 0"):
        derive_guardian_sets(old.guardian_set(0), [skipping])


@pytest.mark.parametrize(
    ("size", "needed"), [(1, 1), (2, 2), (3, 3), (4, 3), (7, 5), (19, 13), (20, 14)]
)
def test_quorum(size, needed):
    assert quorum(size) == needed


def test_registry_lookups():
    sets = GuardianSets.mainnet()
    with pytest.raises(UnknownGuardianSetError, match=r"unknown guardian set 99 \(known: 0, 1"):
        sets.get(99)
    assert 3 in sets
    assert len(sets) == 8
    assert [s.index for s in sets] == list(range(8))
    devnet = GuardianSets.devnet()
    assert devnet.current.index == 0
    assert devnet.current.checksummed[0] == "0xbeFA429d57cD18b7F8A4d91A2da9AB4AF05d0FBe"
    assert len(devnet.current.addresses) == 19


def test_file_round_trip(tmp_path):
    path = tmp_path / "sets.json"
    path.write_text(json.dumps(GuardianSets.mainnet().to_json()))
    loaded = GuardianSets.from_file(path)
    assert list(loaded) == list(GuardianSets.mainnet())
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"index": 5, "keys": ["0x" + "11" * 20, "00" * 12 + "22" * 20]}))
    one = GuardianSets.from_file(single)
    assert one.current.addresses == (b"\x11" * 20, b"\x22" * 20)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "not JSON"),
        ("[]", "non-empty list"),
        ('{"index": -1, "addresses": ["0x' + "11" * 20 + '"]}', "index must be a uint32"),
        ('{"index": 1, "addresses": []}', "addresses must be a non-empty list"),
        ('{"index": 1, "addresses": ["0x1234"]}', "address 0: '0x1234' is not a 20-byte address"),
        ('{"index": 1, "addresses": ["zz"]}', "is not hex"),
        ('{"index": 1, "addresses": [7]}', "address must be a string"),
        ('{"index": 1, "addresses": ["' + "11" * 20 + '"], "expiration_time": "x"}', "integer"),
        (
            '[{"index": 1, "addresses": ["'
            + "11" * 20
            + '"]}, {"index": 1, "addresses": ["'
            + "11" * 20
            + '"]}]',
            "unique",
        ),
    ],
)
def test_bad_files_name_the_problem(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(GuardianSetFileError, match=problem) as caught:
        GuardianSets.from_file(path)
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(GuardianSetFileError, match="No such file"):
        GuardianSets.from_file(tmp_path / "absent.json")
