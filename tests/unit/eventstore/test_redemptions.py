"""One relay-table entry to the redemption it tells (pure)."""

from __future__ import annotations

from chainloom.eventstore.redemptions import Redemption, from_relay
from chainloom.relayer.model import RelayRequest, Table

DIGEST = "0x" + "ab" * 32


def _request(*, submission_id: str | None = None, last_error: str | None = None) -> RelayRequest:
    return RelayRequest(
        digest=DIGEST,
        vaa=b"\x01",
        target_chain=4,
        emitter_chain=2,
        sequence=1,
        submission_id=submission_id,
        last_error=last_error,
    )


def test_each_table_tells_its_state() -> None:
    record = {"submission_id": "0xfeed", "completed_at": 1_650_000_000.5, "outcome": "confirmed"}
    assert from_relay(Table.COMPLETED, None, record) == Redemption(
        "completed", tx_hash="0xfeed", timestamp="2022-04-15T05:20:00Z", outcome="confirmed"
    )
    pending = _request(submission_id="0xbeef")
    assert from_relay(Table.PENDING_CONFIRMATION, pending, None) == Redemption(
        "pending", tx_hash="0xbeef"
    )
    failed = _request(last_error="reverted")
    assert from_relay(Table.FAILED, failed, None) == Redemption("failed", reason="reverted")
    assert from_relay(Table.INCOMING, _request(), None) == Redemption("queued")
    assert from_relay(Table.IN_WORK, _request(), None) == Redemption("queued")
    assert from_relay(None, None, None) is None


def test_an_already_redeemed_completion_has_no_transaction_of_ours() -> None:
    record = {"submission_id": None, "completed_at": "later", "outcome": "already_redeemed"}
    assert from_relay(Table.COMPLETED, None, record) == Redemption(
        "completed", outcome="already_redeemed"
    )
