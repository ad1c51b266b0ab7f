"""The job summary: per-chain counts added up, as JSON and as text."""

from __future__ import annotations

import json

from chainloom_spark.summary import UNKNOWN_CHAIN, JobSummary


def test_partitions_add_up_per_chain_and_in_total(tmp_path):
    summary = JobSummary("vaa-ingest")
    summary.merge_counts(
        [
            (2, {"new": 3, "updated": 1, "unchanged": 0, "conflicting": 1, "refused": 0,
                 "written": 5}),
            (2, {"new": 1, "updated": 0, "unchanged": 4, "conflicting": 0, "refused": 1,
                 "written": 1}),
            (UNKNOWN_CHAIN, {"new": 0, "updated": 0, "unchanged": 0, "conflicting": 0,
                             "refused": 2, "written": 0}),
        ]
    )  # fmt: skip
    summary.conflicts = [("2/" + "00" * 32 + "/1", "0xab")]
    path = tmp_path / "out" / "summary.json"
    summary.write_json(path)
    document = json.loads(path.read_text())
    assert document["read"] == 13
    assert (document["new"], document["unchanged"], document["refused"]) == (4, 4, 3)
    assert document["per_chain"]["ethereum"]["new"] == 4
    assert document["per_chain"]["unknown"]["refused"] == 2
    assert document["conflicts"][0]["digest"] == "0xab"
    lines = summary.lines()
    assert lines[0].startswith("vaa-ingest: read 13: new 4, updated 1, unchanged 4")
    assert any(line.startswith("conflict: 2/") for line in lines)
