"""Deciding what one incoming VAA changes in its row: pure, so every rule is unit-testable.

The writer reads the current row (latest cell of each column), asks :func:`plan_message` what
to write, and executes the plan. The rules:

* A row whose stored digest differs from the incoming VAA's is a **conflict**: the new VAA is
  kept under ``QuorumState:Conflict:{digest}`` and nothing else in the row changes.
* Otherwise the plan holds only cells whose value differs from what is stored, so repeating a
  VAA writes nothing (**unchanged**), and a new signature subset adds only the new
  ``Signatures`` cells and one ``VAAState`` cell with the grown list (**updated**).
* ``QuorumState:SignedVAA`` is planned only when absent and the VAA itself has quorum; the
  writer applies it as a conditional mutation so two writers cannot both win.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from chainloom.eventstore import cells as cellmodel
from chainloom.eventstore import encoding as enc
from chainloom.eventstore import keys, schema
from chainloom.eventstore.cells import IndexEntry
from chainloom.eventstore.derived import derived_index_entries
from chainloom.eventstore.enrichment import AssetInfo, WrappedAsset
from chainloom.eventstore.schema import Q
from chainloom.wormhole import VAA, AssetMeta, Payload, TokenTransfer, TokenTransferWithPayload

RowSnapshot = dict[str, dict[str, bytes]]
"""family -> qualifier -> latest value, as read from the events table."""


class Outcome(enum.Enum):
    """What storing one input did to its row."""

    NEW = "new"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CONFLICTING = "conflicting"


@dataclass(frozen=True, slots=True)
class MessageInput:
    """A parsed, verified VAA ready to be planned."""

    vaa: VAA
    """The parsed VAA."""
    raw: bytes
    """Its exact bytes (stored as SignedVAA / Conflict)."""
    signers: Mapping[int, str]
    """Guardian index -> checksummed guardian address, for every signature it carries."""
    quorum_met: bool
    """Whether the VAA's own signatures reach its guardian set's quorum."""
    payload: Payload
    """The decoded payload."""
    initiating_tx_id: str | None = None
    """Source transaction id, when the publication was observed on the source chain."""
    sender: str | None = None
    """Sender in native form, when observed on the source chain."""


@dataclass(frozen=True, slots=True)
class EnrichmentContext:
    """What the enrichment may use beyond the VAA itself."""

    asset: AssetInfo | None = None
    """The attestation of the transfer's origin token, if any is stored."""
    wrapped: WrappedAsset | None = None
    """The token the transfer yields on its target chain, if registered."""
    price_usd: Decimal | None = None
    """USD per whole origin token at the VAA's time, if the price source knows it."""


@dataclass(frozen=True, slots=True)
class RowPlan:
    """What to write for one input."""

    row_key: str
    """The events row."""
    outcome: Outcome
    """How the row changes."""
    cells: tuple[cellmodel.Cell, ...]
    """Cells to write (all of them, including SignedVAA when ``conditional``)."""
    conditional: bool
    """Write ``cells`` only if ``QuorumState:SignedVAA`` is still absent."""
    index: tuple[IndexEntry, ...] = field(default=())
    """Index-table cells that go with ``cells`` (the writer stores them first)."""
    conflict_digest: str | None = None
    """The incoming VAA's digest when it conflicts with the stored one."""


def _stored(row: RowSnapshot, family: str, qualifier: str) -> bytes | None:
    return row.get(family, {}).get(qualifier)


def transfer_of(payload: Payload) -> TokenTransfer | TokenTransferWithPayload | None:
    if isinstance(payload, TokenTransfer | TokenTransferWithPayload):
        return payload
    return None


def _signature_cells(item: MessageInput, row: RowSnapshot) -> list[cellmodel.Cell]:
    """New ``Signatures`` cells, and a ``VAAState`` cell if the list grows."""
    vaa = item.vaa
    stored_signatures = row.get(schema.SIGNATURES)
    signatures = vaa.signatures
    new_signatures: dict[str, bytes] = {}
    for sig in signatures:
        address = item.signers[sig.guardian_index]
        if stored_signatures is None or stored_signatures.get(address) != enc.encode_hex(
            sig.signature
        ):
            new_signatures[address] = sig.signature
    planned = cellmodel.signature_cells(vaa.timestamp, new_signatures)
    incoming = {(s.guardian_index, s.signature) for s in signatures}
    stored_list_raw = _stored(
        row, schema.VAA_STATE, schema.signatures_state_qualifier(vaa.guardian_set_index)
    )
    stored_list = set(enc.decode_signature_list(stored_list_raw)) if stored_list_raw else set()
    merged = stored_list | incoming
    if len(merged) > len(stored_list):
        planned.append(
            cellmodel.signature_state_cell(vaa.timestamp, vaa.guardian_set_index, merged)
        )
    return planned


