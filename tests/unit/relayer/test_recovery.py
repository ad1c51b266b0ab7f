"""Missed-VAA recovery without servers: only relayed emitters are tracked, and what is
fetched goes to the intake with its outcome counted."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from chainloom.publicrpc import Endpoint, PublicRpcClient
from chainloom.relayer.config import RecoverySettings, StartSequence
from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.metrics import prometheus_text
from chainloom.relayer.recovery import MissedVaaRecovery
from chainloom.settings import PublicRpcSettings
from chainloom.wormhole import parse_vaa
from chainloom.wormhole.sequences import GapBook, SequenceRange, SequenceTracker
from tests.ingest_support import SOURCE_CHAIN, signed_transfer

BRIDGE = bytes(31) + b"\x09"
HELD = {s: signed_transfer(s, emitter=BRIDGE).to_bytes() for s in (3, 4)}


class Held:
    """A transport holding sequences 3 and 4."""

    def get_signed_vaa(
        self, endpoint: Endpoint, chain: int, emitter: str, sequence: int, timeout: float
    ) -> bytes | None:
        return HELD.get(sequence)

    def reachable(self, endpoint: Endpoint, timeout: float) -> str | None:
        return None

    def close(self) -> None:
        pass


def test_gaps_of_relayed_emitters_are_fetched_and_submitted() -> None:
    now = [0.0]
    client = PublicRpcClient(PublicRpcSettings(endpoints=("a:1",)), transport=Held())
    recovery = MissedVaaRecovery(
        frozenset({(SOURCE_CHAIN, BRIDGE)}),
        RecoverySettings(grace=5, retry_after=60),
        client,
        wall_clock=lambda: now[0],
    )
    other = "00" * 31 + "0a"
    for sequence in (1, 2, 6):
        recovery.seen(f"{SOURCE_CHAIN}/{BRIDGE.hex()}/{sequence}")
        recovery.seen(f"{SOURCE_CHAIN}/{other}/{sequence * 2}")  # not relayed for: ignored
    recovery.seen(None)
    assert list(recovery.book.tracks) == [(SOURCE_CHAIN, BRIDGE.hex())]
    outcomes = {3: Outcome.QUEUED, 4: Outcome.KNOWN}

    async def submit(raw: bytes) -> IntakeResult:
        vaa = parse_vaa(raw)
        recovery.seen(vaa.message_id)
        return IntakeResult(outcomes[vaa.sequence], message_id=vaa.message_id)

    async def rounds() -> int:
        stop = asyncio.Event()
        assert await recovery.fill_round(submit, stop) == 0  # within the grace
        now[0] = 10.0
        return await recovery.fill_round(submit, stop)

    assert asyncio.run(rounds()) == 1
    stats = recovery.stats()
    assert (stats["fetched"], stats["queued"], stats["known"], stats["not_found"]) == (2, 1, 1, 1)
    assert stats["missing"] == 1
    assert stats["gaps"][0]["failures"][0]["sequence"] == 5
    intake = {"by_status": {}, "by_source": {}, "redeem_check_skipped": 0}
    text = prometheus_text({"intake": intake, "rules": {}, "recovery": stats})
    assert 'chainloom_listener_recovery_total{result="queued"} 1.0' in text
    assert "chainloom_listener_recovery_missing 1.0\n" in text


class SavedState:
    """An in-memory recovery state store."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states
        self.saved: list[dict[str, Any]] = []

    def load(self) -> list[dict[str, Any]]:
        return self.states

    def save(self, states: Sequence[dict[str, Any]]) -> None:
        self.saved.extend(states)


def test_saved_state_is_loaded_under_what_was_heard_before_it() -> None:
    emitter = BRIDGE.hex()
    earlier = GapBook()
    for sequence in (0, 1, 2):
        earlier.see(SOURCE_CHAIN, emitter, sequence, 0.0)
    store = SavedState([earlier.emitter_json(SOURCE_CHAIN, emitter)])
    client = PublicRpcClient(PublicRpcSettings(endpoints=("a:1",)), transport=Held())
    recovery = MissedVaaRecovery(
        frozenset({(SOURCE_CHAIN, BRIDGE)}), RecoverySettings(), client, state=store
    )
    recovery.seen(f"{SOURCE_CHAIN}/{emitter}/6")  # heard before the state is loaded
    assert not recovery.loaded
    assert asyncio.run(recovery.load())
    [gap] = recovery.book.open_gaps()
    assert (gap.range.first, gap.range.last) == (3, 5)
    asyncio.run(recovery.save())
    assert store.saved[-1]["tracker"]["highest"] == 6


def test_a_start_sequence_opens_the_gap_from_it_and_ignores_older_ones() -> None:
    emitter = BRIDGE.hex()
    client = PublicRpcClient(PublicRpcSettings(endpoints=("a:1",)), transport=Held())
    start = StartSequence(chain=SOURCE_CHAIN, address=emitter, sequence=3)
    settings = RecoverySettings(start_sequences=(start,))
    recovery = MissedVaaRecovery(frozenset({(SOURCE_CHAIN, BRIDGE)}), settings, client)
    recovery.seen(f"{SOURCE_CHAIN}/{emitter}/1")  # before the start: not a gap
    recovery.seen(f"{SOURCE_CHAIN}/{emitter}/5")
    [gap] = recovery.book.open_gaps()
    assert (gap.range.first, gap.range.last) == (3, 4)


def test_an_expecting_tracker_counts_everything_below_its_start_as_seen() -> None:
    tracker = SequenceTracker.expecting(0)
    tracker.add(0)
    tracker.add(4)
    assert tracker.missing() == [SequenceRange(1, 3)]
    assert SequenceTracker.from_json(SequenceTracker.expecting(7).to_json()).highest == 6
