"""The core contract accepts and refuses exactly the VAAs the Python verifier does.

Every shared vector, dev-kit VAAs (valid, under quorum, signed by an expired set) and tampered
copies of signed ones (a changed body, a changed signature, v written as 27/28 or 2, too few
signatures, indices out of order or out of range, an unknown set, truncations, another version)
are checked by ``parseAndVerifyVM`` on a real geth (``eth_call``) and by
``chainloom.wormhole.verify_vaa`` at the chain's current time, against the same guardian sets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from web3 import Web3
from web3.exceptions import ContractLogicError

from chainloom.evm.compile import contract
from chainloom.evm.deploy import Sender, deploy_core
from chainloom.wormhole import GuardianSets, parse_vaa, verify_vaa
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.guardians import GuardianSet
from chainloom.wormhole.vaa import HEADER_LENGTH, SIGNATURE_ENTRY_LENGTH
from tests.integration.evm.conftest import GUARDIANS


def _dev_sets() -> GuardianSets:
    """Set 0 expired long ago, set 1 current: the same 19 dev guardians."""
    return GuardianSets(
        [
            GuardianSet(0, GUARDIANS.addresses, expiration_time=1),
            GuardianSet(1, GUARDIANS.addresses, expiration_time=None),
        ],
        name="dev",
    )


def _dev_vaas() -> list[bytes]:
    payload = b"\x01" + bytes(132)
    out = []
    for index, signers in ((1, None), (1, range(19)), (1, range(12)), (0, None), (1, [0])):
        vaa = GUARDIANS.sign(
            emitter_chain=2,
            emitter_address=GUARDIANS.token_bridge_emitter,
            sequence=7,
            payload=payload,
            guardian_set_index=index,
            signers=signers,
        )
        out.append(vaa.to_bytes())
    return out


def _with_byte(raw: bytes, offset: int, value: int) -> bytes:
    return raw[:offset] + bytes((value,)) + raw[offset + 1 :]


def _tampered(raw: bytes) -> Iterator[bytes]:
    count = raw[5]
    body = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * count
    yield _with_byte(raw, len(raw) - 1, raw[-1] ^ 1)  # payload changed
    yield _with_byte(raw, body + 3, raw[body + 3] ^ 1)  # timestamp changed
    yield raw[:-1]  # payload one byte shorter
    yield _with_byte(raw, 0, 2)  # another version
    yield _with_byte(raw, 4, raw[4] ^ 0x40)  # another guardian set index
    yield raw[:5]  # header truncated
    yield raw[: body + 50]  # body truncated
    yield raw[:5] + b"\x00" + raw[body:]  # no signatures
    if count == 0:
        return
    first = HEADER_LENGTH
    yield _with_byte(raw, first + 40, raw[first + 40] ^ 1)  # s of signature 0 changed
    yield _with_byte(raw, first + 65, raw[first + 65] + 27)  # v as 27/28
    yield _with_byte(raw, first + 65, 2)  # v = 2
    yield _with_byte(raw, first + 65, 31)  # v = 31
    last = HEADER_LENGTH + SIGNATURE_ENTRY_LENGTH * (count - 1)
    yield _with_byte(raw, last, 250)  # guardian index out of range
    keep = raw[:5] + bytes((count - 1,)) + raw[HEADER_LENGTH:last] + raw[body:]
    yield keep  # the last signature dropped
    if count > 1:
        second = first + SIGNATURE_ENTRY_LENGTH
        swapped = (
            raw[:first]
            + raw[second : second + SIGNATURE_ENTRY_LENGTH]
            + raw[first:second]
            + raw[second + SIGNATURE_ENTRY_LENGTH :]
        )
        yield swapped  # indices out of order
        yield _with_byte(raw, second, raw[first])  # a repeated index


def _python_accepts(raw: bytes, sets: GuardianSets, now: int) -> bool:
    try:
        vaa = parse_vaa(raw)
    except WormholeError:
        return False
    return verify_vaa(vaa, sets, now=now).valid


def _contract_accepts(core: Any, raw: bytes) -> bool:
    try:
        _, valid, _ = core.functions.parseAndVerifyVM(raw).call()
    except ContractLogicError:
        return False
    return bool(valid)


def _archival(sets: GuardianSets) -> GuardianSets:
    """``sets`` with no set expiring: every historical mainnet VAA is checked on its merits."""
    return GuardianSets([GuardianSet(s.index, s.addresses, None) for s in sets], name=sets.name)


@pytest.mark.parametrize(
    ("sets_name", "min_accepted"),
    # With their expiry times no shared mainnet vector is signed by the current set.
    # The shared devnet vectors are signed by the Tilt devnet's first guardian alone.
    [("mainnet", 0), ("mainnet-archival", 10), ("devnet", 0), ("devnet-one", 5), ("dev", 2)],
)
def test_contract_and_python_verifier_agree(
    sets_name: str,
    min_accepted: int,
    vaa_vectors: list[dict[str, Any]],
    dev_sender: dict[int, Sender],
) -> None:
    sender = dev_sender[2]
    sets = {
        "mainnet": GuardianSets.mainnet,
        "mainnet-archival": lambda: _archival(GuardianSets.mainnet()),
        "devnet": GuardianSets.devnet,
        "devnet-one": lambda: GuardianSets(
            [GuardianSet(0, GuardianSets.devnet().current.addresses[:1], None)], name="devnet-one"
        ),
        "dev": _dev_sets,
    }[sets_name]()
    address = deploy_core(sender, wormhole_chain=2, guardian_sets=sets)
    abi, _ = contract("ChainloomCore")
    core = sender.w3.eth.contract(address=Web3.to_checksum_address(address), abi=abi)

    originals = [bytes.fromhex(v["hex"]) for v in vaa_vectors] + _dev_vaas()
    candidates = list(originals)
    for raw in originals:
        if len(raw) > HEADER_LENGTH and raw[5] > 0:
            candidates.extend(_tampered(raw))
    now = int(sender.w3.eth.get_block("latest")["timestamp"])

    disagreements = []
    accepted = 0
    for raw in candidates:
        python = _python_accepts(raw, sets, now)
        on_chain = _contract_accepts(core, raw)
        accepted += python
        if python != on_chain:
            disagreements.append(f"python={python} contract={on_chain} vaa={raw.hex()[:80]}...")
    assert not disagreements, "\n".join(disagreements)
    assert accepted >= min_accepted, f"only {accepted} of {len(candidates)} accepted"
    assert len(candidates) - accepted >= 10
