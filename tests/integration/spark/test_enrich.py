"""enrich end to end: real local Spark (the shared session), the real Bigtable emulator.

The table (``table_workload``) holds the shared vectors, a generated stream and hand-made
transfers in every state; the prices are a small CSV written here. Every transfer's details
after the run are checked against values computed in this file from the payload bytes, and a
second run must write nothing.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.schema import (
    ASSET_META_PAYLOAD,
    TOKEN_TRANSFER_DETAILS,
    TOKEN_TRANSFER_PAYLOAD,
)
from chainloom.eventstore.service import locate
from chainloom.settings import BigtableSettings
from chainloom.wormhole import chain_name
from chainloom_spark.jobs import enrich
from tests.integration.spark.job_process import kill_when, spark_job
from tests.integration.spark.table_workload import (
    COIN_IDS_CSV,
    PRICES,
    PRICES_CSV,
    Workload,
    notional,
    payload_of,
    populate,
    populate_transfers,
    row_key,
    timestamp_of,
    utc_day,
    whole_tokens,
)


def _stored(workload: Workload) -> dict[str, dict[str, dict[str, bytes]]]:
    with BigtableTables(workload.location) as tables:
        return dict(tables.scan_events([("", "")], end_inclusive=False))


def _expected(workload: Workload, stored: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per transfer row: the outcome and, when enriched, the details it must hold."""
    first: dict[str, bytes] = {}
    for raw in workload.raws:
        first.setdefault(row_key(raw), raw)
    assets: dict[tuple[int, str], tuple[int, str, int, str]] = {}
    for key, raw in first.items():
        if ASSET_META_PAYLOAD not in stored[key]:
            continue
        p = payload_of(raw)
        token = (int.from_bytes(p[33:35], "big"), p[1:33].hex())
        seen = (timestamp_of(raw), key, p[35], p[36:68].rstrip(b"\x00").decode())
        if token not in assets or seen[:2] > assets[token][:2]:
            assets[token] = seen
    expected: dict[str, dict[str, Any]] = {}
    for key, raw in first.items():
        if TOKEN_TRANSFER_PAYLOAD not in stored[key]:
            continue
        p = payload_of(raw)
        token = (int.from_bytes(p[65:67], "big"), p[33:65].hex())
        chain = int(key.split(":")[0])
        if key in workload.priced_at_ingest:
            expected[key] = {"outcome": "already_enriched", "chain": chain}
            continue
        asset = assets.get(token)
        if asset is None:
            expected[key] = {"outcome": "no_asset_meta", "chain": chain}
            continue
        _, _, decimals, symbol = asset
        text, value = whole_tokens(int.from_bytes(p[1:33], "big"), decimals)
        price = PRICES.get((*token, utc_day(timestamp_of(raw))))
        expected[key] = {
            "outcome": "unpriced" if price is None else "enriched",
            "chain": chain,
            "Amount": text,
            "Decimals": str(decimals),
            "OriginSymbol": symbol,
            "NotionalUSD": None if price is None else notional(value, price),
            "TokenPriceUSD": price,
        }
    return expected


@pytest.fixture
def workload(
    bigtable_table_name: str, vaa_vectors: list[dict[str, Any]], tmp_path: Path
) -> Workload:
    return populate(bigtable_table_name, vaa_vectors, tmp_path)


@pytest.fixture
def prices(tmp_path: Path) -> tuple[Path, Path]:
    path, coin_ids = tmp_path / "prices.csv", tmp_path / "coin-ids.csv"
    path.write_text(PRICES_CSV)
    coin_ids.write_text(COIN_IDS_CSV)
    return path, coin_ids


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = enrich.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_enrich_computes_the_details_and_a_rerun_writes_nothing(
    spark, workload, prices, tmp_path, capsys
):
    before = _stored(workload)
    expected = _expected(workload, before)
    outcomes = Counter(e["outcome"] for e in expected.values())
    assert outcomes["enriched"] >= 17
    assert outcomes["unpriced"] >= 6
    assert outcomes["no_asset_meta"] >= 100
    assert outcomes["already_enriched"] == 2
    args = [
        *("--table", workload.location.table, "--prices", str(prices[0])),
        *("--coin-ids", str(prices[1])),
    ]
    code, output = _run([*args, "--summary", str(tmp_path / "first.json")], capsys)
    assert code == 0, output
    first = json.loads((tmp_path / "first.json").read_text())
    for outcome in ("enriched", "unpriced", "no_asset_meta", "already_enriched"):
        assert first[outcome] == outcomes[outcome], (outcome, first)
        per_chain = Counter(chain_name(e["chain"]) for e in expected.values()
                            if e["outcome"] == outcome)  # fmt: skip
        assert {c: v[outcome] for c, v in first["per_chain"].items() if v[outcome]} == per_chain
    # Unpriced transfers get the details without a notional, if they had none.
    unpriced_bare = sum(
        1
        for key, e in expected.items()
        if e["outcome"] == "unpriced" and TOKEN_TRANSFER_DETAILS not in before[key]
    )
    assert unpriced_bare >= 6  # the crafted ones stored before their attestation
    assert first["written"] == outcomes["enriched"] + unpriced_bare
    assert first["transfers"] == len(expected)

    after = _stored(workload)
    for key, want in expected.items():
        details = after[key].get(TOKEN_TRANSFER_DETAILS, {})
        if want["outcome"] == "no_asset_meta":
            assert not details, key
            continue
        if want["outcome"] == "already_enriched":
            assert details == before[key][TOKEN_TRANSFER_DETAILS], key  # left alone
            assert details["TokenPriceUSD"] == b"42"
            continue
        assert details["Amount"].decode() == want["Amount"], key
        assert details["Decimals"].decode() == want["Decimals"], key
        assert details["OriginSymbol"].decode() == want["OriginSymbol"], key
        if want["NotionalUSD"] is None:
            assert "NotionalUSD" not in details, key
            assert "TokenPriceUSD" not in details, key
        else:
            assert Decimal(details["NotionalUSD"].decode()) == want["NotionalUSD"], key
            assert Decimal(details["TokenPriceUSD"].decode()) == want["TokenPriceUSD"], key
        # Only TokenTransferDetails changed.
        assert {f: c for f, c in after[key].items() if f != TOKEN_TRANSFER_DETAILS} == {
            f: c for f, c in before[key].items() if f != TOKEN_TRANSFER_DETAILS
        }
    assert set(after) == set(before)
    # The volume rollups follow the new notional: one cell per transfer, holding its row's.
    with BigtableTables(workload.location) as tables:
        rollups = dict(
            item
            for _, cells in tables.scan_index("vol:chain:", "vol:chain;")
            for item in cells.items()
        )
    for key in expected:
        notional = after[key].get(TOKEN_TRANSFER_DETAILS, {}).get("NotionalUSD", b"")
        assert [v for q, v in rollups.items() if q.endswith(":" + key)] == [notional], key
    # The older attestation's symbol was replaced by the newer one's.
    assert any(e.get("OriginSymbol") == "WETH" for e in expected.values())
    assert not any(
        d.get(TOKEN_TRANSFER_DETAILS, {}).get("OriginSymbol") == b"OLDWETH" for d in after.values()
    )

    code, output = _run([*args, "--summary", str(tmp_path / "second.json")], capsys)
    assert code == 0, output
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["written"] == 0
    assert second["enriched"] == 0
    assert second["already_enriched"] == outcomes["enriched"] + outcomes["already_enriched"]
    assert second["unpriced"] == outcomes["unpriced"]
    assert second["no_asset_meta"] == outcomes["no_asset_meta"]
    assert _stored(workload) == after


