"""The ETL: copy validated ledgers from a source into a backend, in order, crash-safely.

Why it is shaped this way (Clio's ``etl`` module, reduced to one process):

* A ledger becomes visible only through ``finish_writes`` (the ``ledger_range``
  compare-and-set), so every row of ledger n is written *before* the range moves to n. A crash
  anywhere in between leaves rows nobody can see; the restart reads the stored range and
  rewrites ledger n from scratch (every write is an idempotent upsert).
* Everything about a ledger is checked *before* its first write: the header hash, the sequence
  (exactly the stored max + 1), the parent hash, the transaction tree, every transaction and
  metadata blob, and the diff against the current key set (no deleting a missing object, no
  key twice). Refused input raises :class:`~chainloom.ledger.errors.LedgerIntegrityError`
  naming the ledger, and nothing stored changes.
* The successor rows come from :class:`~chainloom.ledger.successor.SuccessorTracker`, the key
  set at the newest ledger and every book base seen so far; after a restart it is rebuilt from
  the store alone (one page walk of the state, and the book bases' successor rows), so a run
  resumed after a crash at any point writes the same rows as one that never stopped.

A :class:`LedgerSource` hands out ledgers: the full state of the first one, then each next one
as a diff. Sources live in :mod:`chainloom.ledger.sources` (a dump file, rippled's gRPC API).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from opentelemetry import metrics, trace

from chainloom import telemetry
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.errors import (
    LedgerError,
    LedgerHeaderError,
    LedgerIntegrityError,
    SuccessorError,
)
from chainloom.ledger.feed import LedgerFeed
from chainloom.ledger.mpt import holder_rows
from chainloom.ledger.nft import (
    TransactionNFTs,
    ledger_nft_rows,
    nfts_from_object,
    nfts_from_transaction,
)
from chainloom.ledger.sources.base import LedgerSource, SourceLedger
from chainloom.ledger.successor import SuccessorTracker
from chainloom.ledger.types import (
    AccountTransactionsData,
    LedgerHeader,
    LedgerObject,
    MPTHolderData,
    NFTsData,
    NFTTransactionsData,
)
from chainloom.ledger.xrpl import hashing
from chainloom.ledger.xrpl.errors import XrplBinaryError
from chainloom.ledger.xrpl.parse import (
    NFT_TRANSACTION_TYPES,
    ParsedMetadata,
    book_base,
    is_book_directory,
    parse_metadata,
    parse_transaction,
    transaction_type,
)

CheckedTransactions = tuple[
    list[tuple[bytes, bytes, bytes, ParsedMetadata]],
    list[AccountTransactionsData],
    list[TransactionNFTs],
]
"""What :func:`check_transactions` returns: ``(hash, transaction, metadata, parsed metadata)``
per transaction, the ``account_tx`` rows, the NFT changes per NFT transaction."""

PAGE_SIZE = 2048
"""Objects per page when the tracker is rebuilt from stored state."""

# Telemetry (docs/observability.md); no-ops unless the process called chainloom.telemetry.setup().
_tracer = trace.get_tracer("chainloom.ledger.etl")
_meter = metrics.get_meter("chainloom.ledger.etl")
_ledgers = _meter.create_counter(
    "chainloom.ledger.etl.ledgers", unit="{ledger}", description="Ledgers committed (fenced)."
)
_last_validated = _meter.create_gauge(
    "chainloom.ledger.etl.last_validated",
    unit="{ledger}",
    description="Sequence of the last ledger committed: the store's validated range ends here.",
)
_lag = _meter.create_gauge(
    "chainloom.ledger.etl.lag",
    unit="{ledger}",
    description="Ledgers the source has validated beyond the last one committed.",
)


def _at(ledger: int | PreparedLedger) -> dict[str, int]:
    """The span attribute naming a ledger."""
    sequence = ledger if isinstance(ledger, int) else ledger.header.sequence
    return {"chainloom.ledger": sequence}


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress report, sent after every committed ledger."""

    sequence: int
    """The ledger just committed."""
    ledgers: int
    """Ledgers committed by this run so far."""
    ledgers_per_second: float
    """Committed ledgers per second since the run started."""
    lag: int | None
    """Ledgers the source has beyond ``sequence`` (``None`` if the source cannot tell)."""
    transactions: int
    """Transactions written by this run so far."""
    objects: int
    """Object versions written by this run so far."""


