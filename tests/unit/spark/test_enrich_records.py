"""enrich without Spark: scanned rows become records; the cells written are the event store's."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from chainloom.eventstore import schema
from chainloom.eventstore.encoding import encode_int, encode_timestamp
from chainloom.eventstore.planner import RowSnapshot
from chainloom_spark.errors import JobArgumentError
from chainloom_spark.jobs import enrich

TOKEN = bytes(12) + bytes.fromhex("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")
MIDNIGHT = 1_709_337_600  # 2024-03-02T00:00:00Z


def _transfer_payload(amount: int) -> bytes:
    return (b"\x01" + amount.to_bytes(32, "big") + TOKEN + (2).to_bytes(2, "big")
            + bytes(32) + (4).to_bytes(2, "big") + bytes(32))  # fmt: skip


def _row(payload: bytes, timestamp: int, **families: dict[str, bytes]) -> RowSnapshot:
    row: RowSnapshot = {
        schema.MESSAGE_PUBLICATION: {
            "Timestamp": encode_timestamp(timestamp),
            "Payload": payload,
            "EmitterChain": encode_int(5),
        },
        schema.TOKEN_TRANSFER_PAYLOAD: {"PayloadId": b"1"},
    }
    row.update(families)
    return row


def test_a_transfer_record_names_its_token_and_utc_day():
    record = enrich.scan_record("5:ee:1", _row(_transfer_payload(10**8), MIDNIGHT - 1))
    assert record == ("transfer", "5:ee:1", 5, MIDNIGHT - 1, "2024-03-01", 2, TOKEN.hex(),
                      "missing", None, None, None)  # fmt: skip
    details = {schema.TOKEN_TRANSFER_DETAILS: {"Amount": b"1.00000000"}}
    partly = enrich.scan_record("k", _row(_transfer_payload(1), MIDNIGHT, **details))
    assert partly is not None
    assert partly[7] == "no_notional"
    details[schema.TOKEN_TRANSFER_DETAILS]["NotionalUSD"] = b"1.0"
    done = enrich.scan_record("k", _row(_transfer_payload(1), MIDNIGHT, **details))
    assert done is not None
    assert done[7] == "enriched"


def test_other_rows_are_not_records():
    row = _row(b"\x7fhello", MIDNIGHT)
    del row[schema.TOKEN_TRANSFER_PAYLOAD]
    assert enrich.scan_record("k", row) is None


def _candidate(price: str | None) -> SimpleNamespace:
    return SimpleNamespace(token_chain=2, token_address=TOKEN.hex(), decimals=18,
                           symbol="WETH", name="Wrapped Ether", asset_timestamp=0,
                           price=price)  # fmt: skip


def test_details_use_the_bridge_s_8_decimals_and_only_changed_cells_are_written():
    row = _row(_transfer_payload(123_456_789), MIDNIGHT)
    cells = enrich.details_to_write(row, _candidate("3000.5"))
    assert cells is not None
    values = {cell.qualifier: cell.value for cell in cells}
    assert values["Amount"] == b"1.23456789"
    assert Decimal(values["NotionalUSD"].decode()) == Decimal("3704.320954")
    assert {cell.family for cell in cells} == {schema.TOKEN_TRANSFER_DETAILS}
    row[schema.TOKEN_TRANSFER_DETAILS] = values
    assert enrich.details_to_write(row, _candidate("3000.5")) == []
    unpriced = enrich.details_to_write(_row(_transfer_payload(5), MIDNIGHT), _candidate(None))
    assert unpriced is not None
    assert "NotionalUSD" not in {cell.qualifier for cell in unpriced}


def test_flags_are_checked_before_spark(tmp_path):
    with pytest.raises(JobArgumentError):
        enrich.resolve(["--table", "t"])
    assert enrich.dataset_format("prices.parquet", "auto") == "parquet"
    assert enrich.dataset_format(str(tmp_path / "p.csv"), "auto") == "csv"
