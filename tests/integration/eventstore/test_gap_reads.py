"""Key-only reads that gap finding uses: the emitters of a table and an emitter's sequences."""

from __future__ import annotations

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.wormhole.sequences import SequenceRange, find_missing
from chainloom_dev.sim.dev_guardians import DevGuardians

KIT = DevGuardians(count=4)
WIDE = [0, 1, 3, 9_999_999_999_999_998, 10**16, 10**16 + 2, 2**64 - 1]
"""Sequences of 1, 16, 17 and 20 digits: row keys that do not sort numerically."""


def _emitter(last_byte: int) -> bytes:
    return bytes(31) + bytes((last_byte,))


def test_emitters_are_listed_once_each_and_sequences_in_numeric_order(
    tables: BigtableTables,
) -> None:
    layout = {
        (1, _emitter(1)): WIDE,
        (1, _emitter(2)): [5, 7],
        (14, _emitter(1)): [2],  # must not show under chain 1
        (4, _emitter(9)): list(range(40)),
    }
    with EventWriter(tables, KIT.sets(0)) as writer:
        for (chain, emitter), sequences in layout.items():
            for sequence in sequences:
                vaa = KIT.sign(emitter_chain=chain, emitter_address=emitter, sequence=sequence,
                               payload=b"p")  # fmt: skip
                writer.submit(vaa.to_bytes())
    reader = EventReader(tables)
    expected = sorted((chain, emitter.hex()) for chain, emitter in layout)
    assert sorted(reader.emitters()) == expected
    assert list(reader.emitters(1)) == [(1, _emitter(1).hex()), (1, _emitter(2).hex())]
    assert list(reader.emitters(7)) == []

    wide = list(reader.sequences(1, _emitter(1).hex()))
    assert wide == WIDE
    assert list(reader.sequences(1, "0x01", from_seq=2, to_seq=10**16 + 1)) == [
        3,
        9_999_999_999_999_998,
        10**16,
    ]
    assert find_missing(reader.sequences(1, _emitter(2).hex()), first=0, last=8) == [
        SequenceRange(0, 4),
        SequenceRange(6, 6),
        SequenceRange(8, 8),
    ]
    assert list(reader.sequences(4, _emitter(9).hex())) == list(range(40))
