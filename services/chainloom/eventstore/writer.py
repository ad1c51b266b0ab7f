"""The event writer: verify, plan against the stored rows, and write in large batches.

Why it is shaped this way:

* **Refuse before queueing.** Inputs are parsed and verified when submitted; a malformed VAA
  raises the core library's :class:`~chainloom.wormhole.errors.VAAParseError` and a VAA whose
  signatures do not match its guardian set raises :class:`UnverifiedVAAError`, so nothing
  stored is ever touched by bad input. :meth:`EventWriter.put_many` counts them and goes on.
* **One read per batch, then only differences.** A flush reads the latest cells of every row
  in the batch with one ReadRows call, plans each input (:mod:`chainloom.eventstore.planner`)
  and writes only cells that change, so the spy's many repeats cost a read and no write.
* **Big batches.** Unconditional cells go out through ``bulk_mutate_rows`` with
  ``flush_rows`` rows per request (default 500 rows, about 8,000 mutations for ~16-cell rows,
  against the client batcher's default of 1,000 mutations = ~62 rows; the server limit is
  100,000 mutations).
* **Quorum is conditional.** A row that gets its first ``QuorumState:SignedVAA`` is written by
  ``check_and_mutate_row`` (predicate: SignedVAA exists; false branch: the row's cells), issued
  concurrently for the batch (``conditional_workers`` calls in flight). A writer that loses the
  race re-plans the input, which then becomes an update or a conflict.
* **Merges are not conditional.** Two writers merging new signatures into the same stored row
  at the same moment each write a ``VAAState`` list grown from what they read, so the last
  one wins (the ``Signatures`` cells keep both); the next put of either copy repairs it.
  vaa-ingest sends every copy of a message to one partition, so one job never races itself.
* **Outages.** Transient Bigtable errors are retried with exponential back-off within one
  deadline per batch (``WriterConfig.deadline``, by default ``bigtable.operation_timeout``: every
  call gets what is left of it, so a flush never hangs much longer). Inputs leave the queue
  only once written; when the deadline or the attempts run out :class:`StoreUnavailableError`
  names the endpoint and cause and says how many are still queued (a later :meth:`flush`
  retries them). Writing is idempotent, so a new process re-putting the same inputs finds
  the stored ones unchanged.
* **Index rows first.** A batch's index cells are written before its events rows. Index
  entries are planned from the cells an input adds, so a row stored just before a crash would
  never get them on the rerun (it is found complete); written first they are simply rewritten.
  Readers skip an index entry whose row is not there yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any

from opentelemetry import metrics, trace

from chainloom import telemetry
from chainloom.backoff import Backoff
from chainloom.eventstore import keys, schema
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.bigtable import endpoint as bigtable_endpoint
from chainloom.eventstore.cells import IndexEntry, asset_info
from chainloom.eventstore.encoding import decode_decimal
from chainloom.eventstore.enrichment import AssetInfo, WrappedAsset
from chainloom.eventstore.errors import (
    PriceSourceError,
    StoreUnavailableError,
    UnverifiedVAAError,
)
from chainloom.eventstore.feed import FeedRecorder, VaaFeed
from chainloom.eventstore.planner import (
    EnrichmentContext,
    MessageInput,
    Outcome,
    RowPlan,
    RowSnapshot,
    apply_plan,
    plan_message,
    transfer_of,
)
from chainloom.eventstore.prices import PriceSource
from chainloom.eventstore.schema import Q
from chainloom.wormhole import (
    VAA,
    AssetMeta,
    GuardianSets,
    KnownEmitters,
    SignatureCache,
    decode_payload,
    parse_vaa,
    verify_vaa,
)
from chainloom.wormhole.errors import WormholeError

DEFAULT_FLUSH_ROWS = 500

DEFAULT_FLUSH_BACKOFF = Backoff(initial=0.2, maximum=5.0)
"""Waits between attempts of one batch: 0.2 s doubling up to 5 s, no jitter."""


@dataclass(frozen=True, slots=True)
class WriterConfig:
    """Batching and retry settings."""

    flush_rows: int = DEFAULT_FLUSH_ROWS
    """Inputs per flush (one ReadRows + one MutateRows per flush)."""
    max_attempts: int = 5
    """Attempts per batch before :class:`StoreUnavailableError`."""
    deadline: float | None = None
    """Seconds a batch may spend on attempts and back-off before :class:`StoreUnavailableError`
    (each call gets what is left); None uses the tables' ``bigtable.operation_timeout``."""
    backoff: Backoff = DEFAULT_FLUSH_BACKOFF
    """The waits between attempts of one batch."""
    conditional_workers: int = 64
    """Check-and-mutate calls in flight at once for rows reaching quorum (one data-client call
    per pool thread)."""
    conditional_quorum: bool = True
    """Write a row's first SignedVAA with check-and-mutate (safe with any number of writers).

    False writes it in the batch's MutateRows after the batch's read found it absent: no
    unary call per new row, and safe only when each message id has a single writer
    (writers partitioned by row key, as the bench and a keyed stream do).
    """

    feed_rows: bool = True
    """After each batch, write a ``feed:`` index row per newly signed VAA (the event stream's
    source, :mod:`chainloom.eventstore.feed`) and publish it on the writer's feed."""

    def __post_init__(self) -> None:
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(f"WriterConfig.deadline must be positive seconds, not {self.deadline}")