@dataclass(slots=True)
class RunSummary:
    """What a run did and why it stopped."""

    first_committed: int | None = None
    """The first ledger committed by this run."""
    last_committed: int | None = None
    """The last ledger committed by this run."""
    ledgers: int = 0
    """Ledgers committed."""
    transactions: int = 0
    """Transactions written."""
    objects: int = 0
    """Object versions written (the initial state counts each object)."""
    seconds: float = 0.0
    """Wall time of the run."""
    stopped_because: str = "source exhausted"
    """``source exhausted``, ``reached stop``, or ``write conflict: ...``."""
    resumed_from: int | None = field(default=None)
    """The stored range's max the run resumed after, ``None`` for an initial load."""

    @property
    def resumed_from_next(self) -> int | None:
        """The first ledger a resumed run needs (``None`` for an initial load)."""
        return None if self.resumed_from is None else self.resumed_from + 1

    @property
    def ledgers_per_second(self) -> float:
        """Committed ledgers per second."""
        return self.ledgers / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class PreparedLedger:
    """Every row of one ledger, computed and checked before anything is written."""

    header: LedgerHeader
    """The checked header."""
    header_blob: bytes
    """Its 150-byte stored form."""
    successors: list[tuple[bytes, bytes]]
    """``(key, next)`` successor rows for this sequence."""
    objects: tuple[LedgerObject, ...]
    """Object versions to write (full state or diff)."""
    transactions: list[tuple[bytes, bytes, bytes, ParsedMetadata]]
    """Each transaction's hash, blob, metadata blob and parsed metadata."""
    account_transactions: list[AccountTransactionsData]
    """``account_tx`` rows."""
    nfts: list[NFTsData]
    """NFT state changes (the last per token in the ledger)."""
    nft_transactions: list[NFTTransactionsData]
    """``nf_token_transactions`` rows."""
    mpt_holders: list[MPTHolderData]
    """``mp_token_holders`` rows of the MPTokens among ``objects``."""


