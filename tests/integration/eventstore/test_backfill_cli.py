"""``chainloom events gaps`` and ``events backfill`` as real processes, fetching from
``chainloom-dev spy serve-public-api --table`` (the public API served from another events table)
on loopback, against the Bigtable emulator."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.publicrpc_server import message_id_of
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas

CHAINLOOM = str(Path(sys.executable).with_name("chainloom"))
CHAINLOOM_DEV = str(Path(sys.executable).with_name("chainloom-dev"))
TRANSFERS = Mix(weights={"token_transfer": 1.0}, duplicate=0.0, conflict=0.0)
MessageId = tuple[int, str, int]


def _stored(settings: BigtableSettings) -> set[MessageId]:
    with BigtableTables(settings) as tables:
        reader = EventReader(tables)
        return {(c, e, s) for c, e in reader.emitters() for s in reader.sequences(c, e)}


def _events(table: str, *args: str) -> tuple[int, Any, str]:
    answer = subprocess.run(
        [CHAINLOOM, "events", "--project", "chainloom", "--instance", "test", "--table", table,
         *args, "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    body = json.loads(answer.stdout) if answer.stdout.strip() else None
    return answer.returncode, body, answer.stderr


def test_gaps_computed_from_the_store_are_filled_from_a_table_served_as_the_public_api(
    settings: BigtableSettings,
) -> None:
    guardians = DevGuardians()
    vaas = {message_id_of(raw): raw for raw in generate_vaas(120, 21, guardians, TRANSFERS)}
    ids = sorted(vaas)
    last = {i[:2]: i[2] for i in ids}
    first = {}
    for i in reversed(ids):
        first[i[:2]] = i[2]
    holes = {i for i in ids if i[2] % 4 == 2 and first[i[:2]] < i[2] < last[i[:2]]}
    assert len(holes) >= 10
    full = settings.model_copy(
        update={"table": settings.table + "-full", "index_table": settings.table + "-full-index"}
    )
    ensure_schema(full)
    with BigtableTables(full) as tables:
        EventWriter(tables, guardians.sets(0)).put_many(vaas[i] for i in ids)
    with BigtableTables(settings) as tables:
        EventWriter(tables, guardians.sets(0)).put_many(vaas[i] for i in ids if i not in holes)

    code, listed, err = _events(settings.table, "gaps")
    assert code == 0, err
    assert listed["source"] == "store"
    assert listed["missing"] == len(holes)
    named = {
        (g["chain"], g["emitter"], s)
        for g in listed["gaps"]
        for s in range(g["first"], g["last"] + 1)
    }
    assert named == holes

    port = free_port()
    server = subprocess.Popen(
        [CHAINLOOM_DEV, "spy", "serve-public-api", "--listen", f"127.0.0.1:{port}",
         "--table", full.table, "--bigtable-project", "chainloom", "--bigtable-instance", "test",
         "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(1.0)
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        code, filled, err = _events(
            settings.table, "backfill", "--public-api", f"127.0.0.1:{port}",
            "--guardian-set", "dev", "--timeout", "5",
        )  # fmt: skip
        assert code == 0, err
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=30)
    assert filled["source"] == "store"
    assert filled["asked"] == filled["found"] == filled["new"] == len(holes)
    assert filled["still_missing"] == []
    assert json.loads(out.strip().splitlines()[-1])["found"] == len(holes)
    assert _stored(settings) == set(ids)
    code, listed, err = _events(settings.table, "gaps")
    assert code == 0, err
    assert listed["missing"] == 0


def test_backfill_without_an_endpoint_or_with_a_dead_one_says_so_in_one_line(
    settings: BigtableSettings,
) -> None:
    guardians = DevGuardians()
    raws = list(generate_vaas(30, 22, guardians, TRANSFERS))
    ids = sorted(message_id_of(raw) for raw in raws)
    with BigtableTables(settings) as tables:
        EventWriter(tables, guardians.sets(0)).put_many(
            raw for raw in raws if message_id_of(raw) != ids[1]
        )
    code, _, err = _events(settings.table, "backfill", "--guardian-set", "dev")
    assert code == 2
    assert err.strip().startswith("error: no public API endpoint")
    closed = f"127.0.0.1:{free_port()}"
    code, _, err = _events(
        settings.table, "backfill", "--guardian-set", "dev", "--public-api", closed,
        "--timeout", "0.5",
    )  # fmt: skip
    assert code == 4
    assert "no public API endpoint reachable" in err
    assert "Traceback" not in err
