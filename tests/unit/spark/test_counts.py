"""Per-chain counters of the table-reading jobs: totals, JSON and text."""

from __future__ import annotations

import json

import pytest

from chainloom_spark.counts import ChainCounters


def test_counters_add_up_per_chain_and_in_total(tmp_path):
    counters = ChainCounters("enrich", ("enriched", "unpriced"))
    counters.add(2, "enriched", 3)
    counters.merge([(2, {"unpriced": 1}), (1, {"enriched": 2})])
    counters.details = {"table": "t"}
    path = tmp_path / "deep" / "summary.json"
    counters.write_json(path)
    document = json.loads(path.read_text())
    assert (document["enriched"], document["unpriced"], document["table"]) == (5, 1, "t")
    assert document["per_chain"]["ethereum"] == {"chain_id": 2, "enriched": 3, "unpriced": 1}
    assert counters.lines() == [
        "enrich: enriched 5, unpriced 1",
        "  solana: enriched 2, unpriced 0",
        "  ethereum: enriched 3, unpriced 1",
    ]


def test_an_unknown_counter_is_a_bug_not_a_silent_zero():
    with pytest.raises(KeyError):
        ChainCounters("export", ("messages",)).add(2, "mesages")
