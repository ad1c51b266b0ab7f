"""MPToken holder rows (Clio's ``mp_token_holders``) derived from ledger objects.

``mpt_holders`` must answer for any stored ledger, and an issuance's MPTokens cannot be found
from the objects table alone (their keys are hashes). So, as Clio's ETL does, every MPToken the
ETL writes adds an ``(issuance, holder)`` row that is never deleted; a read lists the rows and
keeps the holders whose MPToken exists at the requested ledger. Pure: blobs in, rows out.
"""

from __future__ import annotations

from collections.abc import Iterable

from chainloom.ledger.types import LedgerObject, MPTHolderData
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf

_MPTOKEN_PREFIX = binary.field_header(sf.LEDGER_ENTRY_TYPE) + sf.LEDGER_ENTRY_CODES[
    "MPToken"
].to_bytes(2, "big")
_ISSUANCE_ID = sf.field_key("MPTokenIssuanceID")
_ACCOUNT = sf.field_key("Account")


def mptoken_holder(blob: bytes) -> MPTHolderData | None:
    """The issuance and holder of an MPToken blob (``None`` for any other object)."""
    if not blob.startswith(_MPTOKEN_PREFIX):
        return None
    node = binary.decode(blob)
    issuance = node.get(_ISSUANCE_ID)
    account = node.get(_ACCOUNT)
    if not isinstance(issuance, bytes) or not isinstance(account, bytes):
        return None
    return MPTHolderData(issuance, account)


def holder_rows(objects: Iterable[LedgerObject]) -> list[MPTHolderData]:
    """The holder rows of a ledger's written objects: one per MPToken present in it (created
    or modified; writing a row again is harmless), deleted objects skipped."""
    rows: dict[MPTHolderData, None] = {}
    for obj in objects:
        if obj.blob:
            found = mptoken_holder(obj.blob)
            if found is not None:
                rows[found] = None
    return list(rows)
