"""A RippleState seen from each of its two accounts (pure)."""

from __future__ import annotations

import pytest
from xrpl.core import binarycodec

from chainloom.ledger.xrpl.address import decode_account
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.lines import HIGH_NO_RIPPLE, LOW_FREEZE, line_view, negate

LOW = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"
HIGH = "rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe"


def _line(balance: str, flags: int) -> bytes:
    return bytes.fromhex(
        binarycodec.encode(
            {
                "LedgerEntryType": "RippleState",
                "Flags": flags,
                "Balance": {
                    "currency": "USD",
                    "issuer": "rrrrrrrrrrrrrrrrrrrrBZbvji",
                    "value": balance,
                },
                "LowLimit": {"currency": "USD", "issuer": LOW, "value": "100"},
                "HighLimit": {"currency": "USD", "issuer": HIGH, "value": "0"},
                "LowQualityIn": 7,
                "PreviousTxnID": "00" * 32,
                "PreviousTxnLgrSeq": 1,
                "LowNode": "0",
                "HighNode": "0",
            }
        )
    )


def test_each_side_sees_its_own_balance_limit_and_flags() -> None:
    blob = _line("-12.5", HIGH_NO_RIPPLE | LOW_FREEZE)
    low = line_view(blob, decode_account(LOW))
    high = line_view(blob, decode_account(HIGH))
    assert (low.balance, high.balance) == ("-12.5", "12.5")
    assert (low.limit, low.limit_peer, high.limit, high.limit_peer) == ("100", "0", "0", "100")
    assert (low.peer, high.peer) == (decode_account(HIGH), decode_account(LOW))
    assert (low.no_ripple, low.no_ripple_peer, high.no_ripple) == (False, True, True)
    assert (low.freeze, high.freeze_peer, high.freeze) == (True, True, False)
    assert (low.quality_in, high.quality_in) == (7, 0)
    assert low.currency_text == "USD"


def test_a_line_of_other_accounts_is_refused() -> None:
    with pytest.raises(XrplBinaryError):
        line_view(_line("1", 0), b"\x05" * 20)


@pytest.mark.parametrize(("text", "negated"), [("0", "0"), ("1.5", "-1.5"), ("-2", "2")])
def test_negate(text: str, negated: str) -> None:
    assert negate(text) == negated