class LedgerEtl:
    """Loads an initial ledger, then follows ledgers in order, into one backend."""

    def __init__(
        self,
        backend: BackendInterface,
        source: LedgerSource,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        verify_state: bool = False,
        feed: LedgerFeed | None = None,
    ) -> None:
        """``verify_state`` also checks every ledger's ``account_hash`` (a SHAMap over the whole
        state, kept in memory: right for test networks and generated ledgers, not for mainnet's
        millions of objects). Without it a diff that omits a change cannot be noticed.
        ``feed`` is told each ledger's sequence once it is committed, in order (for the API's
        subscription streams, :mod:`chainloom.ledger.feed`)."""
        self._backend = backend
        self._source = source
        self._on_progress = on_progress
        self._verify_state = verify_state
        self._feed = feed
        self._tracker: SuccessorTracker | None = None
        self._leaves: dict[bytes, bytes] | None = None
        self._previous: LedgerHeader | None = None

    # ------------------------------------------------------------------ the loop

    def run(
        self,
        *,
        stop: int | None = None,
        follow: bool = False,
        poll_interval: float = 1.0,
    ) -> RunSummary:
        """Load (or resume) and follow ledgers up to ``stop`` or the end of the source.

        With ``follow``, waits ``poll_interval`` seconds whenever the next ledger is not
        available yet instead of returning.
        """
        summary = RunSummary()
        started = time.monotonic()
        stored = self._backend.hard_fetch_ledger_range()
        if stored is None:
            first = self._source.first_sequence()
            if stop is not None and stop < first:
                summary.stopped_because = "reached stop"
                return summary
            prepared = self._prepare_initial(self._source.fetch_full(first))
            if not self._commit(prepared):
                return self._conflict(summary, first, started)
            self._previous = prepared.header
            self._count(summary, prepared, started)
        else:
            summary.resumed_from = stored.max_sequence
            self._resume(stored.max_sequence)
        return self._follow(summary, started, stop=stop, follow=follow, poll=poll_interval)

    def _follow(
        self,
        summary: RunSummary,
        started: float,
        *,
        stop: int | None,
        follow: bool,
        poll: float,
    ) -> RunSummary:
        """Load ledger after ledger. Pipelined like Clio's extractor/transformer/loader: ledger
        n's rows are in flight while n + 1 is fetched and checked; n + 1 is written only after
        n is committed."""
        assert self._previous is not None
        pending: PreparedLedger | None = None
        try:
            while True:
                sequence = self._previous.sequence + 1
                if stop is not None and sequence > stop:
                    summary.stopped_because = "reached stop"
                    break
                with telemetry.start_span(_tracer, "ledger.fetch", attributes=_at(sequence)):
                    ledger = self._source.fetch_diff(sequence)
                if ledger is None:
                    done, pending = pending, None
                    if not self._settle(summary, done, started):
                        return summary
                    self._check_gap(summary, sequence)
                    if not follow:
                        break
                    time.sleep(poll)
                    continue
                with telemetry.start_span(_tracer, "ledger.verify", attributes=_at(sequence)):
                    prepared = self._prepare_next(ledger, sequence)
                done, pending = pending, None
                if not self._settle(summary, done, started):
                    return summary
                self._write(prepared)
                pending = prepared
                self._previous = prepared.header
        except LedgerError:
            # Refused input (or a failure) for ledger n + 1: ledger n is still good.
            done, pending = pending, None
            self._settle(summary, done, started)
            self._forget()
            raise
        if not self._settle(summary, pending, started):
            return summary
        summary.seconds = time.monotonic() - started
        return summary

    def _settle(self, summary: RunSummary, pending: PreparedLedger | None, started: float) -> bool:
        """Commit a written ledger and count it; False (summary says why) on a conflict."""
        if pending is None:
            return True
        if not self._finish(pending):
            self._conflict(summary, pending.header.sequence, started)
            return False
        self._count(summary, pending, started)
        return True

    def _check_gap(self, summary: RunSummary, sequence: int) -> None:
        """A resumed run whose source starts after the store's end can never continue."""
        if sequence == summary.resumed_from_next and self._source.first_sequence() > sequence:
            raise LedgerIntegrityError(
                f"ledger {sequence}: the store ends at ledger {sequence - 1} but the source "
                f"starts at {self._source.first_sequence()}; ledgers in between are missing",
                sequence=sequence,
            )

    def _count(self, summary: RunSummary, prepared: PreparedLedger, started: float) -> None:
        sequence = prepared.header.sequence
        summary.transactions += len(prepared.transactions)
        summary.objects += len(prepared.objects)
        if summary.first_committed is None:
            summary.first_committed = sequence
        summary.last_committed = sequence
        summary.ledgers += 1
        summary.seconds = time.monotonic() - started
        _ledgers.add(1)
        _last_validated.set(sequence)
        if self._feed is not None:
            self._feed.publish(sequence)
        if self._on_progress is not None:
            latest = self._source.latest_sequence()
            if latest is not None:
                _lag.set(max(latest - sequence, 0))
            self._on_progress(
                Progress(
                    sequence=sequence,
                    ledgers=summary.ledgers,
                    ledgers_per_second=summary.ledgers_per_second,
                    lag=None if latest is None else max(latest - sequence, 0),
                    transactions=summary.transactions,
                    objects=summary.objects,
                )
            )

    def _conflict(self, summary: RunSummary, sequence: int, started: float) -> RunSummary:
        found = self._backend.hard_fetch_ledger_range()
        shown = "nothing" if found is None else str(found.max_sequence)
        summary.stopped_because = (
            f"write conflict: another writer advanced the range to {shown} "
            f"while this one wrote ledger {sequence}"
        )
        summary.seconds = time.monotonic() - started
        self._forget()
        return summary

    def _resume(self, max_sequence: int) -> None:
        """Rebuild the key set, the book bases and the previous header from the stored ledger
        ``max``: exactly what a run that never stopped holds in memory after ledger ``max``."""
        point = resume_point(self._backend, max_sequence, verify_state=self._verify_state)
        self._tracker = point.tracker
        self._previous = point.header
        self._leaves = point.leaves

    # ------------------------------------------------------------------ checking

    def _prepare_initial(self, ledger: SourceLedger) -> PreparedLedger:
        prepared, tracker, leaves = prepare_initial(ledger)
        self._tracker = tracker
        self._leaves = leaves if self._verify_state else None
        return prepared

    def _prepare_next(self, ledger: SourceLedger, expected: int) -> PreparedLedger:
        previous = self._previous
        tracker = self._tracker
        assert previous is not None
        assert tracker is not None
        header = check_next_header(ledger, expected, previous)
        checked = check_transactions(header, ledger)
        created, deleted, bases = classify_diff(tracker, ledger.objects, header.sequence)
        leaves = self._check_state_hash(header, ledger.objects)
        successors = apply_diff(tracker, header.sequence, created, deleted, bases)
        if leaves is not None:
            self._leaves = leaves
        return diff_rows(header, ledger, successors, checked=checked)

    def _check_state_hash(
        self, header: LedgerHeader, objects: Sequence[LedgerObject]
    ) -> dict[bytes, bytes] | None:
        """With ``verify_state``: the state's leaves after the diff, its root checked."""
        if not self._verify_state:
            return None
        if self._leaves is None:
            raise LedgerIntegrityError(  # pragma: no cover - set by every load path
                f"ledger {header.sequence}: no state to verify against", sequence=header.sequence
            )
        return state_after_diff(self._leaves, header, objects)

    # ------------------------------------------------------------------ writing

    def _commit(self, prepared: PreparedLedger) -> bool:
        """Write every row, then move the range; False on a write conflict."""
        self._write(prepared)
        return self._finish(prepared)

    def _write(self, prepared: PreparedLedger) -> None:
        """Issue every row of a ledger in Clio's order (a backend may still be sending them)."""
        try:
            with telemetry.start_span(_tracer, "ledger.write", attributes=_at(prepared)):
                write_rows(self._backend, prepared)
        except BaseException:
            self._forget()
            raise

    def _finish(self, prepared: PreparedLedger) -> bool:
        """Wait for the ledger's writes and move the range; False on a write conflict."""
        try:
            with telemetry.start_span(_tracer, "ledger.fence", attributes=_at(prepared)):
                return self._backend.finish_writes(prepared.header.sequence)
        except BaseException:
            self._forget()
            raise

    def _forget(self) -> None:
        """The in-memory key set may be ahead of the store: rebuild it on the next run."""
        self._tracker = None
        self._leaves = None


