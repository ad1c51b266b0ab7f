"""The Cassandra (and ScyllaDB) ledger history backend: Clio's schema and write path.

Why it looks the way it does:

* **The 14 tables are Clio's, verbatim** (XRPLF/clio ``src/data/cassandra/Schema.hpp``), so a
  keyspace written here can be read by Clio's tools and the other way round. They live in
  :mod:`chainloom.ledger.cassandra_schema`, and the connection is made by
  :mod:`chainloom.ledger.cassandra_session`, as everyone else who uses this database makes it.
* **Writes are asynchronous and bounded.** One ledger is a few hundred independent inserts;
  sending them one at a time would make the network round trip the speed limit. Every write
  goes out with ``execute_async`` while a semaphore caps how many are in flight
  (``max_concurrent_writes``); the writer blocks when the cap is reached, so memory stays flat
  however far behind it is. A timed-out or unavailable write is retried with exponential back-off.
* **The fence.** ``finish_writes`` first waits until every write of the ledger is acknowledged
  (at QUORUM by default), then moves ``ledger_range`` with a lightweight transaction,
  ``UPDATE ... IF sequence IN (seq - 1, null)``. Readers never look above the range, so a
  ledger is all-or-nothing for them even though its rows land one by one. Of two writers racing
  for the same sequence exactly one LWT applies; the other gets False and must stop. A non-applied
  LWT counts as success only when our own earlier attempt timed out (it may have applied) and
  the range now shows our sequence -- unlike Clio, which also accepts another writer's identical
  ledger, because here the loser must learn that it lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from cassandra import ConsistencyLevel, InvalidRequest, OperationTimedOut, Unavailable, WriteTimeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT, NoHostAvailable
from cassandra.query import BatchStatement, BatchType

from chainloom.backoff import Backoff
from chainloom.credentials import CredentialsError
from chainloom.ledger.backend import BackendInterface, HistoryKind, range_from_rows
from chainloom.ledger.cassandra_schema import queries
from chainloom.ledger.cassandra_session import connect, consistency_of, create_schema, endpoint
from chainloom.ledger.errors import BackendError, CassandraRefusedError, LedgerConfigError
from chainloom.ledger.types import (
    NFT,
    AccountTransactionsData,
    LedgerHeader,
    LedgerRange,
    MPTHolderData,
    NFTsData,
    NFTTransactionsData,
    TransactionAndMetadata,
)
from chainloom.settings import CassandraSettings

BATCH_BYTES = 24 * 1024
"""Payload bytes per batch at most, well under Cassandra's 50 KiB ``batch_size_fail_threshold``."""

_WRITE_BACKOFF = Backoff(initial=0.001, maximum=1.0)
"""Waits before re-sending a write that timed out or found no replica."""
_RANGE_BACKOFF = Backoff(initial=0.01, maximum=1.0)
"""Waits before retrying a ledger_range update whose outcome is unknown."""


def _payload_size(values: tuple[Any, ...]) -> int:
    """Bytes a row adds to a batch, roughly: blobs by length, every other value as 16."""
    return sum(len(v) if isinstance(v, bytes) else 16 for v in values)


