"""Choosing the ETL's source is the ledger service's job: a dump, or rippled's gRPC API."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.service import open_source
from chainloom.ledger.sources.grpc import GrpcLedgerSource


@pytest.mark.parametrize("given", [{}, {"dump": Path("ledgers.dump"), "grpc": "127.0.0.1:50051"}])
def test_exactly_one_source_is_given(given: dict[str, object]):
    with pytest.raises(LedgerInputError, match="either a DUMP file or --grpc"):
        open_source(**given)  # type: ignore[arg-type]


def test_a_grpc_address_opens_the_grpc_source():
    source = open_source(grpc="127.0.0.1:1", start=5)
    try:
        assert isinstance(source, GrpcLedgerSource)
    finally:
        source.close()
