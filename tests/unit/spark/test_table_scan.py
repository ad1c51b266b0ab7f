"""Key ranges from row-key samples: the whole table, once, in order."""

from __future__ import annotations

from chainloom_spark.table_scan import KeyRange, key_ranges


def test_samples_cut_the_table_into_adjacent_ranges():
    samples = [b"5:aa:0000000000000020", b"2:bb:0000000000000001", b""]
    assert key_ranges(samples) == [
        KeyRange("", "2:bb:0000000000000001"),
        KeyRange("2:bb:0000000000000001", "5:aa:0000000000000020"),
        KeyRange("5:aa:0000000000000020", ""),
    ]


def test_no_samples_is_one_range_over_the_whole_table():
    assert key_ranges([]) == [KeyRange("", "")]
    assert key_ranges([b""]) == [KeyRange("", "")]
