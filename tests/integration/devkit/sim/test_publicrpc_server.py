"""The harness's public-API server over real gRPC on loopback, asked by the product's client
(and by the raw generated stub, for the exact status codes a guardian answers)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from chainloom.publicrpc import FetchStatus, PublicRpcClient
from chainloom.rpc.generated.publicrpc.v1 import publicrpc_pb2, publicrpc_pb2_grpc
from chainloom.settings import PublicRpcSettings
from chainloom.settings.parts import PublicRpcBackoffSettings
from chainloom.spy.errors import SpyError
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.publicrpc_server import (
    NOT_FOUND_DETAIL,
    PublicRpcServer,
    PublicRpcServicer,
    load_archive,
    message_id_of,
)
from chainloom_dev.sim.spy_server import parse_selection
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas

TRANSFERS = Mix(weights={"token_transfer": 1.0}, duplicate=0.0, conflict=0.0)


@pytest.fixture
def vaa_file(tmp_path: Path) -> tuple[Path, list[bytes]]:
    vaas = list(generate_vaas(12, 9, DevGuardians(count=4), TRANSFERS))
    path = tmp_path / "vaas.txt"
    path.write_text("# signed VAAs\n" + "\n".join(raw.hex() for raw in vaas) + "\n\n")
    return path, vaas


def _settings(*endpoints: str) -> PublicRpcSettings:
    return PublicRpcSettings(
        endpoints=endpoints,
        timeout=2,
        rounds=2,
        backoff=PublicRpcBackoffSettings(initial=0.01, maximum=0.02),
    )


def test_found_not_found_withheld_and_failing(vaa_file: tuple[Path, list[bytes]]) -> None:
    path, vaas = vaa_file
    archive = load_archive([str(path)])
    assert set(archive.values()) == set(vaas)
    ids = sorted(archive)
    servicer = PublicRpcServicer(archive, withhold={ids[1]}, fail={ids[2]})
    with PublicRpcServer(servicer, "127.0.0.1:0") as server:
        with PublicRpcClient(_settings(server.target)) as client:
            found = client.fetch(*ids[0])
            withheld = client.fetch(*ids[1])
            failing = client.fetch(*ids[2])
            absent = client.fetch(ids[0][0], ids[0][1], 10**6)
        with grpc.insecure_channel(server.target) as channel:
            stub = publicrpc_pb2_grpc.PublicRPCServiceStub(channel)
            request = publicrpc_pb2.GetSignedVAARequest(
                message_id=publicrpc_pb2.MessageID(
                    emitter_chain=2,  # type: ignore[arg-type]
                    emitter_address="not hex",
                    sequence=1,
                )
            )
            with pytest.raises(grpc.RpcError) as raised:
                stub.GetSignedVAA(request, timeout=2)
    assert found.status is FetchStatus.FOUND
    assert found.vaa == archive[ids[0]]
    assert withheld.status is FetchStatus.NOT_FOUND
    assert absent.status is FetchStatus.NOT_FOUND
    assert failing.status is FetchStatus.ERROR
    assert failing.reason == f"{server.target}: INTERNAL: internal server error"
    assert failing.calls == 2
    assert raised.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert servicer.counters.found == 1
    assert servicer.counters.not_found == 2
    assert servicer.counters.failed == 2
    assert servicer.counters.invalid == 1


def test_the_second_endpoint_answers_when_the_first_is_down(
    vaa_file: tuple[Path, list[bytes]],
) -> None:
    path, vaas = vaa_file
    with socket.socket() as bound:  # bound, never listening: connections are refused
        bound.bind(("127.0.0.1", 0))
        unused_port = bound.getsockname()[1]
        _second_endpoint_answers(path, vaas, unused_port)


def _second_endpoint_answers(path: Path, vaas: list[bytes], unused_port: int) -> None:
    servicer = PublicRpcServicer(load_archive([str(path)]))
    server = PublicRpcServer(servicer, "127.0.0.1:0")
    with server, PublicRpcClient(_settings(f"127.0.0.1:{unused_port}", server.target)) as client:
        assert client.check_reachable(timeout=1) == [server.target]
        result = client.fetch(*message_id_of(vaas[3]))
    assert result.status is FetchStatus.FOUND
    assert result.endpoint == server.target
    assert result.calls == 2


def test_selections_and_bad_files(tmp_path: Path) -> None:
    emitter = "00" * 31 + "0a"
    assert parse_selection("2/0x0a/5-7") == {(2, emitter, 5), (2, emitter, 6), (2, emitter, 7)}
    for text in ("2/0a", "x/0a/1", "2/zz/1", "2/0a/7-x"):
        with pytest.raises(SpyError):
            parse_selection(text)
    bad = tmp_path / "bad.txt"
    bad.write_text("0100\n")
    with pytest.raises(SpyError, match=r"bad\.txt"):
        load_archive([str(bad)])


def test_the_cli_serves_until_sigterm(vaa_file: tuple[Path, list[bytes]]) -> None:
    path, vaas = vaa_file
    chain, emitter, sequence = message_id_of(vaas[0])
    argv = [
        *(sys.executable, "-m", "chainloom_dev", "spy", "serve-public-api", "--listen"),
        *("127.0.0.1:0", "--file", str(path), "--json"),
        *("--withhold", f"{chain}/{emitter}/{sequence}"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "12 VAAs, listening on 127.0.0.1:" in line, line
        target = line.rsplit(" ", 1)[1].strip()
        with PublicRpcClient(_settings(target)) as client:
            withheld = client.fetch(chain, emitter, sequence)
            found = client.fetch(*message_id_of(vaas[1]))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert withheld.status is FetchStatus.NOT_FOUND
    assert withheld.reason == f"not found at {target}"
    assert found.vaa == vaas[1]
    assert json.loads(out) == {"calls": 2, "found": 1, "not_found": 1, "failed": 0, "invalid": 0}
    assert NOT_FOUND_DETAIL == "requested VAA not found in store"
