"""Store outages, for real: the emulator behind a TCP relay the test closes and reopens, and a
loopback port nothing listens on.

Running, the indexer rides an outage out: ``/readyz`` turns 503 naming the store, one log line
says so, nothing buffered is lost, and the first write after the outage turns it back. At
start, an unreachable store is one line and exit 4 (docs/exit-codes.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chainloom_dev.net import free_port
from tests.integration.eventstore.test_outage import Relay
from tests.integration.indexer.conftest import (
    Store,
    contents,
    serve_spy,
    workload,
    write_directly,
    write_vaa_file,
)


def _wait_ready(indexer: Any, want: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, body = indexer.get("/readyz")
        if status == want:
            return dict(json.loads(body))
        if time.monotonic() > deadline:
            raise AssertionError(f"/readyz stayed {status}: {body}")
        time.sleep(0.1)


def test_a_store_outage_while_running_is_not_ready_then_recovers_losing_nothing(
    store: Store, tmp_path: Path, indexer_process: Any
) -> None:
    relay = Relay(store.emulator)
    relay.start()
    raws = workload(200, seed=1405)
    spy_port = free_port()
    spy = serve_spy(write_vaa_file(tmp_path / "vaas.txt", raws), spy_port, copies=5, rate=25)
    indexer = indexer_process(
        {
            "bigtable": {
                "project": store.settings.project,
                "instance": store.settings.instance,
                "table": store.settings.table,
                "operation_timeout": 2,
            },
            "spy": {"address": f"127.0.0.1:{spy_port}"},
            "batch": {"rows": 20, "latency": 0.1},
            "write_deadline": 2,
            "store_check_interval": 1,
            "store_retry": {"initial": 0.2, "maximum": 1.0},
        },
        env={"BIGTABLE_EMULATOR_HOST": relay.address},
    )
    indexer.start()
    try:
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", 10)
        _wait_ready(indexer, 200)
        relay.stop()
        details = _wait_ready(indexer, 503)
        assert details["spy"] == "connected"
        assert details["store"].startswith("down: Bigtable unavailable at emulator ")
        time.sleep(3)  # several failed writes and checks: still one line
        assert indexer.metric("chainloom_indexer_store_up") == 0
        relay.start()
        indexer.wait_for_metric("chainloom_indexer_vaas_written_total", len(set(raws)))
        _wait_ready(indexer, 200)
        indexer.signal(signal.SIGTERM)
        assert indexer.wait(60) == 0, indexer.output()
    finally:
        spy.stop()
        relay.stop()
    output = indexer.output()
    assert output.count("store down") == 1, output
    assert output.count("store up again") == 1, output
    assert "Traceback" not in output
    write_directly(store.reference, raws, rows=20)
    assert contents(store.settings) == contents(store.reference)


def test_an_unreachable_store_at_start_is_one_line_and_exit_4(tmp_path: Path) -> None:
    emulator = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    env |= {"BIGTABLE_EMULATOR_HOST": emulator, "CHAINLOOM_BIGTABLE__OPERATION_TIMEOUT": "2"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "chainloom.cli", "indexer", "run", "--spy", "127.0.0.1:1",
         "--probe-port", "0", "--guardian-set", "devnet"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: Bigtable unavailable at emulator {emulator}: ")
    assert time.monotonic() - started < 2 + 30


def test_missing_tables_at_start_say_how_to_create_them(bigtable_emulator: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    env |= {"BIGTABLE_EMULATOR_HOST": bigtable_emulator}
    done = subprocess.run(
        [sys.executable, "-m", "chainloom.cli", "indexer", "run", "--table", "no-such-table",
         "--probe-port", "0", "--guardian-set", "devnet"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: Bigtable table 'no-such-table' does not exist; create it with "
        "`chainloom events init`"
    ]
