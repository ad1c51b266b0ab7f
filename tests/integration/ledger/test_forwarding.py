"""``chainloom ledger api`` forwarding to rippled, against two stand-in rippled servers.

The API serves a stored history (ledger 38129's real state and two generated ledgers, loaded
by the ETL into SQLite) and forwards what needs a live server to the dev kit's stand-in
rippled JSON-RPC servers (:mod:`chainloom_dev.sim.rippled_jsonrpc`), started here. Calls go
through xrpl-py's typed requests and clients. The stand-ins count what reaches them, so each
test sees which endpoint answered, that nothing was lost and nothing sent twice.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from xrpl.clients import JsonRpcClient, WebsocketClient
from xrpl.core import binarycodec
from xrpl.core.keypairs import generate_seed
from xrpl.models.requests import (
    AccountInfo,
    Fee,
    LedgerClosed,
    LedgerCurrent,
    ServerInfo,
    ServerState,
    SubmitOnly,
)
from xrpl.models.response import Response
from xrpl.models.transactions import Payment
from xrpl.transaction import sign
from xrpl.wallet import Wallet

from chainloom.cli.ledger import ledger
from chainloom.ledger.api.server import ApiOptions, ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import (
    DatabaseSettings,
    ForwardingBackoffSettings,
    ForwardingSettings,
    SqliteSettings,
)
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpWriter
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger
from chainloom_dev.sim.rippled_jsonrpc import Mode, RippledStandInThread, transaction_hash
from tests.ledger_api_support import load, state_at

FIRST = 38129
CURRENT = 2000
"""The stand-ins' current ledger (the stored history ends at 38131: the two never agree)."""
DESTINATION = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
"""The payments' destination (any address: the stand-in holds no state)."""
WALLET = Wallet.from_seed(generate_seed(entropy="11" * 16))


