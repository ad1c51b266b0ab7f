"""Queries return the right rows in the right order; administration reports drift as data."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

from click.testing import CliRunner
from google.cloud.bigtable import Client
from google.cloud.bigtable import column_family as cf

from chainloom.cli.events import events
from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import (
    BigtableTables,
    check_schema,
    ensure_schema,
    reconcile_schema,
)
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, mainnet_emitters
from chainloom_dev.sim.dev_guardians import DevGuardians

KIT = DevGuardians()
EMITTERS = mainnet_emitters().with_dev_emitters([2, 4])
OTHER = bytes(31) + b"\x42"
T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
SEQUENCES = [0, 5, 9_999_999_999_999_999, 10**16, 10**16 + 1, 2**63, 2**64 - 1, 77]


def _vaa(
    chain: int, emitter: bytes, sequence: int, timestamp: int, signers: list[int] | None = None
):
    return KIT.sign(
        emitter_chain=chain,
        emitter_address=emitter,
        sequence=sequence,
        payload=b"hello %d" % sequence,
        timestamp=timestamp,
        signers=signers,
    )


def test_scan_recent_by_tx_and_counts(tables: BigtableTables) -> None:
    shuffled = list(SEQUENCES)
    random.Random(7).shuffle(shuffled)
    vaas = [_vaa(4, DEV_TOKEN_BRIDGE_EMITTER, seq, T0 + i * 3600) for i, seq in enumerate(shuffled)]
    others = [_vaa(4, OTHER, seq, T0 + 86_400 + seq) for seq in (1, 2)]
    chain_14 = [_vaa(14, OTHER, 3, T0)]  # chain 14 must not appear in chain 1 or 4 scans
    with EventWriter(tables, KIT.sets(0), emitters=EMITTERS) as writer:
        for index, vaa in enumerate(vaas):
            writer.submit(vaa.to_bytes(), initiating_tx_id=f"0x{'AB' * 31}{index:02x}")
        writer.submit(others[0].to_bytes(), initiating_tx_id="0x" + "cd" * 32)
        writer.submit(others[1].to_bytes(), initiating_tx_id="0x" + "cd" * 32)
        writer.submit(chain_14[0].to_bytes())
    reader = EventReader(tables)
    emitter = DEV_TOKEN_BRIDGE_EMITTER.hex()

    scanned = reader.scan(4, emitter=emitter)
    assert [m.key.sequence for m in scanned] == sorted(SEQUENCES)
    bounded = reader.scan(4, emitter=emitter, from_seq=6, to_seq=2**63)
    assert [m.key.sequence for m in bounded] == [
        77,
        9_999_999_999_999_999,
        10**16,
        10**16 + 1,
        2**63,
    ]
    limited = reader.scan(4, emitter="0x" + emitter.lstrip("0"), from_seq=1, limit=3)
    assert [m.key.sequence for m in limited] == [5, 77, 9_999_999_999_999_999]
    whole_chain = reader.scan(4, families=[schema.MESSAGE_PUBLICATION])
    assert len(whole_chain) == len(SEQUENCES) + 2
    assert {m.key.chain for m in whole_chain} == {4}
    assert set(whole_chain[0].families) == {schema.MESSAGE_PUBLICATION}
    assert reader.scan(1) == []

    newest = reader.recent(4, limit=3)
    expected = sorted(vaas + others, key=lambda v: v.timestamp, reverse=True)[:3]
    assert [m.key.message_id for m in newest] == [v.message_id for v in expected]

    found = reader.by_tx("0x" + "CD" * 32)
    assert [m.key.message_id for m in found] == [others[0].message_id, others[1].message_id]
    single = reader.by_tx(f"0x{'ab' * 31}03")
    assert [m.key.message_id for m in single] == [vaas[3].message_id]
    assert reader.by_tx("0x" + "00" * 32) == []

    counts = reader.count_per_day(dt.date(2023, 11, 14), dt.date(2023, 11, 16))
    per_day: dict[str, int] = {}
    for vaa in [*vaas, *others]:
        day = dt.datetime.fromtimestamp(vaa.timestamp, tz=dt.UTC).strftime("%Y-%m-%d")
        per_day[day] = per_day.get(day, 0) + 1
    assert counts == {**{(4, d): n for d, n in per_day.items()}, (14, "2023-11-14"): 1}
    assert reader.count_per_day(dt.date(2023, 11, 15), dt.date(2023, 11, 15), chain=14) == {}


def test_schema_drift_is_reported_and_reconciled(settings: BigtableSettings) -> None:
    again = ensure_schema(settings)
    assert again.created_tables == ()
    assert again.in_sync
    admin = Client(project=settings.project, admin=True).instance(settings.instance)
    table = admin.table(settings.table)
    table.column_family(schema.CHAIN_DETAILS).delete()
    table.column_family(schema.VAA_STATE, cf.MaxVersionsGCRule(2)).update()
    table.column_family("Extra", cf.MaxAgeGCRule(dt.timedelta(days=1))).create()
    report = check_schema(settings)
    problems = {(d.family, d.problem, d.expected, d.actual) for d in report.drift}
    assert problems == {
        (schema.CHAIN_DETAILS, "missing", "max_versions=1", None),
        (schema.VAA_STATE, "gc_rule", "max_versions=64", "max_versions=2"),
        ("Extra", "unexpected", None, "max_age=86400s"),
    }
    reconcile_schema(settings, report.drift)
    remaining = check_schema(settings).drift
    assert [(d.family, d.problem) for d in remaining] == [("Extra", "unexpected")]


def test_cli_init_put_get_scan_by_tx(
    settings: BigtableSettings, vaa_vectors: list[dict[str, Any]]
) -> None:
    runner = CliRunner()
    assert settings.project is not None
    assert settings.instance is not None
    base = [
        "--project",
        settings.project,
        "--instance",
        settings.instance,
        "--table",
        settings.table,
    ]
    init = runner.invoke(events, [*base, "init", "--json"])
    assert init.exit_code == 0, init.output
    assert json.loads(init.output) == {"created_tables": [], "in_sync": True, "drift": []}
    mainnet = [
        v
        for v in vaa_vectors
        if (v["expected"].get("verified_against") or "").startswith("mainnet")
    ]
    lines = "\n".join([v["hex"] for v in mainnet[:4]] + ["nothex", mainnet[0]["hex"]]) + "\n"
    put = runner.invoke(events, [*base, "put"], input=lines)
    assert put.exit_code == 2
    assert "new 4, updated 0, unchanged 1, conflicting 0, refused 1" in put.output
    assert "input 5 (nothex)" in put.output
    one = mainnet[1]
    tx = runner.invoke(events, [*base, "put", "--tx-id", "0x" + "EE" * 32, "--json", one["hex"]])
    assert tx.exit_code == 0, tx.output
    assert json.loads(tx.output.strip().splitlines()[-1])["updated"] == 1
    got = runner.invoke(
        events,
        [*base, "get", one["expected"]["message_id"], "--json", "--families", "MessagePublication"],
    )
    assert got.exit_code == 0, got.output
    view = json.loads(got.output)
    assert list(view["families"]) == ["MessagePublication"]
    assert view["families"]["MessagePublication"]["InitiatingTxID"] == "0x" + "ee" * 32
    by_tx = runner.invoke(events, [*base, "by-tx", "0x" + "ee" * 32, "--json"])
    assert json.loads(by_tx.output)["message_id"] == one["expected"]["message_id"]
    chain = one["expected"]["emitter_chain"]
    scan = runner.invoke(events, [*base, "scan", "--chain", str(chain), "--json"])
    ids = [json.loads(line)["message_id"] for line in scan.output.splitlines()]
    assert one["expected"]["message_id"] in ids
    missing = runner.invoke(events, [*base, "get", "2/00/1"])
    assert missing.exit_code == 1
    absent = runner.invoke(events, ["--table", "no-such-table", "get", "2/00/1"])
    assert absent.exit_code == 2
    assert "'no-such-table' does not exist" in absent.output
    put_absent = runner.invoke(events, ["--table", "no-such-table", "put", mainnet[0]["hex"]])
    assert put_absent.exit_code == 2
    assert "does not exist; create it with `chainloom events init`" in put_absent.output
    bad = runner.invoke(events, [*base, "get", "not-an-id"])
    assert bad.exit_code == 2
    assert "is not a message id" in bad.output
