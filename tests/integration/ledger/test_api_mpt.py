"""``mpt_holders`` over real stores: an issuance and its MPTokens written through the backend
(with the ``mp_token_holders`` rows the ETL writes), listed a page at a time at the newest
ledger and at older ones, where MPTokens created or destroyed since must (not) appear."""

from __future__ import annotations

from typing import Any

from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.requests import GenericRequest

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.mpt import mptoken_holder
from chainloom.ledger.mpt_backfill import backfill_mpt_holders
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.address import decode_account, encode_account
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
        first = _call(client, mpt_issuance_id=issuance)
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


def _walk(client: JsonRpcClient, issuance: str, sequence: int, limit: int) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    marker = None
    while True:
        page = _call(
            client, mpt_issuance_id=issuance, ledger_index=sequence, limit=limit, marker=marker
        )
        assert page["ledger_index"] == sequence, page
        assert len(page["mptokens"]) <= limit, page
        seen.extend(page["mptokens"])
        marker = page.get("marker")
        if marker is None:
            return seen


def _present(backend: BackendInterface, sequence: int) -> dict[str, tuple[str, str]]:
    """The issuance's MPTokens in the stored state at ``sequence``, by a walk of every object."""
    found = {}
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, 256)
        for obj in page.objects:
            holder = mptoken_holder(obj.blob)
            if holder is not None and holder.mpt_id == ISSUANCE:
                decoded = binarycodec.decode(obj.blob.hex())
                amount = str(int(decoded["MPTAmount"], 16))  # UInt64 decodes as hex
                found[obj.key.hex().upper()] = (decoded["Account"], amount)
        if page.cursor is None:
            return found
        cursor = page.cursor


LATER = [bytes([0x30 + i]) * 20 for i in range(4)]


def _write_history(writer: BackendInterface, *, holders: bool) -> None:
    """Three ledgers: seven holders; three destroyed and two created; two more destroyed, two
    more created and one destroyed before created again."""
    tracker = SuccessorTracker()
    assert write_ledger(writer, tracker, SEQUENCE, _objects(), initial=True, holders=holders)
    changes: dict[bytes, bytes] = {keylets.mptoken(ISSUANCE, h): b"" for h in HOLDERS[1:4]}
    for number, holder in enumerate(LATER[:2]):
        changes[keylets.mptoken(ISSUANCE, holder)] = _mptoken(holder, 500 + number)
    assert write_ledger(writer, tracker, SEQUENCE + 1, changes, holders=holders)
    changes = {keylets.mptoken(ISSUANCE, h): b"" for h in (HOLDERS[0], LATER[0])}
    changes[keylets.mptoken(ISSUANCE, HOLDERS[2])] = _mptoken(HOLDERS[2], 900)
    for number, holder in enumerate(LATER[2:]):
        changes[keylets.mptoken(ISSUANCE, holder)] = _mptoken(holder, 600 + number)
    assert write_ledger(writer, tracker, SEQUENCE + 2, changes, holders=holders)


def test_backfill_gives_a_store_without_holder_rows_the_etl_rows(store: Store) -> None:  # noqa: F811
    _write_history(store.open(), holders=False)
    backend = store.open()
    backend.hard_fetch_ledger_range()
    assert backend.fetch_mpt_holders(ISSUANCE, SEQUENCE, 50).mptokens == ()
    assert backfill_mpt_holders(backend) == 7 + 4 + 1  # LATER and OTHER's one holder
    for sequence in range(SEQUENCE, SEQUENCE + 3):
        page = backend.fetch_mpt_holders(ISSUANCE, sequence, 50)
        assert page.cursor is None
        listed = {obj.key.hex().upper() for obj in page.mptokens}
        assert listed == set(_present(backend, sequence))


def test_mpt_holders_at_older_ledgers_list_what_they_held(store: Store) -> None:  # noqa: F811
    _write_history(store.open(), holders=True)
    later = LATER
    reader = store.open()
    reader.hard_fetch_ledger_range()
    server = ServerThread(reader)
    port = server.start()
    issuance = ISSUANCE.hex().upper()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        answers = {
            (sequence, limit): _walk(client, issuance, sequence, limit)
            for sequence in range(SEQUENCE, SEQUENCE + 3)
            for limit in (1, 2, 50)
        }
        absent_marker = _call(
            client,
            mpt_issuance_id=issuance,
            ledger_index=SEQUENCE,
            marker=keylets.mptoken(ISSUANCE, later[2]).hex().upper(),
        )
    finally:
        server.stop()
    for (sequence, _), seen in answers.items():
        expected = _present(reader, sequence)
        assert {h["mptoken_index"]: (h["account"], h["mpt_amount"]) for h in seen} == expected
        assert len(seen) == len(expected)
        holders = [decode_account(h["account"]) for h in seen]
        assert holders == sorted(holders)
    assert len(answers[(SEQUENCE, 50)]) == 7
    assert len(answers[(SEQUENCE + 1, 50)]) == 6
    assert len(answers[(SEQUENCE + 2, 50)]) == 7
    assert absent_marker["error"] == "invalidParams"


def _mptoken(holder: bytes, amount: int) -> bytes:
    return _blob(
        {
            "LedgerEntryType": "MPToken",
            "Account": encode_account(holder),
            "MPTokenIssuanceID": ISSUANCE.hex().upper(),
            "MPTAmount": str(amount),
        }
    )