class _WriteQueue:
    """Bounded in-flight asynchronous writes with retries, and a barrier to wait for them all.

    Statements are grouped into UNLOGGED batches of up to ``batch_size`` statements and
    :data:`BATCH_BYTES` bytes: the driver's per-request cost in Python, not Cassandra, is the
    limit of a single writer, and a batch pays it once for many rows. Atomicity is not needed
    from the batch (the range fence provides it), and every statement is an idempotent insert,
    so a timed-out batch is simply sent again.
    """

    def __init__(
        self, session: Any, bound: int, retries: int, batch_size: int, consistency: int
    ) -> None:
        self._session = session
        self._slots = threading.BoundedSemaphore(bound)
        self._retries = retries
        self._batch_size = batch_size
        self._consistency = consistency
        self._buffer: list[tuple[Any, tuple[Any, ...]]] = []
        self._buffer_bytes = 0
        self._buffer_lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition()
        self._failures: list[str] = []
        self.started = 0
        self.retried = 0
        self.peak_in_flight = 0

    def submit(self, statement: Any, values: tuple[Any, ...]) -> None:
        """Queue one insert (a prepared statement and its values); send a batch when full."""
        size = _payload_size(values)
        batches = []
        with self._buffer_lock:
            if self._buffer and self._buffer_bytes + size > BATCH_BYTES:
                batches.append(self._take())
            self._buffer.append((statement, values))
            self._buffer_bytes += size
            if len(self._buffer) >= self._batch_size or self._buffer_bytes >= BATCH_BYTES:
                batches.append(self._take())
        for items in batches:
            self._send_new(items)

    def flush(self) -> None:
        """Send whatever is buffered."""
        with self._buffer_lock:
            items = self._take()
        if items:
            self._send_new(items)

    def _take(self) -> list[tuple[Any, tuple[Any, ...]]]:
        items, self._buffer, self._buffer_bytes = self._buffer, [], 0
        return items

    def _send_new(self, items: list[tuple[Any, tuple[Any, ...]]]) -> None:
        self._slots.acquire()
        with self._idle:
            self._pending += 1
            self.peak_in_flight = max(self.peak_in_flight, self._pending)
            self.started += len(items)
        if len(items) == 1:
            request: tuple[Any, Any] = items[0]
        else:
            batch = BatchStatement(
                batch_type=BatchType.UNLOGGED, consistency_level=self._consistency
            )
            for statement, values in items:
                batch.add(statement, values)
            batch.is_idempotent = True
            request = (batch, None)
        self._send(request, len(items), 0)

    def _send(self, request: tuple[Any, Any], count: int, attempt: int) -> None:
        try:
            future = self._session.execute_async(*request)
        except Exception as error:  # the driver refused before sending
            self._failed(error, request, count, attempt)
            return
        future.add_callbacks(
            callback=self._done,
            errback=self._failed,
            errback_args=(request, count, attempt),
        )

    def _done(self, _rows: Any) -> None:
        self._finish()

    def _failed(self, error: Any, request: tuple[Any, Any], count: int, attempt: int) -> None:
        transient = isinstance(error, WriteTimeout | Unavailable | OperationTimedOut)
        transient = transient or isinstance(error, NoHostAvailable)
        if transient and attempt < self._retries:
            self.retried += 1
            delay = _WRITE_BACKOFF.delay(attempt)
            timer = threading.Timer(delay, self._send, (request, count, attempt + 1))
            timer.daemon = True
            timer.start()
            return
        statement = request[0]
        if hasattr(statement, "query_string"):
            what = statement.query_string.split("(")[0].strip()
        else:
            what = f"a batch of {count} writes"
        with self._idle:
            self._failures.append(f"{what}: {error}")
        self._finish()

    def _finish(self) -> None:
        with self._idle:
            self._pending -= 1
            if self._pending == 0:
                self._idle.notify_all()
        self._slots.release()

    def drain(self) -> list[str]:
        """Send the buffer, wait until nothing is in flight; return (and forget) failures."""
        self.flush()
        with self._idle:
            while self._pending:
                self._idle.wait()
            failures, self._failures = self._failures, []
        return failures