def test_bad_prices_are_one_line_and_exit_2(spark, bigtable_table_name, tmp_path, capsys):
    populate_table = bigtable_table_name
    ensure_schema(locate(EventStoreSettings(bigtable=BigtableSettings(table=populate_table))))
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "date,coingecko_id,token_chain,token_address,price_usd\n"
        "2024-03-01,,2,0xab,1\n"
        "2024-03-01,weth,2,0xzz,1\n"  # a coingecko id does not excuse a bad address
    )
    code, output = _run(["--table", populate_table, "--prices", str(bad)], capsys)
    assert code == 2
    lines = output.strip().splitlines()
    assert lines[-1].startswith("error: --prices"), output
    assert "1 rows" in lines[-1], output

    ambiguous = tmp_path / "twice.csv"
    ambiguous.write_text("date,coingecko_id,price_usd\n2024-03-01,x,1\n2024-03-01,x,2\n")
    coin_ids = tmp_path / "ids.csv"
    coin_ids.write_text(f"coingecko_id,token_chain,token_address\nx,2,{'ab' * 20}\n")
    code, output = _run(
        ["--table", populate_table, "--prices", str(ambiguous), "--coin-ids", str(coin_ids)],
        capsys,
    )
    assert code == 2, output
    assert "different prices" in output, output

    code, output = _run(["--table", populate_table, "--prices", str(tmp_path / "none.csv")], capsys)
    assert code == 2
    assert "does not exist" in output

    code, output = _run(["--table", "no-such-table", "--prices", str(bad)], capsys)
    assert code == 2, output
    assert "does not exist" in output, output


def _priced(workload: Workload) -> int:
    """Rows whose TokenTransferDetails carry a NotionalUSD."""
    return sum(
        1
        for row in _stored(workload).values()
        if "NotionalUSD" in row.get(TOKEN_TRANSFER_DETAILS, {})
    )


@pytest.mark.slow
def test_a_killed_job_rerun_equals_a_clean_run(spark, bigtable_emulator, prices, tmp_path, capsys):
    """SIGKILL the driver while it writes details, run again: the table equals a clean run's
    on the same rows, cell for cell."""
    count = 600
    killed = populate_transfers(f"enrich-killed-{uuid.uuid4().hex[:8]}", count)
    clean = populate_transfers(f"enrich-clean-{uuid.uuid4().hex[:8]}", count)
    assert _stored(killed) == _stored(clean)
    assert _priced(killed) == 0
    common = ["--prices", str(prices[0])]
    log = tmp_path / "killed.log"
    # Small batches: the details reach the table a few rows at a time.
    env = {"BIGTABLE_EMULATOR_HOST": bigtable_emulator, "CHAINLOOM_WRITER__FLUSH_ROWS": "5"}
    argv = ["--master", "local[2]", *common, "--table", killed.location.table]
    with spark_job("enrich", argv, log, env) as driver:
        kill_when(driver, "enrich", log, lambda: _priced(killed) >= 10)
    partial = _priced(killed)
    assert 10 <= partial < count, "the job was not killed mid-write"

    summary = tmp_path / "rerun.json"
    code, output = _run([*common, "--table", killed.location.table, "--summary", str(summary)],
                        capsys)  # fmt: skip
    assert code == 0, output
    rerun = json.loads(summary.read_text())
    # Writes the emulator had received before the kill may land after they were counted.
    assert 0 < rerun["enriched"] <= count - partial
    assert rerun["enriched"] + rerun["already_enriched"] == count
    code, output = _run([*common, "--table", clean.location.table], capsys)
    assert code == 0, output
    assert _priced(killed) == count
    assert _stored(killed) == _stored(clean)