def plan_message(item: MessageInput, row: RowSnapshot, context: EnrichmentContext) -> RowPlan:
    """The cells one VAA adds to its row, given the row's current latest cells."""
    vaa = item.vaa
    row_key = vaa.row_key
    stored_digest = _stored(row, schema.MESSAGE_PUBLICATION, Q.DIGEST)
    digest_hex = vaa.digest.hex()
    if stored_digest is not None and stored_digest.decode() != digest_hex:
        conflict = cellmodel.conflict_cell(vaa, item.raw)
        # The first copy of a conflicting body is kept, like the first SignedVAA: copies with
        # other signature subsets would otherwise overwrite the cell (same timestamp) in
        # arrival order, and a rerun in another order would rewrite it.
        if _stored(row, conflict.family, conflict.qualifier) is not None:
            return RowPlan(row_key, Outcome.CONFLICTING, (), False, (), digest_hex)
        return RowPlan(row_key, Outcome.CONFLICTING, (conflict,), False, (), digest_hex)

    wanted = cellmodel.publication_cells(vaa, item.initiating_tx_id)
    wanted += cellmodel.payload_cells(vaa.timestamp, item.payload)
    transfer = transfer_of(item.payload)
    if transfer is not None and context.asset is not None:
        wanted += cellmodel.transfer_details_cells(
            vaa.timestamp, transfer, context.asset, context.price_usd
        )
    wanted += cellmodel.chain_details_cells(
        vaa, item.payload, asset=context.asset, wrapped=context.wrapped, sender=item.sender
    )
    wanted += _signature_cells(item, row)

    # A row never seen before needs no comparison: everything planned is new.
    to_write = (
        wanted if not row else [c for c in wanted if _stored(row, c.family, c.qualifier) != c.value]
    )
    conditional = False
    if item.quorum_met and _stored(row, schema.QUORUM_STATE, Q.SIGNED_VAA) is None:
        to_write.append(cellmodel.quorum_cell(vaa, item.raw))
        conditional = True

    is_new = stored_digest is None and _stored(row, schema.QUORUM_STATE, Q.SIGNED_VAA) is None
    if is_new:
        outcome = Outcome.NEW
    elif to_write:
        outcome = Outcome.UPDATED
    else:
        outcome = Outcome.UNCHANGED
    index = index_entries(item, to_write)
    if any(cell.family not in _SIGNATURE_FAMILIES for cell in to_write):
        # Only a body, payload, details or tx change can change the derived rows; a new
        # signature subset of a stored message rewrites none of them.
        index += derived_index_entries(row_key, _after(row, to_write))
    return RowPlan(row_key, outcome, tuple(to_write), conditional, tuple(index))


_SIGNATURE_FAMILIES = frozenset({schema.SIGNATURES, schema.VAA_STATE, schema.QUORUM_STATE})


def _after(row: RowSnapshot, written: list[cellmodel.Cell]) -> RowSnapshot:
    """The row's latest cells once ``written`` is stored (a copy; ``row`` is unchanged)."""
    merged = {family: dict(columns) for family, columns in row.items()}
    for cell in written:
        merged.setdefault(cell.family, {})[cell.qualifier] = cell.value
    return merged


def index_entries(item: MessageInput, written: list[cellmodel.Cell]) -> list[IndexEntry]:
    """Index cells that accompany the written events cells."""
    vaa = item.vaa
    row_key = vaa.row_key
    ts = cellmodel.vaa_time_micros(vaa.timestamp)
    written_columns = {(c.family, c.qualifier) for c in written if c.family != schema.SIGNATURES}
    entries: list[IndexEntry] = []
    if (schema.MESSAGE_PUBLICATION, Q.DIGEST) in written_columns:
        moment = time.gmtime(vaa.timestamp)
        entries.append(
            IndexEntry(
                keys.recent_index_key(vaa.emitter_chain, vaa.timestamp, row_key),
                "m",
                row_key.encode(),
                ts,
            )
        )
        entries.append(
            IndexEntry(
                keys.count_index_key(
                    time.strftime("%Y%m%d", moment), vaa.emitter_chain, moment.tm_hour
                ),
                row_key,
                b"",
                ts,
            )
        )
    if (
        schema.MESSAGE_PUBLICATION,
        Q.INITIATING_TX_ID,
    ) in written_columns and item.initiating_tx_id:
        entries.append(
            IndexEntry(
                keys.tx_index_key(item.initiating_tx_id), row_key, vaa.message_id.encode(), ts
            )
        )
    if isinstance(item.payload, AssetMeta) and (
        (schema.ASSET_META_PAYLOAD, Q.DECIMALS) in written_columns
    ):
        info = cellmodel.asset_info(vaa.timestamp, item.payload)
        entries.append(
            IndexEntry(
                keys.asset_index_key(info.token_chain, info.token_address),
                row_key,
                info.to_json(),
                ts,
            )
        )
    return entries


def apply_plan(row: RowSnapshot, plan: RowPlan) -> None:
    """Update an in-memory snapshot as if ``plan`` had been written (for later inputs of the
    same batch that hit the same row)."""
    for cell in plan.cells:
        row.setdefault(cell.family, {})[cell.qualifier] = cell.value
