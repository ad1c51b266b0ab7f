"""``ledger load --grpc`` against a server that skips or mixes up ledgers: exit 2 naming the
ledger, everything before it stored. The server is a small rippled stand-in over a real gRPC
connection, serving generated ledgers from memory with the faults each test asks for."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from chainloom.cli.ledger import ledger
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.dump import DumpFile
from chainloom.rpc.generated.org.xrpl.rpc.v1 import (
    get_ledger_data_pb2,
    get_ledger_pb2,
    ledger_pb2,
)
from tests.ledger_support import FIRST, generate_dump

LAST = FIRST + 6


class FaultyServicer:
    """``GetLedger`` and ``GetLedgerData`` like rippled, over ledgers in memory.

    ``lost`` ledgers answer NOT_FOUND although later ones are validated (a hole in the
    server's history); ``answers`` maps a requested ledger to the one sent instead.
    """

    def __init__(
        self,
        records: Mapping[int, SourceLedger],
        *,
        lost: Collection[int] = (),
        answers: Mapping[int, int] | None = None,
    ) -> None:
        self.records = records
        self.lost = lost
        self.answers = answers or {}

    def _record(self, specifier: ledger_pb2.LedgerSpecifier, context: grpc.ServicerContext) -> int:
        if specifier.WhichOneof("ledger") == "shortcut":
            return max(self.records)
        sequence = specifier.sequence
        if sequence in self.lost or sequence not in self.records:
            context.abort(grpc.StatusCode.NOT_FOUND, "ledger not found")
        return self.answers.get(sequence, sequence)

    def get_ledger(
        self, request: get_ledger_pb2.GetLedgerRequest, context: grpc.ServicerContext
    ) -> get_ledger_pb2.GetLedgerResponse:
        record = self.records[self._record(request.ledger, context)]
        response = get_ledger_pb2.GetLedgerResponse(ledger_header=record.header, validated=True)
        if request.transactions:
            response.transactions_list.transactions.extend(
                get_ledger_pb2.TransactionAndMetadata(transaction_blob=t, metadata_blob=m)
                for t, m in record.transactions
            )
        if request.get_objects and not record.is_full_state:
            response.ledger_objects.objects.extend(
                ledger_pb2.RawLedgerObject(key=o.key, data=o.blob) for o in record.objects
            )
            response.objects_included = True
        return response

    def get_ledger_data(
        self, request: get_ledger_data_pb2.GetLedgerDataRequest, context: grpc.ServicerContext
    ) -> get_ledger_data_pb2.GetLedgerDataResponse:
        record = self.records[self._record(request.ledger, context)]
        response = get_ledger_data_pb2.GetLedgerDataResponse(ledger_index=request.ledger.sequence)
        response.ledger_objects.objects.extend(
            ledger_pb2.RawLedgerObject(key=o.key, data=o.blob) for o in record.objects
        )
        return response


@contextmanager
def serving(servicer: FaultyServicer) -> Iterator[str]:
    """Serve ``servicer`` on a free local port; yields ``host:port``."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handlers = {
        "GetLedger": grpc.unary_unary_rpc_method_handler(
            servicer.get_ledger,
            request_deserializer=get_ledger_pb2.GetLedgerRequest.FromString,
            response_serializer=get_ledger_pb2.GetLedgerResponse.SerializeToString,
        ),
        "GetLedgerData": grpc.unary_unary_rpc_method_handler(
            servicer.get_ledger_data,
            request_deserializer=get_ledger_data_pb2.GetLedgerDataRequest.FromString,
            response_serializer=get_ledger_data_pb2.GetLedgerDataResponse.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("org.xrpl.rpc.v1.XRPLedgerAPIService", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


@pytest.fixture(scope="module")
def records(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, SourceLedger]:
    path = tmp_path_factory.mktemp("grpc-gaps") / "ledgers.jsonl"
    generate_dump(vectors_dir, path, seed=8, ledgers=LAST - FIRST, txs=10)
    return dict(DumpFile(path))


def _load(address: str, db: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        ledger,
        ["load", "--grpc", address, "--start", str(FIRST), "--quiet", "--json",
         "--sqlite-path", str(db)],
        catch_exceptions=False,
    )  # fmt: skip
    return result.exit_code, result.stdout, result.stderr


def _stored(db: Path) -> dict[str, int | None]:
    result = CliRunner().invoke(ledger, ["range", "--json", "--sqlite-path", str(db)])
    stored: dict[str, int | None] = json.loads(result.stdout)
    return stored


def test_a_server_with_every_ledger_loads_them_all(
    records: dict[int, SourceLedger], tmp_path: Path
) -> None:
    with serving(FaultyServicer(records)) as address:
        code, out, _ = _load(address, tmp_path / "l.db")
    assert code == 0
    assert json.loads(out)["stopped_because"] == "source exhausted"
    assert _stored(tmp_path / "l.db") == {"min": FIRST, "max": LAST}


@pytest.mark.parametrize(
    ("lost", "answers", "message"),
    [
        (
            {FIRST + 3},
            {},
            "ledger 38132 is missing: the server has validated ledgers up to 38135 but answers "
            "NOT_FOUND for 38132",
        ),
        (
            (),
            {FIRST + 3: FIRST + 2},
            "asked for ledger 38132, the server answered with ledger 38131",
        ),
        (
            (),
            {FIRST + 3: FIRST + 4},
            "asked for ledger 38132, the server answered with ledger 38133",
        ),
    ],
    ids=["skipped", "repeated", "ahead"],
)
def test_a_server_that_skips_or_mixes_up_a_ledger_is_an_input_error(
    records: dict[int, SourceLedger],
    tmp_path: Path,
    lost: set[int],
    answers: dict[int, int],
    message: str,
) -> None:
    db = tmp_path / "l.db"
    with serving(FaultyServicer(records, lost=lost, answers=answers)) as address:
        code, out, err = _load(address, db)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [f"error: gRPC source {address}: {message}"]
    assert _stored(db) == {"min": FIRST, "max": FIRST + 2}