# ---------------------------------------------------------------------- the checks, as functions
#
# The ETL above runs them in one process; the Spark ledger-load job splits them between a
# sequential driver (order, parent hash, state diff, successor rows) and parallel executors
# (transactions, NFT rows, writes). Both call these, so the two cannot drift apart.


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """What a loader holds in memory after the stored ledger it resumes from."""

    header: LedgerHeader
    """The stored header of that ledger (the next ledger's parent)."""
    tracker: SuccessorTracker
    """The key set and book bases at that ledger."""
    leaves: dict[bytes, bytes] | None
    """The state's SHAMap leaves (``verify_state`` only)."""


def resume_point(
    backend: BackendInterface, max_sequence: int, *, verify_state: bool = False
) -> ResumePoint:
    """Rebuild the key set, the book bases and the header of the stored ledger ``max_sequence``:
    exactly what a run that never stopped holds in memory after it."""
    header = backend.fetch_ledger_by_sequence(max_sequence)
    if header is None:
        raise LedgerIntegrityError(
            f"ledger {max_sequence}: in the stored range but its header is missing",
            sequence=max_sequence,
        )
    keys: list[bytes] = []
    leaves: dict[bytes, bytes] = {}
    for obj in stored_state(backend, max_sequence):
        keys.append(obj.key)
        if verify_state:
            leaves[obj.key] = hashing.state_leaf_hash(obj.key, obj.blob)
    # Not the bases of the book directories at max: the tracker also remembers books that
    # have emptied since, and every base it remembers got a successor row in the ledger
    # that first named it, so the stored rows up to max are the set.
    bases = backend.fetch_book_bases(max_sequence)
    tracker = SuccessorTracker()
    tracker.initial_load(keys, bases)
    if not verify_state:
        return ResumePoint(header, tracker, None)
    root = hashing.shamap_root(sorted(leaves.items()))
    if root != header.account_hash:
        raise LedgerIntegrityError(
            f"ledger {max_sequence}: the stored state hashes to {root.hex().upper()}, "
            f"not the header's account_hash {header.account_hash.hex().upper()}",
            sequence=max_sequence,
        )
    return ResumePoint(header, tracker, leaves)