@pytest.fixture(scope="module")
def database(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding ledger 38129 and two generated ledgers, loaded by the ETL."""
    directory = tmp_path_factory.mktemp("forwarding")
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=5, txs_per_ledger=10)
    dump = directory / "ledgers.jsonl"
    with DumpWriter(dump) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(2):
            writer.write(ledger, sequence)
    path = directory / "l.db"
    load(DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(path))), dump)
    return path


@pytest.fixture(scope="module")
def backend(database: Path) -> Iterator[Any]:
    config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(database)))
    opened = make_backend(config.model_copy(update={"read_only": True}))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def account(backend: BackendInterface) -> str:
    """An account of the newest stored ledger."""
    newest = backend.fetch_ledger_range()
    assert newest is not None
    return state_at(backend, newest.max_sequence).accounts()[0]


@dataclass
class Setup:
    first: RippledStandInThread
    second: RippledStandInThread
    server: ServerThread
    url: str

    @property
    def client(self) -> JsonRpcClient:
        return JsonRpcClient(self.url)

    def call(self, request: Any) -> Response:
        return self.client.request(request)

    def counts(self) -> tuple[int, int]:
        return self.first.standin.count(), self.second.standin.count()


def _serve(
    backend: BackendInterface, rippled: tuple[str, ...], *, timeout: float = 2.0, skip: float = 60.0
) -> ServerThread:
    forwarding = ForwardingSettings(
        rippled=rippled,
        request_timeout=timeout,
        backoff=ForwardingBackoffSettings(initial=skip, maximum=skip, jitter=0),
    )
    return ServerThread(backend, ApiOptions(range_refresh_seconds=3600.0, forwarding=forwarding))


@pytest.fixture
def setup(backend: BackendInterface, request: pytest.FixtureRequest) -> Iterator[Setup]:
    """Two stand-ins (``first`` asked first) and the API forwarding to them; the backoff a test
    marks with ``@pytest.mark.parametrize("setup", [seconds], indirect=True)`` (60 s)."""
    skip = float(getattr(request, "param", 60.0))
    first, second = RippledStandInThread(), RippledStandInThread()
    for standin in (first.standin, second.standin):
        standin.current_ledger = CURRENT
    urls = (first.start(), second.start())
    server = _serve(backend, urls, skip=skip)
    port = server.start()
    try:
        yield Setup(first, second, server, f"http://127.0.0.1:{port}/")
    finally:
        server.stop()
        first.stop()
        second.stop()


def _payment(sequence: int) -> tuple[str, str]:
    """A signed payment's blob and hash (xrpl-py's signer and codec)."""
    tx = Payment(
        account=WALLET.address,
        destination=DESTINATION,
        amount=str(1000 + sequence),
        fee="12",
        sequence=sequence,
        last_ledger_sequence=CURRENT + 20,
    )
    signed = sign(tx, WALLET)
    return binarycodec.encode(signed.to_xrpl()), signed.get_hash()


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=orjson.dumps(body), method="POST")
    with opener.open(request, timeout=60) as reply:
        answer: dict[str, Any] = orjson.loads(reply.read())
        return answer


# ---------------------------------------------------------------------------- forwarding


def test_live_server_methods_are_forwarded_and_marked(setup: Setup) -> None:
    fee = setup.call(Fee())
    assert fee.is_successful(), fee.result
    assert fee.result["forwarded"] is True
    assert fee.result["ledger_current_index"] == CURRENT
    assert fee.result["drops"]["base_fee"] == "10"
    state = setup.call(ServerState())
    assert state.result["state"]["server_state"] == "full"
    assert state.result["state"]["validated_ledger"]["seq"] == CURRENT - 1
    assert setup.call(LedgerCurrent()).result["ledger_current_index"] == CURRENT
    closed = setup.call(LedgerClosed())
    assert (closed.result["ledger_index"], closed.result["forwarded"]) == (CURRENT - 1, True)
    # Every call reached the first endpoint, unchanged: xrpl-py's api_version 2 preserved.
    standin = setup.first.standin
    assert [method for method, _ in standin.calls] == [
        "fee",
        "server_state",
        "ledger_current",
        "ledger_closed",
    ]
    assert all(params == {"api_version": 2} for _, params in standin.calls)
    assert setup.second.standin.count() == 0
    # Over raw JSON-RPC: the marker beside result too (where Clio puts it); api_version as sent.
    answer = _post(setup.url, {"method": "fee", "params": [{"api_version": 1}]})
    assert (answer["forwarded"], answer["result"]["forwarded"]) == (True, True)
    assert standin.calls[-1] == ("fee", {"api_version": 1})
    answer = _post(setup.url, {"method": "fee"})
    assert standin.calls[-1] == ("fee", {})


def test_a_submitted_transaction_reaches_rippled_once(setup: Setup) -> None:
    blob, tx_hash = _payment(1)
    submitted = setup.call(SubmitOnly(tx_blob=blob))
    assert submitted.is_successful(), submitted.result
    result = submitted.result
    assert (result["engine_result"], result["forwarded"]) == ("tesSUCCESS", True)
    assert result["tx_json"]["hash"] == tx_hash == transaction_hash(blob)
    assert result["tx_json"]["Account"] == WALLET.address
    assert setup.first.standin.submitted == {tx_hash: blob.upper()}
    again = setup.call(SubmitOnly(tx_blob=blob))
    assert again.result["engine_result"] == "tefPAST_SEQ"
    # rippled's own refusal comes back as rippled gave it, still marked forwarded.
    refused = setup.call(SubmitOnly(tx_blob="00"))
    assert not refused.is_successful()
    assert (refused.result["error"], refused.result["forwarded"]) == ("invalidTransaction", True)


def test_calls_on_the_current_ledger_go_to_rippled_and_validated_ones_do_not(
    setup: Setup, backend: BackendInterface, account: str
) -> None:
    live = setup.call(AccountInfo(account=account, ledger_index="current"))
    assert live.is_successful(), live.result
    assert live.result["forwarded"] is True
    assert (live.result["ledger_current_index"], live.result["validated"]) == (CURRENT, False)
    assert live.result["account_data"]["Balance"] == "100000000000"  # the stand-in's
    closed = setup.call(AccountInfo(account=account, ledger_index="closed"))
    assert closed.result["forwarded"] is True
    stored = setup.call(AccountInfo(account=account, ledger_index="validated"))
    assert stored.is_successful(), stored.result
    assert "forwarded" not in stored.result
    newest = backend.fetch_ledger_range()
    assert newest is not None
    assert stored.result["ledger_index"] == newest.max_sequence
    assert stored.result["account_data"]["Balance"] != "100000000000"
    assert setup.call(ServerInfo()).result.get("forwarded") is None
    assert [method for method, _ in setup.first.standin.calls] == ["account_info"] * 2
    assert setup.first.standin.calls[0][1]["ledger_index"] == "current"


def test_websocket_calls_are_forwarded_too(setup: Setup) -> None:
    with WebsocketClient(setup.url.replace("http://", "ws://")) as client:
        fee = client.request(Fee())
        current = client.request(LedgerCurrent())
    assert fee.is_successful(), fee.result
    assert (fee.result["forwarded"], fee.result["ledger_current_index"]) == (True, CURRENT)
    assert current.result["ledger_current_index"] == CURRENT
    assert setup.first.standin.calls == [
        ("fee", {"api_version": 2}),
        ("ledger_current", {"api_version": 2}),
    ]


def test_a_websocket_endpoint_is_forwarded_to_and_failed_over_from(
    backend: BackendInterface,
) -> None:
    over_websocket, over_http = RippledStandInThread(), RippledStandInThread()
    over_websocket.start()
    over_http.start()
    server = _serve(backend, (over_websocket.websocket_url, over_http.url))
    port = server.start()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        fee = client.request(Fee())
        assert fee.is_successful(), fee.result
        assert fee.result["forwarded"] is True
        blob, tx_hash = _payment(1)
        submitted = client.request(SubmitOnly(tx_blob=blob))
        assert submitted.result["engine_result"] == "tesSUCCESS"
        refused = client.request(SubmitOnly(tx_blob="00"))
        assert (refused.result["error"], refused.result["forwarded"]) == (
            "invalidTransaction",
            True,
        )
        assert refused.result["request"]["command"] == "submit"
        assert over_websocket.standin.calls[0] == ("fee", {"api_version": 2})
        assert over_websocket.standin.submitted == {tx_hash: blob.upper()}
        assert over_http.standin.count() == 0
        over_websocket.standin.mode = Mode.FAIL  # closes the WebSocket: the next one answers
        assert client.request(LedgerCurrent()).result["forwarded"] is True
        assert (over_websocket.standin.count(), over_http.standin.count()) == (4, 1)
    finally:
        server.stop()
        over_websocket.stop()
        over_http.stop()


# ------------------------------------------------------------------------------ failover


def test_a_killed_endpoint_fails_over_and_nothing_is_lost(setup: Setup) -> None:
    assert setup.call(Fee()).result["forwarded"] is True
    assert setup.counts() == (1, 0)
    setup.first.stop()
    hashes = []
    for sequence in range(1, 21):
        blob, tx_hash = _payment(sequence)
        hashes.append(tx_hash)
        answer = setup.call(SubmitOnly(tx_blob=blob))
        assert answer.is_successful(), answer.result
        assert (answer.result["engine_result"], answer.result["forwarded"]) == ("tesSUCCESS", True)
        assert setup.call(Fee()).result["forwarded"] is True
    # Every transaction reached the second endpoint exactly once.
    assert list(setup.second.standin.submitted) == hashes
    assert setup.second.standin.count("submit") == 20
    assert setup.second.standin.count("fee") == 20
    assert setup.first.standin.count() == 1


def test_an_endpoint_that_hangs_past_the_timeout_is_left_out(setup: Setup) -> None:
    setup.first.standin.mode = Mode.HANG
    blob, tx_hash = _payment(1)
    answer = setup.call(SubmitOnly(tx_blob=blob))  # waits the 2 s timeout, then the second
    assert answer.is_successful(), answer.result
    assert answer.result["forwarded"] is True
    assert setup.counts() == (1, 1)
    assert setup.second.standin.submitted == {tx_hash: blob.upper()}
    for _ in range(10):  # the hanging endpoint is in its backoff: not asked again
        assert setup.call(Fee()).result["forwarded"] is True
    assert setup.counts() == (1, 11)


# --------------------------------------------------------------------------------- outages


def test_without_rippled_live_methods_are_not_enabled_and_the_store_answers_the_rest(
    backend: BackendInterface, account: str
) -> None:
    server = ServerThread(backend, ApiOptions(range_refresh_seconds=3600.0))
    port = server.start()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        for request in (Fee(), ServerState(), LedgerCurrent(), SubmitOnly(tx_blob=_payment(1)[0])):
            refused = client.request(request)
            assert not refused.is_successful()
            assert (refused.result["error"], refused.result["error_code"]) == ("notEnabled", 12)
            assert "--rippled" in refused.result["error_message"]
        stored = client.request(AccountInfo(account=account, ledger_index="current"))
        assert stored.is_successful(), stored.result
        newest = backend.fetch_ledger_range()
        assert newest is not None
        assert stored.result["ledger_index"] == newest.max_sequence
        assert "forwarded" not in stored.result
    finally:
        server.stop()


@pytest.mark.parametrize("setup", [0.5], indirect=True)
def test_all_endpoints_down_is_one_error_logged_once_per_outage(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chainloom.ledger.api.rippled")
    for standin in (setup.first.standin, setup.second.standin):
        standin.mode = Mode.FAIL
    answers = [setup.call(Fee()) for _ in range(8)]
    for answer in answers:
        assert not answer.is_successful()
        assert (answer.result["error"], answer.result["error_code"]) == ("invalidResponse", 7003)
    assert setup.first.standin.count() >= 1
    assert setup.second.standin.count() >= 1
    began = [r for r in caplog.records if "no rippled answers" in r.getMessage()]
    assert len(began) == 1
    # The second endpoint comes back: the next call after its backoff is answered.
    setup.second.standin.mode = Mode.ANSWER
    deadline = time.monotonic() + 30
    recovered = setup.call(Fee())
    while not recovered.is_successful() and time.monotonic() < deadline:
        time.sleep(0.05)
        recovered = setup.call(Fee())
    assert recovered.result["forwarded"] is True
    ended = [r for r in caplog.records if "answers after an outage" in r.getMessage()]
    assert len(ended) == 1
    # Both killed: nothing to connect to.
    setup.first.stop()
    setup.second.stop()
    refused = [setup.call(Fee()) for _ in range(3)]
    assert {r.result["error"] for r in refused} == {"connectionError"}
    assert {r.result["error_code"] for r in refused} == {7000}
    assert len([r for r in caplog.records if "no rippled answers" in r.getMessage()]) == 2


def test_every_endpoint_hanging_is_a_timeout(backend: BackendInterface) -> None:
    hanging = RippledStandInThread()
    hanging.standin.mode = Mode.HANG
    server = _serve(backend, (hanging.start(),), timeout=0.5)
    port = server.start()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        answer = client.request(Fee())
        assert (answer.result["error"], answer.result["error_code"]) == ("timeout", 7002)
        assert hanging.standin.count() == 1
    finally:
        server.stop()
        hanging.stop()


# -------------------------------------------------------------------------------- commands


def _started(command: list[str], banner: str, env: dict[str, str] | None = None) -> Any:
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    line = process.stderr.readline()
    assert banner in line, line
    return process, line.strip().rsplit(" ", 1)[-1]


def _stopped(process: Any) -> str:
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(timeout=30) == 0
        return str(process.stderr.read())
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


def test_the_commands_forward_to_a_standin_named_by_flag_or_environment(database: Path) -> None:
    standin, url = _started(
        [sys.executable, "-m", "chainloom_dev", "ledger", "rippled", "--listen", "127.0.0.1:0",
         "--current-ledger", "777"],
        "rippled stand-in on",
    )  # fmt: skip
    try:
        api_command = [sys.executable, "-m", "chainloom", "ledger", "api", "--sqlite-path",
                       str(database), "--port", "0"]  # fmt: skip
        by_flag, address = _started([*api_command, "--rippled", url], "ledger api on")
        try:
            fee = JsonRpcClient(address).request(Fee())
            assert (fee.result["ledger_current_index"], fee.result["forwarded"]) == (777, True)
        finally:
            _stopped(by_flag)
        env = {**os.environ, "CHAINLOOM_FORWARDING__RIPPLED": orjson.dumps([url]).decode()}
        by_env, address = _started(api_command, "ledger api on", env)
        try:
            current = JsonRpcClient(address).request(LedgerCurrent())
            assert (current.result["ledger_current_index"], current.result["forwarded"]) == (
                777,
                True,
            )
        finally:
            _stopped(by_env)
    finally:
        assert "2 calls answered" in _stopped(standin)


def test_a_bad_rippled_url_exits_2_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        ledger,
        ["api", "--sqlite-path", str(tmp_path / "x.db"), "--rippled", "ftp://user:pw@h:21/"],
    )
    assert result.exit_code == 2
    assert "forwarding.rippled" in result.stderr
    assert "http:// or https:// or ws:// or wss://" in result.stderr
    assert "pw@" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_calls_past_max_pending_waiting_for_rippled_are_too_busy(
    backend: BackendInterface,
) -> None:
    hanging = RippledStandInThread()
    hanging.standin.mode = Mode.HANG
    forwarding = ForwardingSettings(rippled=(hanging.start(),), request_timeout=5.0)
    options = ApiOptions(range_refresh_seconds=3600.0, max_pending=2, forwarding=forwarding)
    server = ServerThread(backend, options)
    port = server.start()
    client = JsonRpcClient(f"http://127.0.0.1:{port}/")
    try:
        with ThreadPoolExecutor(2) as pool:
            waiting = [pool.submit(client.request, Fee()) for _ in range(2)]
            deadline = time.monotonic() + 30
            while hanging.standin.count() < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            busy = client.request(Fee())
            assert (busy.result["error"], busy.result["error_code"]) == ("tooBusy", 9)
            for answer in waiting:
                assert answer.result(timeout=60).result["error"] == "timeout"
        assert hanging.standin.count() == 2
    finally:
        server.stop()
        hanging.stop()
