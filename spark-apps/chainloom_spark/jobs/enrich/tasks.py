"""enrich's tasks: a scanned row becomes a transfer or attestation record; a partition of
candidates re-reads its rows and writes the ``TokenTransferDetails`` cells that differ, and the
transfer's volume rollup cells with its new notional (:mod:`chainloom.eventstore.rollups`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import BigtableTables, endpoint
from chainloom.eventstore.cells import Cell, IndexEntry, transfer_details_cells
from chainloom.eventstore.encoding import decode_int, decode_timestamp
from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.rollups import rollup_entries
from chainloom.eventstore.schema import Q
from chainloom.settings import BigtableSettings
from chainloom.wormhole.errors import PayloadParseError
from chainloom.wormhole.payloads import (
    AssetMeta,
    TokenTransfer,
    TokenTransferWithPayload,
    decode_token_bridge_payload,
)
from chainloom_spark.errors import SinkUnavailableError
from chainloom_spark.progress import ProgressCounters
from chainloom_spark.table_scan import (
    use_emulator,
)

if TYPE_CHECKING:
    import pyarrow as pa


SCAN_FAMILIES = (
    schema.MESSAGE_PUBLICATION,
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.ASSET_META_PAYLOAD,
    schema.TOKEN_TRANSFER_DETAILS,
)
"""The families the scan reads (the payload bytes, the timestamp, what is already enriched)."""

RECORD_DDL = (
    "kind STRING, row_key STRING, chain INT, timestamp LONG, day STRING, token_chain INT, "
    "token_address STRING, state STRING, decimals INT, symbol STRING, name STRING"
)
"""One scanned row: ``kind`` ``transfer`` (``state``: ``missing``, ``no_notional`` or
``enriched``) or ``asset`` (``decimals``, ``symbol``, ``name``)."""


# ----------------------------------------------------------------------------- the scan


def utc_day(timestamp: int) -> str:
    """``YYYY-MM-DD`` of a unix time, in UTC."""
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


def scan_record(row_key: str, row: RowSnapshot) -> tuple[Any, ...] | None:
    """The record (:data:`RECORD_DDL`) of a token transfer or attestation row; None for the
    rest. Payloads are decoded by the token bridge codec, as the writer stored them."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    stamp, payload = publication.get(Q.TIMESTAMP), publication.get(Q.PAYLOAD)
    chain = publication.get(Q.EMITTER_CHAIN)
    wanted = schema.TOKEN_TRANSFER_PAYLOAD in row or schema.ASSET_META_PAYLOAD in row
    if not wanted or stamp is None or payload is None or chain is None:
        return None
    try:
        decoded = decode_token_bridge_payload(payload)
    except PayloadParseError:
        return None
    timestamp = decode_timestamp(stamp)
    head = (row_key, decode_int(chain), timestamp, utc_day(timestamp), decoded.token_chain,
            decoded.token_address.hex())  # fmt: skip
    if isinstance(decoded, AssetMeta):
        return ("asset", *head, None, decoded.decimals, decoded.symbol, decoded.name)
    details = row.get(schema.TOKEN_TRANSFER_DETAILS, {})
    if Q.NOTIONAL_USD in details:
        state = "enriched"
    elif details:
        state = "no_notional"
    else:
        state = "missing"
    return ("transfer", *head, state, None, None, None)


# ----------------------------------------------------------------------------- the writes


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What every writing task needs (small: shipped with the task)."""

    location: BigtableSettings
    """The tables."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver."""
    batch_rows: int
    """Rows read and written per round trip (``writer.flush_rows``)."""
    max_attempts: int
    """Attempts per batch before the store counts as unavailable (``writer.max_attempts``)."""
    counters: ProgressCounters
    """The job's progress counters (rows written)."""


WRITE_FAMILIES = (
    schema.MESSAGE_PUBLICATION,
    schema.TOKEN_TRANSFER_PAYLOAD,
    schema.TOKEN_TRANSFER_DETAILS,
)
"""What a writing task re-reads of each row: the payload, the timestamp, the stored details."""


