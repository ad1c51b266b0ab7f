"""Two writers racing on the same message ids: one SignedVAA wins, the other VAA is kept."""

from __future__ import annotations

import threading

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER
from chainloom_dev.sim.dev_guardians import DevGuardians

KIT = DevGuardians()
MESSAGES = 40


def _vaas(variant: int) -> list[bytes]:
    return [
        KIT.sign(
            emitter_chain=6,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=seq,
            payload=b"variant %d of %d" % (variant, seq),
            timestamp=1_700_000_000 + seq,
        ).to_bytes()
        for seq in range(MESSAGES)
    ]


def test_racing_writers_keep_one_signed_vaa_and_the_other_as_conflict(
    settings: BigtableSettings, tables: BigtableTables
) -> None:
    inputs = {0: _vaas(0), 1: _vaas(1)}
    summaries = {}
    start = threading.Barrier(2)

    def write(variant: int) -> None:
        with BigtableTables(settings) as own, EventWriter(own, KIT.sets(0)) as writer:
            start.wait()
            # one input per flush, so the two writers interleave row by row
            for raw in inputs[variant]:
                writer.put(raw)
            summaries[variant] = writer.summary

    threads = [threading.Thread(target=write, args=(v,)) for v in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert summaries[0].new + summaries[1].new == MESSAGES
    assert summaries[0].conflicting + summaries[1].conflicting == MESSAGES
    stored = EventReader(tables).scan(6, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex())
    assert len(stored) == MESSAGES
    for message in stored:
        seq = message.key.sequence
        pair = {inputs[0][seq], inputs[1][seq]}
        assert message.signed_vaa in pair
        (kept,) = message.conflicts.values()
        assert {message.signed_vaa, kept} == pair
        # the row's body fields belong to the winner
        winner_payload = message.families["MessagePublication"]["Payload"]
        assert message.signed_vaa.endswith(winner_payload)
