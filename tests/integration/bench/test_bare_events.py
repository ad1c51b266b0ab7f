"""bench/bare_events.py, the events bench's HTTP ceiling, answers exactly the store's reads: a
message's cells are the ones ``EventReader`` reads, and a filtered page's rows are the first 20
messages of its source chain from its moment, read with one index scan and one row read."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from bench.api import start_bare_events
from bench.bare_events import filtered_page_rows
from chainloom.eventstore.bigtable import BigtableTables, drop_tables, ensure_schema
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import mainnet_emitters
from chainloom_dev.sim.dev_guardians import DevGuardians

FIRST = 1_700_000_000
EMITTERS = [bytes(31) + bytes([n + 1]) for n in range(2)]


class Stored:
    def __init__(self, tables: BigtableTables, url: str, sent: list[tuple[MessageKey, int]]):
        self.tables, self.url, self.sent = tables, url, sent


@pytest.fixture
def stored(bigtable_table_name: str) -> Iterator[Stored]:
    settings = BigtableSettings(project="chainloom", instance="local", table=bigtable_table_name)
    ensure_schema(settings)
    kit = DevGuardians()
    sent: list[tuple[MessageKey, int]] = []
    try:
        with BigtableTables(settings) as tables:
            with EventWriter(tables, kit.sets(0), emitters=mainnet_emitters()) as writer:
                for number in range(75):  # 25 a chain, timestamps interleaved across chains
                    moment = FIRST + number
                    vaa = kit.sign(
                        emitter_chain=2 + number % 3,
                        emitter_address=EMITTERS[number % 2],
                        sequence=number,
                        payload=b"bare %d" % number,
                        timestamp=moment,
                    )
                    writer.submit(vaa.to_bytes(), initiating_tx_id=f"0x{number:064x}")
                    sent.append((MessageKey.parse(vaa.message_id), moment))
            server, port = start_bare_events(bigtable_table_name, 4)
            try:
                yield Stored(tables, f"http://127.0.0.1:{port}", sent)
            finally:
                server.terminate()
                server.wait(timeout=30)
                assert server.stderr is not None
                server.stderr.close()
    finally:
        drop_tables(settings)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return orjson.loads(reply.read())


def hex_cells(snapshot: dict[str, dict[str, bytes]]) -> dict[str, dict[str, str]]:
    return {f: {q: v.hex() for q, v in cells.items()} for f, cells in snapshot.items()}


def test_a_message_is_the_readers_row_and_an_absent_one_a_json_404(stored: Stored) -> None:
    reader = EventReader(stored.tables)
    for key, _ in stored.sent[:10]:
        message = reader.get(key)
        assert message is not None
        answer = get(f"{stored.url}/vaa/{key.chain}/{key.emitter}/{key.sequence}")
        assert answer == {"families": hex_cells(message.families)}
        assert answer["families"]["QuorumState"]["SignedVAA"]  # the signed VAA is a cell
    key = stored.sent[0][0]
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"{stored.url}/vaa/{key.chain}/{key.emitter}/999999")
    assert refused.value.code == 404
    assert "999999" in orjson.loads(refused.value.read())["reason"]


def test_a_page_is_the_first_twenty_of_its_chain_from_its_moment(stored: Stored) -> None:
    for chain, moment in ((2, FIRST), (3, FIRST + 4), (4, FIRST + 11)):
        rows = filtered_page_rows(stored.tables, chain, moment)
        expected = [k.row_key for k, at in stored.sent if k.chain == chain and at >= moment][:20]
        assert len(expected) == 20
        assert sorted(rows) == sorted(expected)
        answer = get(f"{stored.url}/page/{chain}/{moment}")
        assert answer == {"rows": {key: hex_cells(cells) for key, cells in rows.items()}}
