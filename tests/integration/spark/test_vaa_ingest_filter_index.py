"""vaa-ingest (real local Spark) writes the same filter index rows as the event writer.

The same VAAs, with the same transaction ids, are stored once by the event writer the
streaming indexer and ``chainloom events put`` use, and once by vaa-ingest into tables of
their own: every filter index cell (key, value, timestamp) must be the same in both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import all_known_emitters
from chainloom_spark.jobs import vaa_ingest
from tests.integration.eventstore.filter_dataset import KIT, index_cells, inputs


def test_vaa_ingest_writes_the_writers_filter_rows(
    spark: Any, bigtable_table_name: str, tmp_path: Path, capsys: Any
) -> None:
    items = inputs(120)
    lines = [json.dumps({"vaa": i.raw.hex(), "tx_id": i.tx_id}) if i.tx_id else i.raw.hex()
             for i in items]  # fmt: skip
    (tmp_path / "vaas.txt").write_text("\n".join(lines) + "\n")
    by_spark = BigtableSettings(project="chainloom", instance="local", table=bigtable_table_name)
    by_writer = BigtableSettings(
        project="chainloom", instance="local", table=bigtable_table_name + "-writer"
    )
    ensure_schema(by_writer)
    with BigtableTables(by_writer) as tables:
        with EventWriter(tables, KIT.sets(0), emitters=all_known_emitters()) as writer:
            for item in items:
                writer.submit(item.raw, initiating_tx_id=item.tx_id)
        expected = list(index_cells(tables, "fa:", "fe"))
    args = [
        *("--input", str(tmp_path / "vaas.txt"), "--table", bigtable_table_name),
        *("--guardian-set", "dev", "--partitions", "2"),
    ]
    code = vaa_ingest.main(args)
    assert code == 0, capsys.readouterr()
    with BigtableTables(by_spark) as tables:
        written = list(index_cells(tables, "fa:", "fe"))
    assert len(expected) > 2 * 6 * 100  # about 7 dimensions a message, in both orders
    assert written == expected
