"""The check-and-mutate requests the adapter builds itself carry what the data client sends."""

from __future__ import annotations

from google.cloud.bigtable_v2.types import bigtable, data

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import (
    _add_set_cells,
    _mutations,
    _signed_vaa_predicate,
    _signed_vaa_predicate_pb,
)
from chainloom.eventstore.cells import Cell


def test_set_cells_match_the_data_client_mutations() -> None:
    cells = [
        Cell(schema.MESSAGE_PUBLICATION, "Digest", b"ab" * 32, 1_700_000_000_000_000),
        Cell(schema.SIGNATURES, "0xAbC\u00e9", b"", 1),
        Cell(schema.QUORUM_STATE, "SignedVAA", bytes(range(256)), 1_700_000_000_019_000),
    ]
    request = bigtable.CheckAndMutateRowRequest.pb()()
    _add_set_cells(request.false_mutations, cells)
    expected = [data.Mutation.pb(m._to_pb()) for m in _mutations(cells)]
    assert list(request.false_mutations) == expected


def test_predicate_matches_the_data_client_filter() -> None:
    assert _signed_vaa_predicate_pb() == data.RowFilter.pb(_signed_vaa_predicate()._to_pb())
    assert _signed_vaa_predicate_pb().chain.filters[1].column_qualifier_regex_filter == (
        b"SignedVAA"
    )