@dataclass(slots=True)
class PutSummary:
    """What a series of puts did."""

    new: int = 0
    """Rows created."""
    updated: int = 0
    """Rows that gained cells (signatures, quorum, enrichment)."""
    unchanged: int = 0
    """Inputs that added nothing (repeats)."""
    conflicting: int = 0
    """Inputs whose digest differs from the stored VAA of the same message id."""
    refused: int = 0
    """Malformed or unverifiable inputs (nothing written)."""
    refusals: list[tuple[str, str]] = field(default_factory=list)
    """(input label, error) for each refusal."""
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    """(message id, conflicting digest) for each conflict."""
    enrichment_errors: list[str] = field(default_factory=list)
    """Price-source failures (the row is stored without NotionalUSD)."""

    def count(self, plan: RowPlan, message_id: str) -> None:
        if plan.outcome is Outcome.NEW:
            self.new += 1
        elif plan.outcome is Outcome.UPDATED:
            self.updated += 1
        elif plan.outcome is Outcome.UNCHANGED:
            self.unchanged += 1
        else:
            self.conflicting += 1
            self.conflicts.append((message_id, "0x" + (plan.conflict_digest or "")))

    def as_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "conflicting": self.conflicting,
            "refused": self.refused,
            "refusals": [{"input": i, "error": e} for i, e in self.refusals],
            "conflicts": [{"message_id": m, "digest": d} for m, d in self.conflicts],
            "enrichment_errors": list(self.enrichment_errors),
        }