def details_to_write(row: RowSnapshot, candidate: Any) -> list[Cell] | None:
    """The ``TokenTransferDetails`` cells of ``candidate``'s row that differ from the stored
    ones; None when the row is no longer a token transfer (it cannot be enriched)."""
    publication = row.get(schema.MESSAGE_PUBLICATION, {})
    stamp, payload = publication.get(Q.TIMESTAMP), publication.get(Q.PAYLOAD)
    if stamp is None or payload is None:
        return None
    try:
        transfer = decode_token_bridge_payload(payload)
    except PayloadParseError:
        return None
    if not isinstance(transfer, TokenTransfer | TokenTransferWithPayload):
        return None
    asset = AssetInfo(
        token_chain=candidate.token_chain,
        token_address=candidate.token_address,
        decimals=candidate.decimals,
        symbol=candidate.symbol,
        name=candidate.name,
        timestamp=candidate.asset_timestamp,
    )
    price = Decimal(candidate.price) if candidate.price is not None else None
    cells = transfer_details_cells(decode_timestamp(stamp), transfer, asset, price)
    stored = row.get(schema.TOKEN_TRANSFER_DETAILS, {})
    return [cell for cell in cells if stored.get(cell.qualifier) != cell.value]


def rollups_after(row: RowSnapshot, row_key: str, cells: list[Cell]) -> list[IndexEntry]:
    """The volume rollup cells of a row once its new ``TokenTransferDetails`` are written (a
    new price changes the transfer's notional in them)."""
    after = {family: dict(columns) for family, columns in row.items()}
    for cell in cells:
        after.setdefault(cell.family, {})[cell.qualifier] = cell.value
    return rollup_entries(row_key, after)


def _write(
    tables: BigtableTables,
    entries: Sequence[tuple[str, Sequence[Cell] | Sequence[IndexEntry]]],
    attempts: int,
    table: Any = None,
) -> None:
    """Write ``entries`` with one MutateRows call (to the events table unless ``table`` is
    given), retrying the rows that failed."""
    pending = list(entries)
    for attempt in range(attempts):
        failed = tables.bulk_write(tables.events if table is None else table, pending)
        if not failed:
            return
        pending = [pending[i] for i in failed]
        time.sleep(min(0.2 * 2**attempt, 5.0))
    raise StoreUnavailableError(
        endpoint(tables.settings), f"{len(pending)} rows still failing after {attempts} attempts"
    )


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def write_partition(context: WriteContext, rows: Iterable[Any]) -> Iterator[tuple[int, str, int]]:
    """Enrich the candidates of one partition; yield (chain, counter, count) tallies."""
    use_emulator(context.emulator_host)
    tally: dict[tuple[int, str], int] = {}

    def count(chain: int, name: str) -> None:
        tally[(chain, name)] = tally.get((chain, name), 0) + 1

    try:
        with BigtableTables(context.location) as tables:
            for batch in _batches(rows, context.batch_rows):
                stored = tables.read_event_rows([r.row_key for r in batch], WRITE_FAMILIES)
                entries: list[tuple[str, list[Cell]]] = []
                rollups: dict[str, list[IndexEntry]] = {}
                for candidate in batch:
                    row = stored.get(candidate.row_key, {})
                    cells = details_to_write(row, candidate)
                    if cells is None:
                        continue
                    priced = candidate.price is not None
                    if cells:
                        entries.append((candidate.row_key, cells))
                        for entry in rollups_after(row, candidate.row_key, cells):
                            rollups.setdefault(entry.row_key, []).append(entry)
                        count(candidate.chain, "written")
                    if not priced:
                        count(candidate.chain, "unpriced")
                    elif cells:
                        count(candidate.chain, "enriched")
                    else:  # enriched by someone else since the scan
                        count(candidate.chain, "already_enriched")
                if rollups:  # first, as the event writer writes its index rows
                    _write(tables, list(rollups.items()), context.max_attempts, tables.index)
                if entries:
                    _write(tables, entries, context.max_attempts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    context.counters.add(written=sum(v for (_, name), v in tally.items() if name == "written"))
    for (chain, name), value in tally.items():
        yield chain, name, value


TALLY_DDL = "chain INT, name STRING, value LONG"
"""A write task's output row: a counter of a chain and how much the task added to it."""


def write_batches(
    context: WriteContext, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """:func:`write_partition` over candidates arriving in Arrow record batches; the tallies
    as one batch (:data:`TALLY_DDL`)."""
    import pyarrow as pa
    from pyspark.sql import Row

    candidates = (Row(**row) for batch in batches for row in batch.to_pylist())
    tallies = [
        {"chain": chain, "name": name, "value": value}
        for chain, name, value in write_partition(context, candidates)
    ]
    if tallies:
        schema = pa.schema([("chain", pa.int32()), ("name", pa.string()), ("value", pa.int64())])
        yield pa.RecordBatch.from_pylist(tallies, schema=schema)