def prepare_initial(
    ledger: SourceLedger,
) -> tuple[PreparedLedger, SuccessorTracker, dict[bytes, bytes]]:
    """Check a full-state ledger; its rows, the key set after it and its state's leaves."""
    header = parse_header(ledger.header)
    sequence = header.sequence
    if not ledger.is_full_state:
        raise LedgerIntegrityError(
            f"ledger {sequence}: an initial load needs the full state, the source sent a diff",
            sequence=sequence,
        )
    keys = [obj.key for obj in ledger.objects]
    if len(set(keys)) != len(keys):
        raise LedgerIntegrityError(
            f"ledger {sequence}: the state lists an object twice", sequence=sequence
        )
    if any(not obj.blob for obj in ledger.objects):
        raise LedgerIntegrityError(
            f"ledger {sequence}: the full state holds an empty (deleted) object",
            sequence=sequence,
        )
    leaves = {o.key: hashing.state_leaf_hash(o.key, o.blob) for o in ledger.objects}
    state_hash = hashing.shamap_root(sorted(leaves.items()))
    if state_hash != header.account_hash:
        raise LedgerIntegrityError(
            f"ledger {sequence}: the state's SHAMap root {state_hash.hex().upper()} is not "
            f"the header's account_hash {header.account_hash.hex().upper()}",
            sequence=sequence,
        )
    transactions, account_rows, per_tx_nfts = check_transactions(header, ledger)
    bases = sorted({book_base(o.key) for o in ledger.objects if is_book_directory(o.blob)})
    tracker = SuccessorTracker()
    successors = tracker.initial_load(keys, bases)
    tx_states, nft_history = ledger_nft_rows(per_tx_nfts)
    page_states = {
        nft.token_id: nft
        for obj in ledger.objects
        for nft in nfts_from_object(obj.key, obj.blob, sequence)
    }
    states = [s for s in tx_states if s.token_id not in page_states]
    states += page_states.values()
    prepared = PreparedLedger(
        header=header,
        header_blob=header.serialize(include_hash=True),
        successors=successors,
        objects=ledger.objects,
        transactions=transactions,
        account_transactions=account_rows,
        nfts=states,
        nft_transactions=nft_history,
        mpt_holders=holder_rows(ledger.objects),
    )
    return prepared, tracker, leaves