class EventWriter:
    """Stores VAAs in the events table and keeps the index table in step."""

    def __init__(
        self,
        tables: BigtableTables,
        guardian_sets: GuardianSets,
        *,
        emitters: KnownEmitters | None = None,
        prices: PriceSource | None = None,
        config: WriterConfig | None = None,
        signature_cache: SignatureCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        feed: VaaFeed | None = None,
    ) -> None:
        self.tables = tables
        self.guardian_sets = guardian_sets
        self.emitters = emitters
        self.prices = prices
        self.config = config or WriterConfig()
        self.signature_cache = signature_cache
        self.summary = PutSummary()
        """Running totals since the writer was created."""
        self._queue: list[MessageInput] = []
        self._sleep = sleep
        self._clock = clock
        self._assets: dict[tuple[int, str], AssetInfo] = {}
        self._checksummed_sets: dict[int, tuple[str, ...]] = {}
        self._wrapped: dict[str, WrappedAsset] = {}
        self.feed = FeedRecorder(tables, feed) if self.config.feed_rows else None
        """Adds each batch's newly signed VAAs to the event feed (:mod:`.feed`)."""

    # --- intake ----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Inputs queued and not yet written."""
        return len(self._queue)

    def prepare(
        self,
        data: bytes | VAA,
        *,
        initiating_tx_id: str | None = None,
        sender: str | None = None,
    ) -> MessageInput:
        """Parse and verify one VAA.

        Raises the core library's parse errors for malformed bytes and
        :class:`UnverifiedVAAError` when a signature does not match its guardian slot (or the
        guardian set is unknown). Fewer signatures than quorum are accepted: they are the
        "signatures seen" phase, stored without ``QuorumState:SignedVAA``.
        """
        if isinstance(data, VAA):
            vaa, raw = data, data.to_bytes()
        else:
            raw = bytes(data)
            vaa = parse_vaa(raw)
        if not vaa.signatures:
            signers: dict[int, str] = {}
            quorum_met = False
        else:
            verification = verify_vaa(vaa, self.guardian_sets, cache=self.signature_cache)
            expected = self._checksummed(vaa)
            matched = len(verification.signers) == len(vaa.signatures) and all(
                signer == expected[sig.guardian_index]
                for signer, sig in zip(verification.signers, vaa.signatures, strict=True)
            )
            if not matched:
                raise UnverifiedVAAError(
                    vaa.message_id, verification.reason or "signatures do not match"
                )
            signers = {
                sig.guardian_index: signer
                for sig, signer in zip(vaa.signatures, verification.signers, strict=True)
            }
            quorum_met = verification.quorum_met
        return MessageInput(
            vaa=vaa,
            raw=raw,
            signers=signers,
            quorum_met=quorum_met,
            payload=decode_payload(vaa, emitters=self.emitters),
            initiating_tx_id=keys.normalize_tx_id(initiating_tx_id) if initiating_tx_id else None,
            sender=sender,
        )

    def _checksummed(self, vaa: VAA) -> tuple[str, ...]:
        """The EIP-55 addresses of the VAA's guardian set (cached: computing them costs 19
        keccak hashes)."""
        index = vaa.guardian_set_index
        cached = self._checksummed_sets.get(index)
        if cached is None:
            try:
                cached = self.guardian_sets.get(index).checksummed
            except WormholeError as error:
                raise UnverifiedVAAError(vaa.message_id, str(error)) from None
            self._checksummed_sets[index] = cached
        return cached

    def submit(
        self,
        data: bytes | VAA,
        *,
        initiating_tx_id: str | None = None,
        sender: str | None = None,
    ) -> None:
        """Verify and queue one VAA; flushes when the queue reaches ``flush_rows``."""
        self._queue.append(self.prepare(data, initiating_tx_id=initiating_tx_id, sender=sender))
        if len(self._queue) >= self.config.flush_rows:
            self.flush()

    def submit_prepared(self, item: MessageInput) -> list[RowPlan]:
        """Queue an input already verified by :meth:`prepare` (e.g. in another stage).

        Returns the plans written if the queue reached ``flush_rows`` and was flushed.
        """
        self._queue.append(item)
        if len(self._queue) >= self.config.flush_rows:
            return self.flush()
        return []

    def put(
        self,
        data: bytes | VAA,
        *,
        initiating_tx_id: str | None = None,
        sender: str | None = None,
    ) -> Outcome:
        """Store one VAA now and say what it did to its row."""
        self.flush()
        self._queue.append(self.prepare(data, initiating_tx_id=initiating_tx_id, sender=sender))
        plans = self.flush()
        return plans[-1].outcome

    def put_many(
        self, inputs: Iterable[bytes | tuple[str, bytes]], *, flush: bool = True
    ) -> PutSummary:
        """Store many VAAs; bad ones are counted in the summary, not raised.

        ``inputs`` are raw VAAs or (label, raw) pairs; the label names an input in refusals.
        Returns the summary of this call only.
        """
        before = _copy(self.summary)
        for position, item in enumerate(inputs):
            label, raw = item if isinstance(item, tuple) else (f"input {position + 1}", item)
            try:
                self.submit(raw)
            except (WormholeError, UnverifiedVAAError) as error:
                self.summary.refused += 1
                self.summary.refusals.append((label, str(error)))
        if flush:
            self.flush()
        return _difference(self.summary, before)

    # --- lifecycle helpers -----------------------------------------------------------------

    def observe_publication(
        self, vaa: VAA, initiating_tx_id: str, sender: str | None = None
    ) -> Outcome:
        """The message was observed on its source chain (a body, no signatures needed)."""
        return self.put(vaa, initiating_tx_id=initiating_tx_id, sender=sender)

    def register_wrapped_asset(
        self, token_chain: int, token_address: str, target_chain: int, wrapped: WrappedAsset
    ) -> None:
        """Record which token a transfer of (token_chain, token_address) yields on a chain."""
        key = keys.wrapped_index_key(
            token_chain, keys.normalize_emitter(token_address), target_chain
        )
        self._with_retries(
            lambda timeout: self.tables.bulk_write(
                self.tables.index,
                [(key, [IndexEntry(key, "a", wrapped.to_json(), 0)])],
                timeout=timeout,
            ),
            lambda: 0,
        )

    # --- flushing --------------------------------------------------------------------------

    def flush(self) -> list[RowPlan]:
        """Write everything queued; returns the plans executed, in input order."""
        done: list[RowPlan] = []
        rounds = 0
        while self._queue:
            rounds += 1
            batch = self._queue[: self.config.flush_rows]
            with telemetry.start_span(_tracer, "eventstore.write_batch") as span:
                written, retry = self._with_retries(
                    partial(self._write_batch, batch), self._pending_count
                )
                span.set_attributes(
                    {"chainloom.rows": len(batch), "chainloom.written": len(written),
                     "chainloom.retried": len(retry)}
                )  # fmt: skip
            retry_ids = {id(item) for item in retry}
            self._queue = [item for item in batch if id(item) in retry_ids] + self._queue[
                len(batch) :
            ]
            if self.feed is not None:
                self.feed(written)
            for item, plan in written:
                self.summary.count(plan, item.vaa.message_id)
                _rows.add(1, {"chainloom.outcome": plan.outcome.value})
                done.append(plan)
            if rounds > 1000:  # pragma: no cover - a livelock guard, never expected
                raise RuntimeError("event writer made no progress")
        return done

    def _pending_count(self) -> int:
        return len(self._queue)

    def _with_retries(self, operation: Callable[[float], Any], pending: Callable[[], int]) -> Any:
        """Run ``operation(seconds)`` until it succeeds, the attempts run out or the deadline
        passes (a back-off that would end past it is not slept). Each attempt gets what is left
        of the deadline, at most ``bigtable.operation_timeout``."""
        backoff = self.config.backoff
        deadline = self.config.deadline
        if deadline is None:
            deadline = self.tables.settings.operation_timeout
        started = self._clock()
        attempt = 0
        while True:
            attempt += 1
            left = deadline - (self._clock() - started)
            budget = min(left, self.tables.settings.operation_timeout)
            try:
                return operation(max(budget, _MIN_CALL_SECONDS))
            except (StoreUnavailableError, _IndexWriteError) as error:
                delay = backoff.delay(attempt - 1)
                spent = self._clock() - started
                if attempt >= self.config.max_attempts or spent + delay >= deadline:
                    raise self._gave_up(error, attempt, spent, pending()) from error
                self._sleep(delay)

    def _gave_up(
        self, error: Exception, attempts: int, spent: float, pending: int
    ) -> StoreUnavailableError:
        where = bigtable_endpoint(self.tables.settings)
        cause = error.cause if isinstance(error, StoreUnavailableError) else str(error)
        tried = f"{attempts} attempt{'s' if attempts > 1 else ''} in {spent:.1f} s"
        return StoreUnavailableError(where, f"{cause}; gave up after {tried}", pending_rows=pending)

    def _write_batch(
        self, batch: list[MessageInput], timeout: float
    ) -> tuple[list[tuple[MessageInput, RowPlan]], list[MessageInput]]:
        """One round within ``timeout`` seconds: read, plan, write. Returns (written, to
        retry)."""
        deadline = self._clock() + timeout

        def left() -> float:
            return max(deadline - self._clock(), _MIN_CALL_SECONDS)

        rows = self.tables.read_event_rows((item.vaa.row_key for item in batch), timeout=left())
        self._load_assets(batch, left())
        plans: list[tuple[MessageInput, RowPlan]] = []
        for item in batch:
            row = rows.setdefault(item.vaa.row_key, {})
            plan = plan_message(item, row, self._context(item, row))
            apply_plan(row, plan)
            plans.append((item, plan))
            if isinstance(item.payload, AssetMeta) and plan.cells:
                self._remember_asset(asset_info(item.vaa.timestamp, item.payload))

        # Index rows go first. They are derived from the cells a plan adds, so a row stored
        # just before a crash would otherwise never get them: the rerun finds it complete and
        # plans nothing. Written first, they are at worst rewritten (idempotently) by the rerun;
        # readers skip an index entry whose row is not there yet.
        index_rows: dict[str, list[Any]] = {}
        for _, plan in plans:
            for entry in plan.index:
                index_rows.setdefault(entry.row_key, []).append(entry)
        if index_rows:
            failed_index = self.tables.bulk_write(
                self.tables.index, list(index_rows.items()), timeout=left()
            )
            if failed_index:
                # Nothing of the batch's events rows is written yet: the round is retried.
                raise _index_failure(len(failed_index))

        retry: list[MessageInput] = []
        written: list[tuple[MessageInput, RowPlan]] = []
        guarded = self.config.conditional_quorum
        conditional = [(item, plan) for item, plan in plans if plan.conditional and guarded]
        plain = [
            (item, plan)
            for item, plan in plans
            if plan.cells and not (plan.conditional and guarded)
        ]
        # A row gets its SignedVAA (and everything planned with it) atomically, or not at all.
        lost_race: set[int] = set()
        if conditional:
            results = self.tables.write_many_if_unsigned(
                [(plan.row_key, plan.cells) for _, plan in conditional],
                self.config.conditional_workers,
                timeout=left(),
            )
            lost_race = {
                id(item) for (item, _), ok in zip(conditional, results, strict=True) if not ok
            }
        # A later input of the batch may depend on an earlier one that lost the race.
        lost_rows = {item.vaa.row_key for item, _ in conditional if id(item) in lost_race}
        retry += [item for item, plan in plans if plan.row_key in lost_rows]
        plain = [(i, p) for i, p in plain if p.row_key not in lost_rows]
        failed: set[int] = set()
        if plain:
            failed_indexes = self.tables.bulk_write(
                self.tables.events,
                [(plan.row_key, plan.cells) for _, plan in plain],
                timeout=left(),
            )
            failed = {id(plain[i][0]) for i in failed_indexes}
            retry += [plain[i][0] for i in failed_indexes]
        for item, plan in plans:
            if plan.row_key in lost_rows or id(item) in failed:
                continue
            written.append((item, plan))
        return written, retry

    # --- enrichment context ----------------------------------------------------------------

    def _remember_asset(self, info: AssetInfo) -> None:
        key = (info.token_chain, info.token_address)
        known = self._assets.get(key)
        if known is None or info.timestamp >= known.timestamp:
            self._assets[key] = info

    def _load_assets(self, batch: list[MessageInput], timeout: float) -> None:
        wanted: set[str] = set()
        for item in batch:
            transfer = transfer_of(item.payload)
            if transfer is None:
                continue
            address = transfer.token_address.hex()
            if (transfer.token_chain, address) not in self._assets:
                wanted.add(keys.asset_index_key(transfer.token_chain, address))
            if transfer.to_chain != transfer.token_chain:
                wanted.add(keys.wrapped_index_key(transfer.token_chain, address, transfer.to_chain))
        self._wrapped = {}
        if not wanted:
            return
        for row_key, cells in self.tables.read_index_rows(wanted, timeout=timeout).items():
            if row_key.startswith("asset:"):
                _, chain_text, address = row_key.split(":")
                for value in cells.values():
                    self._remember_asset(AssetInfo.from_json(int(chain_text), address, value))
            elif row_key.startswith("wrapped:") and "a" in cells:
                self._wrapped[row_key] = WrappedAsset.from_json(cells["a"])

    def _context(self, item: MessageInput, row: RowSnapshot) -> EnrichmentContext:
        transfer = transfer_of(item.payload)
        if transfer is None:
            return EnrichmentContext()
        address = transfer.token_address.hex()
        asset = self._assets.get((transfer.token_chain, address))
        wrapped = self._wrapped.get(
            keys.wrapped_index_key(transfer.token_chain, address, transfer.to_chain)
        )
        price: Decimal | None = None
        stored_price = row.get(schema.TOKEN_TRANSFER_DETAILS, {}).get(Q.TOKEN_PRICE_USD)
        if stored_price is not None:
            price = decode_decimal(stored_price)
        elif asset is not None and self.prices is not None:
            try:
                price = self.prices.price_usd(asset, item.vaa.timestamp)
            except PriceSourceError as error:
                self.summary.enrichment_errors.append(f"{item.vaa.message_id}: {error}")
        return EnrichmentContext(asset=asset, wrapped=wrapped, price_usd=price)

    def close(self) -> None:
        """Flush what is queued."""
        self.flush()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()


