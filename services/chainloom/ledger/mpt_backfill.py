"""Fill ``mp_token_holders`` for a store written before the ETL wrote it.

The rows the ETL writes for each ledger (:func:`chainloom.ledger.mpt.holder_rows`) can be
rebuilt from what the store already holds: the MPTokens of the range's first ledger (a walk of
its state) and of every later ledger's diff. Every MPToken that ever existed in the range is in
one of them, so afterwards ``mpt_holders`` answers older ledgers as if the ETL had written the
rows. Cost: one state walk plus one diff read per stored ledger; rows already there are written
again harmlessly, so a run that stops can simply be repeated.
"""

from __future__ import annotations

from collections.abc import Callable

from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.mpt import holder_rows
from chainloom.ledger.types import MPTHolderData

_PAGE = 2048
_WRITE_BATCH = 1000


def backfill_mpt_holders(
    backend: BackendInterface, progress: Callable[[int], None] | None = None
) -> int:
    """Write the holder rows of every MPToken in the stored range; how many distinct rows.

    ``progress`` is called with each ledger sequence read. The range is read once at the start;
    ledgers the ETL writes meanwhile carry their own rows.
    """
    stored = backend.hard_fetch_ledger_range()
    if stored is None:
        return 0
    rows: dict[MPTHolderData, None] = {}
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, stored.min_sequence, _PAGE)
        rows.update(dict.fromkeys(holder_rows(page.objects)))
        if page.cursor is None:
            break
        cursor = page.cursor
    if progress is not None:
        progress(stored.min_sequence)
    for sequence in range(stored.min_sequence + 1, stored.max_sequence + 1):
        rows.update(dict.fromkeys(holder_rows(backend.fetch_ledger_diff(sequence))))
        if progress is not None:
            progress(sequence)
    found = list(rows)
    for start in range(0, len(found), _WRITE_BATCH):
        backend.write_mpt_holders(found[start : start + _WRITE_BATCH])
    backend.flush_writes()
    return len(found)