class CassandraBackend(BackendInterface):
    """:class:`BackendInterface` on Cassandra / ScyllaDB with Clio's schema."""

    def __init__(self, config: CassandraSettings, *, read_only: bool = False) -> None:
        super().__init__()
        self._config = config
        self._read_only = read_only
        consistency = consistency_of(config)
        where = f"Cassandra keyspace {config.keyspace} at {endpoint(config)}"
        try:
            self._cluster, self._session = connect(config)
        except (CassandraRefusedError, CredentialsError):
            raise  # a setting to fix, named by the error itself
        except Exception as error:
            raise BackendError(f"cannot open {where}: {error}") from error
        try:
            if not read_only:
                create_schema(self._session, config)
            prefix = f"{config.keyspace}.{config.table_prefix}"
            self._statements = {
                name: self._session.prepare(query) for name, query in queries(prefix).items()
            }
        except InvalidRequest as error:
            # The server answered: the keyspace (or a table) is not there. A setting to fix
            # (exit 2), not an outage to wait out.
            self._cluster.shutdown()
            raise LedgerConfigError(f"cannot open {where}: {error}") from error
        except Exception as error:
            self._cluster.shutdown()
            raise BackendError(f"cannot open {where}: {error}") from error
        for statement in self._statements.values():
            statement.is_idempotent = True
        self._writes = _WriteQueue(
            self._session,
            config.max_concurrent_writes,
            config.write_retries,
            config.write_batch_size,
            consistency,
        )

    # ------------------------------------------------------------------ plumbing

    def _read(self, name: str, *values: Any) -> list[Any]:
        try:
            return list(self._session.execute(self._statements[name], values))
        except Exception as error:
            raise BackendError(f"Cassandra read {name} failed: {error}") from error

    def _read_many(self, name: str, values: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
        try:
            futures = [self._session.execute_async(self._statements[name], v) for v in values]
            return [list(future.result()) for future in futures]
        except Exception as error:
            raise BackendError(f"Cassandra read {name} failed: {error}") from error

    def _write(self, name: str, *values: Any) -> None:
        if self._read_only:
            raise BackendError(f"keyspace {self._config.keyspace} was opened read-only")
        self._writes.submit(self._statements[name], values)

    @property
    def write_stats(self) -> dict[str, int]:
        """Writes started and retried, and the most ever in flight, since the backend opened."""
        return {
            "started": self._writes.started,
            "retried": self._writes.retried,
            "peak_in_flight": self._writes.peak_in_flight,
        }

    @property
    def consistency(self) -> str:
        """The consistency level every statement runs at (``QUORUM`` unless configured)."""
        profile = self._cluster.profile_manager.profiles[EXEC_PROFILE_DEFAULT]
        return str(ConsistencyLevel.value_to_name[profile.consistency_level])

    def _fetch_ledger_range(self) -> LedgerRange | None:
        rows = {row.is_latest: row.sequence for row in self._read("select_range")}
        return range_from_rows(rows.get(False), rows.get(True))

    # ------------------------------------------------------------------ reads

    def _fetch_latest_ledger_sequence(self) -> int | None:
        rows = self._read("select_latest")
        return int(rows[0].sequence) if rows and rows[0].sequence is not None else None

    def _fetch_ledger_header(self, sequence: int) -> bytes | None:
        rows = self._read("select_ledger", sequence)
        return bytes(rows[0].header) if rows else None

    def _fetch_ledger_sequence(self, ledger_hash: bytes) -> int | None:
        rows = self._read("select_ledger_by_hash", ledger_hash)
        return int(rows[0].sequence) if rows else None

    def _fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        results = self._read_many("select_transaction", [(h,) for h in hashes])
        return [
            TransactionAndMetadata(
                rows[0].transaction, rows[0].metadata, rows[0].ledger_sequence, rows[0].date
            )
            if rows
            else None
            for rows in results
        ]

    def _fetch_transaction_hashes(self, sequence: int) -> list[bytes]:
        return [row.hash for row in self._read("select_ledger_transactions", sequence)]

    def _fetch_history(
        self,
        kind: HistoryKind,
        partition: bytes,
        start: tuple[int, int],
        ceiling: tuple[int, int],
        *,
        limit: int,
        forward: bool,
    ) -> list[tuple[bytes, int, int]]:
        if forward:
            rows = self._read(f"select_{kind}_forward", partition, start, ceiling, limit)
        else:
            rows = self._read(f"select_{kind}_backward", partition, start, limit)
        return [(row.hash, *row.seq_idx) for row in rows]

    def _fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        results = self._read_many("select_object", [(key, sequence) for key in keys])
        return [rows[0].object or b"" if rows else b"" for rows in results]

    def _fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        rows = self._read("select_successor", key, sequence)
        return bytes(rows[0].next) if rows else None

    def _fetch_diff_keys(self, sequence: int) -> list[bytes]:
        return [row.key for row in self._read("select_diff", sequence)]

    def _fetch_book_bases(self, sequence: int) -> list[bytes]:
        # One row per partition: its first (lowest) seq, so "first written at or before".
        # The driver pages through the scan.
        found = (
            bytes(row.key)
            for row in self._read("select_successor_first_rows")
            if row.key[24:] == bytes(8) and row.seq <= sequence
        )
        return sorted(found)

    # ------------------------------------------------------------------ NFTs

    def _fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        state = self._read("select_nft", token_id, sequence)
        if not state:
            return None
        uri = self._read("select_nft_uri", token_id, sequence)
        row = state[0]
        return NFT(
            token_id,
            row.sequence,
            row.owner,
            (uri[0].uri or b"") if uri else None,
            bool(row.is_burned),
        )

    def _fetch_nft_ids_by_issuer(
        self, issuer: bytes, taxon: int, start: bytes, limit: int, *, one_taxon: bool
    ) -> list[bytes]:
        if one_taxon:
            rows = self._read("select_nfts_by_issuer_taxon", issuer, taxon, start, limit)
        else:
            rows = self._read("select_nfts_by_issuer", issuer, taxon, start, limit)
        return [row.token_id for row in rows]

    def _fetch_mpt_holder_accounts(self, mpt_id: bytes, after: bytes, limit: int) -> list[bytes]:
        return [row.holder for row in self._read("select_mpt_holders", mpt_id, after, limit)]

    # ------------------------------------------------------------------ writes

    def _write_ledger(self, header: LedgerHeader, stored: bytes) -> None:
        self._write("insert_ledger", header.sequence, stored)
        self._write("insert_ledger_hash", header.hash, header.sequence)

    def _write_ledger_object(
        self, key: bytes, sequence: int, blob: bytes, *, with_diff: bool
    ) -> None:
        if with_diff:
            self._write("insert_diff", sequence, key)
        self._write("insert_object", key, sequence, blob)

    def _write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        self._write("insert_successor", key, sequence, next_key)

    def _write_transaction(
        self, tx_hash: bytes, sequence: int, date: int, transaction: bytes, metadata: bytes
    ) -> None:
        self._write("insert_ledger_transaction", sequence, tx_hash)
        self._write("insert_transaction", tx_hash, sequence, date, transaction, metadata)

    def _write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        for record in data:
            seq_idx = (record.ledger_sequence, record.transaction_index)
            for account in record.accounts:
                self._write("insert_account_tx", account, seq_idx, record.tx_hash)

    def _write_mpt_holders(self, data: Sequence[MPTHolderData]) -> None:
        for record in data:
            self._write("insert_mpt_holder", record.mpt_id, record.holder)

    def _write_nfts(self, data: Sequence[NFTsData]) -> None:
        for record in data:
            if record.only_uri_changed:
                self._write(
                    "insert_nft_uri", record.token_id, record.ledger_sequence, record.uri or b""
                )
                continue
            self._write(
                "insert_nft",
                record.token_id,
                record.ledger_sequence,
                record.owner,
                record.is_burned,
            )
            if record.uri is not None:
                self._write("insert_issuer_nft", record.issuer, record.taxon, record.token_id)
                self._write("insert_nft_uri", record.token_id, record.ledger_sequence, record.uri)

    def _write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        for record in data:
            seq_idx = (record.ledger_sequence, record.transaction_index)
            self._write("insert_nft_tx", record.token_id, seq_idx, record.tx_hash)

    def wait_for_writes(self) -> None:
        """Block until every write so far is acknowledged; raise if any failed for good."""
        failures = self._writes.drain()
        if failures:
            raise BackendError(
                f"{len(failures)} write(s) failed after retries; the ledger stays invisible. "
                f"First: {failures[0]}"
            )

    def _do_flush_writes(self) -> None:
        self.wait_for_writes()

    def abandon_writes(self) -> None:
        """Let in-flight writes settle and forget their failures (the rows stay invisible)."""
        self._writes.drain()

    def _do_finish_writes(self, sequence: int) -> bool:
        if self._read_only:
            raise BackendError(f"keyspace {self._config.keyspace} was opened read-only")
        self.wait_for_writes()
        if self._range is None:
            # First ledger ever: the min row ("IF sequence IN (seq, null)").
            self._compare_and_set(False, sequence, sequence)
        return self._compare_and_set(True, sequence, sequence - 1)

    def _compare_and_set(self, is_latest: bool, sequence: int, expected: int) -> bool:
        uncertain = False
        for attempt in range(self._config.write_retries + 1):
            try:
                result = self._session.execute(
                    self._statements["update_range"], (sequence, is_latest, expected)
                )
            except (WriteTimeout, OperationTimedOut):
                # The LWT may or may not have applied; retrying tells us which.
                uncertain = True
                time.sleep(_RANGE_BACKOFF.delay(attempt))
                continue
            except Exception as error:
                raise BackendError(
                    f"ledger {sequence}: updating ledger_range failed: {error}"
                ) from error
            if result.was_applied:
                return True
            current = result.one()
            return bool(uncertain and current is not None and current.sequence == sequence)
        raise BackendError(f"ledger {sequence}: ledger_range update timed out repeatedly")

    def close(self) -> None:
        self._cluster.shutdown()
