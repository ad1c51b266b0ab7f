"""``mpt_holders`` over real stores: an issuance and its MPTokens written through the backend,
listed from the API's newest-ledger cache a page at a time."""

from __future__ import annotations

import time
from typing import Any

from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.requests import GenericRequest

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.address import encode_account
from tests.integration.ledger.test_conformance import Store, store, write_ledger  # noqa: F401

SEQUENCE = 800
ISSUER = b"\x05" * 20
ISSUANCE = (42).to_bytes(4, "big") + ISSUER
OTHER = (43).to_bytes(4, "big") + ISSUER
HOLDERS = [bytes([0x10 + i]) * 20 for i in range(7)]


def _blob(fields: dict[str, Any]) -> bytes:
    common = {"Flags": 0, "OwnerNode": "0", "PreviousTxnID": "00" * 32, "PreviousTxnLgrSeq": 1}
    return bytes.fromhex(binarycodec.encode({**common, **fields}))


def _objects() -> dict[bytes, bytes]:
    objects = {
        keylets.mpt_issuance(ISSUANCE): _blob(
            {
                "LedgerEntryType": "MPTokenIssuance",
                "Issuer": encode_account(ISSUER),
                "Sequence": 42,
                "OutstandingAmount": "700",
            }
        ),
    }
    for number, holder in enumerate(HOLDERS):
        objects[keylets.mptoken(ISSUANCE, holder)] = _blob(
            {
                "LedgerEntryType": "MPToken",
                "Account": encode_account(holder),
                "MPTokenIssuanceID": ISSUANCE.hex().upper(),
                "MPTAmount": str(100 + number),
            }
        )
    objects[keylets.mptoken(OTHER, HOLDERS[0])] = _blob(
        {
            "LedgerEntryType": "MPToken",
            "Account": encode_account(HOLDERS[0]),
            "MPTokenIssuanceID": OTHER.hex().upper(),
            "MPTAmount": "1",
        }
    )
    return objects


def _call(client: JsonRpcClient, **params: Any) -> dict[str, Any]:
    return client.request(GenericRequest(method="mpt_holders", **params)).result


def test_mpt_holders_pages_list_every_holder_once(store: Store) -> None:  # noqa: F811
    assert write_ledger(store.open(), SuccessorTracker(), SEQUENCE, _objects(), initial=True)
    reader = store.open()
    reader.hard_fetch_ledger_range()
    server = ServerThread(reader)
    port = server.start()
    issuance = ISSUANCE.hex().upper()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        deadline = time.monotonic() + 60
        while (first := _call(client, mpt_issuance_id=issuance)).get("error") == "notSupported":
            assert time.monotonic() < deadline, "the cache never loaded"
            time.sleep(0.1)  # the cache loads in the background after the first call
        seen: list[dict[str, Any]] = []
        marker = None
        while True:
            page = _call(client, mpt_issuance_id=issuance, limit=3, marker=marker)
            assert len(page["mptokens"]) <= 3, page
            seen.extend(page["mptokens"])
            marker = page.get("marker")
            if marker is None:
                break
        forged = _call(client, mpt_issuance_id=issuance, marker="AB" * 32)
        unknown = _call(client, mpt_issuance_id=OTHER[:-1].hex() + "00")
        older = _call(client, mpt_issuance_id=issuance, ledger_index=SEQUENCE - 1)
    finally:
        server.stop()
    expected = {
        keylets.mptoken(ISSUANCE, holder).hex().upper(): (encode_account(holder), str(100 + n))
        for n, holder in enumerate(HOLDERS)
    }
    assert first["mpt_issuance_id"] == issuance
    assert len(first["mptokens"]) == len(HOLDERS)
    assert {h["mptoken_index"]: (h["account"], h["mpt_amount"]) for h in seen} == expected
    assert len(seen) == len(expected)
    assert forged["error"] == "invalidParams"
    assert unknown["error"] == "objectNotFound"
    assert older["error"] == "lgrNotFound"
