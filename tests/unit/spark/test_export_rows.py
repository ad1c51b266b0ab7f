"""export without Spark: a stored row becomes a dataset row; every column is documented."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

from chainloom.eventstore import schema
from chainloom.eventstore.encoding import encode_int, encode_timestamp
from chainloom_spark.jobs import export

EMITTER = "ee" * 32
MIDNIGHT = 1_709_337_600  # 2024-03-02T00:00:00Z
DOCS = Path(__file__).resolve().parents[3] / "docs" / "spark.md"


def test_a_transfer_row_becomes_one_dataset_row():
    row = {
        schema.MESSAGE_PUBLICATION: {
            "Timestamp": encode_timestamp(MIDNIGHT - 1),
            "Payload": b"\x01...",
            "EmitterChain": encode_int(5),
            "Digest": b"ab" * 32,
        },
        schema.TOKEN_TRANSFER_PAYLOAD: {
            "PayloadId": b"1",
            "Amount": b"123456789",
            "OriginChain": b"2",
            "OriginAddress": b"cd" * 32,
            "TargetChain": b"4",
        },
        schema.TOKEN_TRANSFER_DETAILS: {"NotionalUSD": b"3704.320954", "OriginSymbol": b"WETH"},
        schema.SIGNATURES: {"0xA": b"00", "0xB": b"00"},
        schema.QUORUM_STATE: {"SignedVAA": b"vaa", "Conflict:ff": b"other"},
    }
    exported = export.event_row(f"5:{EMITTER}:0000000000000007", row)
    assert exported is not None
    values = dict(zip((c for c, _, _ in export.EVENT_COLUMNS), exported, strict=True))
    assert values["message_id"] == f"5/{EMITTER}/7"
    assert values["emitter_chain"] == 5
    assert values["day"] == dt.date(2024, 3, 1)
    assert values["timestamp"] == dt.datetime(2024, 3, 1, 23, 59, 59, tzinfo=dt.UTC)
    assert values["payload_kind"] == "token_transfer"
    assert (values["amount"], values["token_chain"], values["target_chain"]) == ("123456789", 2, 4)
    assert values["token_address"] == "cd" * 32
    assert values["digest"] == "ab" * 32
    assert values["notional_usd"] == Decimal("3704.320954")
    assert values["symbol"] == "WETH"
    assert (values["signatures"], values["conflicts"], values["signed_vaa"]) == (2, 1, b"vaa")


def test_a_row_without_publication_is_skipped():
    assert export.event_row(f"5:{EMITTER}:0000000000000007", {}) is None


def test_every_column_is_documented_with_its_type():
    text = DOCS.read_text()
    for name, kind, _ in (*export.EVENT_COLUMNS, *export.DAILY_COLUMNS):
        assert f"| `{name}` | {kind} |" in text, name