def check_next_header(ledger: SourceLedger, expected: int, previous: LedgerHeader) -> LedgerHeader:
    """The header of the ledger after ``previous``: in order, chained by the parent hash, a
    diff."""
    header = parse_header(ledger.header)
    sequence = header.sequence
    if sequence != expected:
        raise LedgerIntegrityError(
            f"ledger {sequence} arrived out of order: the next ledger to load is {expected}",
            sequence=sequence,
        )
    if header.parent_hash != previous.hash:
        raise LedgerIntegrityError(
            f"ledger {sequence}: parent hash {header.parent_hash.hex().upper()} is not the "
            f"hash of ledger {previous.sequence} ({previous.hash.hex().upper()})",
            sequence=sequence,
        )
    if ledger.is_full_state:
        raise LedgerIntegrityError(
            f"ledger {sequence}: expected a diff, the source sent a full state",
            sequence=sequence,
        )
    return header


def apply_diff(
    tracker: SuccessorTracker,
    sequence: int,
    created: Sequence[bytes],
    deleted: Sequence[bytes],
    bases: Sequence[bytes],
) -> list[tuple[bytes, bytes]]:
    """Apply a classified diff to the key set; the ledger's successor rows."""
    try:
        return tracker.apply(created, deleted, bases)
    except SuccessorError as refused:
        raise LedgerIntegrityError(f"ledger {sequence}: {refused}", sequence=sequence) from None


def state_after_diff(
    leaves: dict[bytes, bytes], header: LedgerHeader, objects: Sequence[LedgerObject]
) -> dict[bytes, bytes]:
    """The state's leaves after ``objects`` (a new dict), its root checked against the header."""
    after = dict(leaves)
    for obj in objects:
        if obj.blob:
            after[obj.key] = hashing.state_leaf_hash(obj.key, obj.blob)
        else:
            after.pop(obj.key, None)
    root = hashing.shamap_root(sorted(after.items()))
    if root != header.account_hash:
        raise LedgerIntegrityError(
            f"ledger {header.sequence}: the state after its diff hashes to "
            f"{root.hex().upper()}, the header's account_hash is "
            f"{header.account_hash.hex().upper()}",
            sequence=header.sequence,
        )
    return after


def diff_rows(
    header: LedgerHeader,
    ledger: SourceLedger,
    successors: list[tuple[bytes, bytes]],
    *,
    checked: CheckedTransactions,
) -> PreparedLedger:
    """Every row of a checked diff ledger (``checked`` from :func:`check_transactions`,
    ``successors`` from :func:`apply_diff`)."""
    transactions, account_rows, per_tx_nfts = checked
    states, nft_history = ledger_nft_rows(per_tx_nfts)
    return PreparedLedger(
        header=header,
        header_blob=header.serialize(include_hash=True),
        successors=successors,
        objects=ledger.objects,
        transactions=transactions,
        account_transactions=account_rows,
        nfts=states,
        nft_transactions=nft_history,
        mpt_holders=holder_rows(ledger.objects),
    )


def write_rows(backend: BackendInterface, prepared: PreparedLedger) -> None:
    """Issue every row of a ledger in Clio's order (a backend may still be sending them); the
    caller makes it visible with ``finish_writes``."""
    header = prepared.header
    sequence = header.sequence
    backend.start_writes()
    backend.write_ledger(header, prepared.header_blob)
    for key, next_key in prepared.successors:
        backend.write_successor(key, sequence, next_key)
    for obj in prepared.objects:
        backend.write_ledger_object(obj.key, sequence, obj.blob)
    for tx_hash, transaction, metadata, _ in prepared.transactions:
        backend.write_transaction(tx_hash, sequence, header.close_time, transaction, metadata)
    if prepared.account_transactions:
        backend.write_account_transactions(prepared.account_transactions)
    if prepared.nfts:
        backend.write_nfts(prepared.nfts)
    if prepared.nft_transactions:
        backend.write_nft_transactions(prepared.nft_transactions)
    if prepared.mpt_holders:
        backend.write_mpt_holders(prepared.mpt_holders)


def parse_header(blob: bytes) -> LedgerHeader:
    try:
        return LedgerHeader.parse(blob)
    except LedgerHeaderError as refused:
        sequence = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else None
        raise LedgerIntegrityError(str(refused), sequence=sequence) from None


