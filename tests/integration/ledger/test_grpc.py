"""The gRPC source against the replay server: rippled's org.xrpl.rpc.v1 API over a real
gRPC connection, loading into SQLite."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from chainloom.ledger.etl import LedgerEtl, stored_state
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.errors import LedgerSourceError
from chainloom.ledger.sources.grpc import GrpcLedgerSource
from chainloom.ledger.types import LedgerHeader
from chainloom.rpc.generated.org.xrpl.rpc.v1 import (
    get_ledger_diff_pb2,
    get_ledger_entry_pb2,
    ledger_pb2,
)
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
from chainloom_dev.sim.ledger_replay import ReplayServer

FIRST = 38129
LEDGERS = 6


@pytest.fixture(scope="module")
def generated(
    vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[int, dict[bytes, bytes]]]:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=9, txs_per_ledger=30)
    path = tmp_path_factory.mktemp("grpc") / "ledgers.jsonl"
    states = {FIRST: {o.key: o.blob for o in initial.objects}}
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
            states[sequence] = generator.state
    return path, states


@pytest.fixture
def server(generated: tuple[Path, dict[int, dict[bytes, bytes]]]) -> Iterator[str]:
    replay = ReplayServer(generated[0])
    port = replay.start("127.0.0.1:0")
    yield f"127.0.0.1:{port}"
    replay.stop()


def test_etl_over_grpc_loads_the_same_ledgers(
    server: str, generated: tuple[Path, dict[int, dict[bytes, bytes]]], tmp_path: Path
) -> None:
    _, states = generated
    source = GrpcLedgerSource(server, start=FIRST)
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "g.db")}})
    try:
        summary = LedgerEtl(backend, source).run()
        assert summary.last_committed == FIRST + LEDGERS
        assert source.latest_sequence() == FIRST + LEDGERS
        for sequence in (FIRST, FIRST + LEDGERS):
            got = {o.key: o.blob for o in stored_state(backend, sequence)}
            assert got == states[sequence]
    finally:
        backend.close()
        source.close()


def test_initial_load_from_a_later_ledger_pages_get_ledger_data(
    server: str, generated: tuple[Path, dict[int, dict[bytes, bytes]]], tmp_path: Path
) -> None:
    _, states = generated
    start = FIRST + 3
    source = GrpcLedgerSource(server, start=start)
    full = source.fetch_full(start)
    assert full.is_full_state
    assert {o.key: o.blob for o in full.objects} == states[start]
    assert LedgerHeader.parse(full.header).sequence == start
    assert source.fetch_diff(FIRST + LEDGERS + 1) is None  # NOT_FOUND: not there yet
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "h.db")}})
    try:
        summary = LedgerEtl(backend, source).run()
        assert (summary.first_committed, summary.last_committed) == (start, FIRST + LEDGERS)
        range_ = backend.hard_fetch_ledger_range()
        assert range_ is not None
        assert range_.min_sequence == start
    finally:
        backend.close()
        source.close()


def test_get_ledger_diff_and_entry_answer_like_rippled(
    server: str, generated: tuple[Path, dict[int, dict[bytes, bytes]]]
) -> None:
    _, states = generated
    channel = grpc.insecure_channel(server)
    service = "/org.xrpl.rpc.v1.XRPLedgerAPIService/"
    diff_call = channel.unary_unary(
        service + "GetLedgerDiff",
        request_serializer=get_ledger_diff_pb2.GetLedgerDiffRequest.SerializeToString,
        response_deserializer=get_ledger_diff_pb2.GetLedgerDiffResponse.FromString,
    )
    entry_call = channel.unary_unary(
        service + "GetLedgerEntry",
        request_serializer=get_ledger_entry_pb2.GetLedgerEntryRequest.SerializeToString,
        response_deserializer=get_ledger_entry_pb2.GetLedgerEntryResponse.FromString,
    )
    try:
        base, desired = states[FIRST + 1], states[FIRST + 4]
        response = diff_call(
            get_ledger_diff_pb2.GetLedgerDiffRequest(
                base_ledger=ledger_pb2.LedgerSpecifier(sequence=FIRST + 1),
                desired_ledger=ledger_pb2.LedgerSpecifier(sequence=FIRST + 4),
                include_blobs=True,
            )
        )
        changed = {k for k in base.keys() | desired.keys() if base.get(k) != desired.get(k)}
        got = {o.key: o for o in response.ledger_objects.objects}
        assert set(got) == changed
        for key, obj in got.items():
            assert obj.data == desired.get(key, b"")
            expected_kind = (
                obj.CREATED
                if key not in base
                else obj.DELETED
                if key not in desired
                else obj.MODIFIED
            )
            assert obj.mod_type == expected_kind
        key = sorted(desired)[10]
        entry = entry_call(
            get_ledger_entry_pb2.GetLedgerEntryRequest(
                key=key, ledger=ledger_pb2.LedgerSpecifier(sequence=FIRST + 4)
            )
        )
        assert entry.ledger_object.data == desired[key]
        with pytest.raises(grpc.RpcError) as missing:
            entry_call(
                get_ledger_entry_pb2.GetLedgerEntryRequest(
                    key=b"\x07" * 32, ledger=ledger_pb2.LedgerSpecifier(sequence=FIRST)
                )
            )
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        channel.close()


def test_a_paced_replay_shows_lag_and_a_follower_catches_up(
    generated: tuple[Path, dict[int, dict[bytes, bytes]]], tmp_path: Path
) -> None:
    replay = ReplayServer(generated[0], interval=0.3)
    port = replay.start("127.0.0.1:0")
    source = GrpcLedgerSource(f"127.0.0.1:{port}", start=FIRST)
    backend = make_backend({"type": "sqlite", "sqlite": {"path": str(tmp_path / "f.db")}})
    try:
        first_seen = source.latest_sequence()
        assert first_seen is not None
        assert first_seen < FIRST + LEDGERS
        started = time.monotonic()
        summary = LedgerEtl(backend, source).run(
            stop=FIRST + LEDGERS, follow=True, poll_interval=0.05
        )
        assert summary.last_committed == FIRST + LEDGERS
        assert time.monotonic() - started >= 0.3 * (LEDGERS - 1)
    finally:
        backend.close()
        source.close()
        replay.stop()


def test_an_unreachable_server_is_a_clear_error() -> None:
    source = GrpcLedgerSource("127.0.0.1:1", retries=1, timeout=2.0)
    try:
        with pytest.raises(
            LedgerSourceError, match=r"127\.0\.0\.1:1: GetLedger failed: UNAVAILABLE"
        ):
            source.fetch_diff(FIRST)
    finally:
        source.close()