_MIN_CALL_SECONDS = 0.5

_tracer = trace.get_tracer("chainloom.eventstore.writer")
_rows = metrics.get_meter("chainloom.eventstore.writer").create_counter(
    "chainloom.eventstore.rows",
    unit="{row}",
    description="Inputs written to the events table, by outcome (new, updated, unchanged, "
    "conflicting: a different digest for a stored message id).",
)
"""The least time a call is given, so the last attempt before the deadline is a real one."""


class _IndexWriteError(Exception):
    """Some index rows were not written; the round is retried (index cells are idempotent)."""


def _index_failure(count: int) -> BaseException:
    return _IndexWriteError(f"{count} index rows failed to write")


def _copy(summary: PutSummary) -> PutSummary:
    return PutSummary(
        summary.new,
        summary.updated,
        summary.unchanged,
        summary.conflicting,
        summary.refused,
        list(summary.refusals),
        list(summary.conflicts),
        list(summary.enrichment_errors),
    )


def _difference(after: PutSummary, before: PutSummary) -> PutSummary:
    return PutSummary(
        after.new - before.new,
        after.updated - before.updated,
        after.unchanged - before.unchanged,
        after.conflicting - before.conflicting,
        after.refused - before.refused,
        after.refusals[len(before.refusals) :],
        after.conflicts[len(before.conflicts) :],
        after.enrichment_errors[len(before.enrichment_errors) :],
    )