def check_transactions(header: LedgerHeader, ledger: SourceLedger) -> CheckedTransactions:
    """Check a ledger's transactions against its header (the tree root, every blob parses, no
    index twice); each one's hash, blobs and metadata, its ``account_tx`` rows, its NFTs."""
    sequence = header.sequence
    tx_root = hashing.transaction_root(ledger.transactions)
    if tx_root != header.transaction_hash:
        raise LedgerIntegrityError(
            f"ledger {sequence}: its transactions hash to {tx_root.hex().upper()}, the header "
            f"says {header.transaction_hash.hex().upper()}",
            sequence=sequence,
        )
    parsed: list[tuple[bytes, bytes, bytes, ParsedMetadata]] = []
    account_rows: list[AccountTransactionsData] = []
    nft_rows: list[TransactionNFTs] = []
    seen_indexes: set[int] = set()
    for position, (transaction, metadata) in enumerate(ledger.transactions):
        try:
            # The transaction tree check above already ties every blob to the header; only the
            # NFT rules need a transaction's fields, so only NFT transactions are decoded.
            if transaction_type(transaction) in NFT_TRANSACTION_TYPES:
                tx = parse_transaction(transaction)
                tx_hash = tx.hash
                meta = parse_metadata(metadata)
                nfts = nfts_from_transaction(tx, meta, sequence)
            else:
                tx_hash = hashing.transaction_id(transaction)
                meta = parse_metadata(metadata)
                nfts = None
        except XrplBinaryError as refused:
            raise LedgerIntegrityError(
                f"ledger {sequence}: transaction #{position} does not parse: {refused}",
                sequence=sequence,
            ) from None
        except LedgerIntegrityError:
            raise
        except LedgerError as refused:  # pragma: no cover - defensive: name the ledger
            raise LedgerIntegrityError(f"ledger {sequence}: {refused}", sequence=sequence) from None
        if meta.transaction_index in seen_indexes:
            raise LedgerIntegrityError(
                f"ledger {sequence}: two transactions have TransactionIndex "
                f"{meta.transaction_index}",
                sequence=sequence,
            )
        seen_indexes.add(meta.transaction_index)
        parsed.append((tx_hash, transaction, metadata, meta))
        account_rows.append(
            AccountTransactionsData(
                accounts=meta.affected_accounts,
                ledger_sequence=sequence,
                transaction_index=meta.transaction_index,
                tx_hash=tx_hash,
            )
        )
        if nfts is not None:
            nft_rows.append(nfts)
    return parsed, account_rows, nft_rows


def classify_diff(
    tracker: SuccessorTracker, objects: Sequence[LedgerObject], sequence: int
) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Split a diff into created and deleted keys (and new book bases), refusing nonsense."""
    created: list[bytes] = []
    deleted: list[bytes] = []
    bases: set[bytes] = set()
    seen: set[bytes] = set()
    for obj in objects:
        if len(obj.key) != 32:
            raise LedgerIntegrityError(
                f"ledger {sequence}: a diff key is {len(obj.key)} bytes, not 32",
                sequence=sequence,
            )
        if obj.key in seen:
            raise LedgerIntegrityError(
                f"ledger {sequence}: the diff lists object {obj.key.hex().upper()} twice",
                sequence=sequence,
            )
        seen.add(obj.key)
        exists = obj.key in tracker
        if not obj.blob:
            if not exists:
                raise LedgerIntegrityError(
                    f"ledger {sequence}: the diff deletes object {obj.key.hex().upper()}, "
                    "which does not exist",
                    sequence=sequence,
                )
            deleted.append(obj.key)
        elif not exists:
            created.append(obj.key)
            if is_book_directory(obj.blob):
                bases.add(book_base(obj.key))
    return created, deleted, sorted(bases)


def stored_state(backend: BackendInterface, sequence: int) -> Iterable[LedgerObject]:
    """Every object at ``sequence`` in key order (a ledger page walk)."""
    cursor: bytes | None = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, PAGE_SIZE)
        yield from page.objects
        if page.cursor is None:
            return
        cursor = page.cursor
