"""The Cassandra (and ScyllaDB) ledger history backend: Clio's schema and write path.

Why it looks the way it does:

* **The 13 tables are Clio's, verbatim** (XRPLF/clio ``src/data/cassandra/Schema.hpp``), so a
  keyspace written here can be read by Clio's tools and the other way round.
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

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from chainloom.backoff import Backoff
from chainloom.ledger.backend import (
    BackendInterface,
    check_key,
    check_limit,
    check_sequence,
    range_from_rows,
    stored_header_blob,
)
from chainloom.ledger.errors import BackendError
from chainloom.ledger.types import (
    LAST_KEY,
    NFT,
    UINT32_MAX,
    AccountTransactionsData,
    LedgerHeader,
    LedgerObject,
    LedgerRange,
    NFTsAndCursor,
    NFTsData,
    NFTTransactionsData,
    TransactionAndMetadata,
    TransactionsAndCursor,
    TransactionsCursor,
    nft_taxon,
)
from chainloom.settings import CassandraSettings

TABLE_NAMES = (
    "objects",
    "transactions",
    "ledger_transactions",
    "successor",
    "diff",
    "account_tx",
    "ledgers",
    "ledger_hashes",
    "ledger_range",
    "nf_tokens",
    "issuer_nf_tokens_v2",
    "nf_token_uris",
    "nf_token_transactions",
)
"""The 13 tables of Clio's ``Schema.hpp``, in its order."""


def schema_statements(keyspace: str, replication_factor: int, prefix: str = "") -> list[str]:
    """``CREATE KEYSPACE`` and the 13 ``CREATE TABLE`` statements of Clio's ``Schema.hpp``."""
    t = f"{keyspace}.{prefix}"
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
        f"{{'class': 'SimpleStrategy', 'replication_factor': '{replication_factor}'}} "
        "AND durable_writes = true",
        f"CREATE TABLE IF NOT EXISTS {t}objects (key blob, sequence bigint, object blob, "
        "PRIMARY KEY (key, sequence)) WITH CLUSTERING ORDER BY (sequence DESC)",
        f"CREATE TABLE IF NOT EXISTS {t}transactions (hash blob PRIMARY KEY, "
        "ledger_sequence bigint, date bigint, transaction blob, metadata blob)",
        f"CREATE TABLE IF NOT EXISTS {t}ledger_transactions (ledger_sequence bigint, hash blob, "
        "PRIMARY KEY (ledger_sequence, hash))",
        f"CREATE TABLE IF NOT EXISTS {t}successor (key blob, seq bigint, next blob, "
        "PRIMARY KEY (key, seq))",
        f"CREATE TABLE IF NOT EXISTS {t}diff (seq bigint, key blob, PRIMARY KEY (seq, key))",
        f"CREATE TABLE IF NOT EXISTS {t}account_tx (account blob, "
        "seq_idx tuple<bigint, bigint>, hash blob, PRIMARY KEY (account, seq_idx)) "
        "WITH CLUSTERING ORDER BY (seq_idx DESC)",
        f"CREATE TABLE IF NOT EXISTS {t}ledgers (sequence bigint PRIMARY KEY, header blob)",
        f"CREATE TABLE IF NOT EXISTS {t}ledger_hashes (hash blob PRIMARY KEY, sequence bigint)",
        f"CREATE TABLE IF NOT EXISTS {t}ledger_range (is_latest boolean PRIMARY KEY, "
        "sequence bigint)",
        f"CREATE TABLE IF NOT EXISTS {t}nf_tokens (token_id blob, sequence bigint, owner blob, "
        "is_burned boolean, PRIMARY KEY (token_id, sequence)) "
        "WITH CLUSTERING ORDER BY (sequence DESC)",
        f"CREATE TABLE IF NOT EXISTS {t}issuer_nf_tokens_v2 (issuer blob, taxon bigint, "
        "token_id blob, PRIMARY KEY (issuer, taxon, token_id)) "
        "WITH CLUSTERING ORDER BY (taxon ASC, token_id ASC)",
        f"CREATE TABLE IF NOT EXISTS {t}nf_token_uris (token_id blob, sequence bigint, uri blob, "
        "PRIMARY KEY (token_id, sequence)) WITH CLUSTERING ORDER BY (sequence DESC)",
        f"CREATE TABLE IF NOT EXISTS {t}nf_token_transactions (token_id blob, "
        "seq_idx tuple<bigint, bigint>, hash blob, PRIMARY KEY (token_id, seq_idx)) "
        "WITH CLUSTERING ORDER BY (seq_idx DESC)",
    ]


def _queries(t: str) -> dict[str, str]:
    """Every prepared statement (as Clio's ``Schema.hpp`` has them), tables prefixed ``t``."""
    return {name: query.replace("{t}", t) for name, query in _QUERY_TEMPLATES.items()}


_QUERY_TEMPLATES = {
    # writes
    "insert_object": "INSERT INTO {t}objects (key, sequence, object) VALUES (?, ?, ?)",
    "insert_diff": "INSERT INTO {t}diff (seq, key) VALUES (?, ?)",
    "insert_successor": "INSERT INTO {t}successor (key, seq, next) VALUES (?, ?, ?)",
    "insert_transaction": "INSERT INTO {t}transactions "
    "(hash, ledger_sequence, date, transaction, metadata) VALUES (?, ?, ?, ?, ?)",
    "insert_ledger_transaction": "INSERT INTO {t}ledger_transactions "
    "(ledger_sequence, hash) VALUES (?, ?)",
    "insert_account_tx": "INSERT INTO {t}account_tx (account, seq_idx, hash) VALUES (?, ?, ?)",
    "insert_ledger": "INSERT INTO {t}ledgers (sequence, header) VALUES (?, ?)",
    "insert_ledger_hash": "INSERT INTO {t}ledger_hashes (hash, sequence) VALUES (?, ?)",
    "insert_nft": "INSERT INTO {t}nf_tokens (token_id, sequence, owner, is_burned) "
    "VALUES (?, ?, ?, ?)",
    "insert_issuer_nft": "INSERT INTO {t}issuer_nf_tokens_v2 (issuer, taxon, token_id) "
    "VALUES (?, ?, ?)",
    "insert_nft_uri": "INSERT INTO {t}nf_token_uris (token_id, sequence, uri) VALUES (?, ?, ?)",
    "insert_nft_tx": "INSERT INTO {t}nf_token_transactions (token_id, seq_idx, hash) "
    "VALUES (?, ?, ?)",
    "update_range": "UPDATE {t}ledger_range SET sequence = ? WHERE is_latest = ? "
    "IF sequence IN (?, null)",
    # reads
    "select_successor": "SELECT next FROM {t}successor WHERE key = ? AND seq <= ? "
    "ORDER BY seq DESC LIMIT 1",
    "select_diff": "SELECT key FROM {t}diff WHERE seq = ?",
    "select_successor_first_rows": "SELECT key, seq FROM {t}successor PER PARTITION LIMIT 1",
    "select_object": "SELECT object, sequence FROM {t}objects WHERE key = ? "
    "AND sequence <= ? ORDER BY sequence DESC LIMIT 1",
    "select_transaction": "SELECT transaction, metadata, ledger_sequence, date "
    "FROM {t}transactions WHERE hash = ?",
    "select_ledger_transactions": "SELECT hash FROM {t}ledger_transactions "
    "WHERE ledger_sequence = ?",
    "select_account_tx_backward": "SELECT hash, seq_idx FROM {t}account_tx "
    "WHERE account = ? AND seq_idx < ? LIMIT ?",
    "select_account_tx_forward": "SELECT hash, seq_idx FROM {t}account_tx "
    "WHERE account = ? AND seq_idx > ? AND seq_idx < ? ORDER BY seq_idx ASC LIMIT ?",
    "select_nft": "SELECT sequence, owner, is_burned FROM {t}nf_tokens WHERE token_id = ? "
    "AND sequence <= ? ORDER BY sequence DESC LIMIT 1",
    "select_nft_uri": "SELECT uri FROM {t}nf_token_uris WHERE token_id = ? "
    "AND sequence <= ? ORDER BY sequence DESC LIMIT 1",
    "select_nft_tx_backward": "SELECT hash, seq_idx FROM {t}nf_token_transactions "
    "WHERE token_id = ? AND seq_idx < ? ORDER BY seq_idx DESC LIMIT ?",
    "select_nft_tx_forward": "SELECT hash, seq_idx FROM {t}nf_token_transactions "
    "WHERE token_id = ? AND seq_idx >= ? AND seq_idx < ? ORDER BY seq_idx ASC LIMIT ?",
    "select_nfts_by_issuer": "SELECT token_id FROM {t}issuer_nf_tokens_v2 "
    "WHERE issuer = ? AND (taxon, token_id) > (?, ?) "
    "ORDER BY taxon ASC, token_id ASC LIMIT ?",
    "select_nfts_by_issuer_taxon": "SELECT token_id FROM {t}issuer_nf_tokens_v2 "
    "WHERE issuer = ? AND taxon = ? AND token_id > ? "
    "ORDER BY taxon ASC, token_id ASC LIMIT ?",
    "select_ledger_by_hash": "SELECT sequence FROM {t}ledger_hashes WHERE hash = ? LIMIT 1",
    "select_ledger": "SELECT header FROM {t}ledgers WHERE sequence = ?",
    "select_latest": "SELECT sequence FROM {t}ledger_range WHERE is_latest = true",
    "select_range": "SELECT is_latest, sequence FROM {t}ledger_range",
}
"""Statement texts; ``{t}`` becomes ``keyspace.prefix``."""


BATCH_BYTES = 24 * 1024

_WRITE_BACKOFF = Backoff(initial=0.001, maximum=1.0)
"""Waits before re-sending a write that timed out or found no replica."""
_RANGE_BACKOFF = Backoff(initial=0.01, maximum=1.0)
"""Waits before retrying a ledger_range update whose outcome is unknown."""
"""Payload bytes per batch at most, well under Cassandra's 50 KiB ``batch_size_fail_threshold``."""


def _payload_size(values: tuple[Any, ...]) -> int:
    return sum(len(v) if isinstance(v, bytes) else 16 for v in values)


class _Insert:
    """A prepared insert with what a batch needs of it, worked out once.

    :meth:`encode` serializes values with the statement's own column types, exactly as
    ``PreparedStatement.bind`` does, but without building a ``BoundStatement`` per row.
    """

    __slots__ = (
        "_blob_indexes",
        "_fixed_size",
        "_serializers",
        "keyspace",
        "query_id",
        "routing_index",
        "statement",
    )

    def __init__(self, statement: Any) -> None:
        from cassandra.cqltypes import BooleanType, BytesType, LongType
        from cassandra.marshal import int8_pack, int64_pack

        protocol_version = statement.protocol_version
        self.statement = statement
        """The ``PreparedStatement`` (sent on its own when a batch would hold one row)."""
        self.query_id: bytes = statement.query_id
        """The id the server knows the prepared statement by."""
        columns = statement.column_metadata
        self.keyspace: str | None = columns[0].keyspace_name if columns else None
        """The keyspace a batch starting with this statement is routed to."""
        indexes: list[int] = list(statement.routing_key_indexes or ())
        self.routing_index: int | None = indexes[0] if len(indexes) == 1 else None
        """The value that is the partition key (a single-column one), else None."""
        # The column types' own serializers; for blob, bigint and boolean the functions
        # those call (``bytes``, ``int64_pack``, ``int8_pack``), without the extra call.
        serializers: list[Callable[[Any], bytes]] = []
        for column in columns:
            if column.type is BytesType:
                serializers.append(bytes)
            elif column.type is LongType:
                serializers.append(int64_pack)
            elif column.type is BooleanType:
                serializers.append(int8_pack)
            else:
                serializers.append(functools.partial(_serialize, column.type, protocol_version))
        self._serializers = tuple(serializers)
        blobs = [i for i, column in enumerate(columns) if column.type is BytesType]
        self._blob_indexes = tuple(blobs)
        self._fixed_size = 16 * (len(columns) - len(blobs))

    def encode(self, values: tuple[Any, ...]) -> tuple[list[Any], int]:
        """The serialized values (None stays None) in column order, and the row's payload
        size as :func:`_payload_size` counts it (a value of another column is never bytes)."""
        serializers = self._serializers
        if len(values) != len(serializers):
            raise BackendError(
                f"{self.statement.query_string.split('(')[0].strip()}: expected "
                f"{len(serializers)} values, got {len(values)}"
            )
        size = self._fixed_size
        for index in self._blob_indexes:
            value = values[index]
            size += len(value) if isinstance(value, bytes) else 16
        encoded = [
            None if value is None else serialize(value)
            for serialize, value in zip(serializers, values, strict=True)
        ]
        return encoded, size


def _serialize(column_type: Any, protocol_version: int, value: Any) -> bytes:
    return column_type.serialize(value, protocol_version)  # type: ignore[no-any-return]


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
        from cassandra.query import BatchStatement, BatchType

        self._session = session
        self._slots = threading.BoundedSemaphore(bound)
        self._retries = retries
        self._batch_size = batch_size
        self._consistency = consistency
        self._new_batch = BatchStatement
        self._unlogged = BatchType.UNLOGGED
        self._buffer: list[tuple[_Insert, tuple[Any, ...], list[Any]]] = []
        self._buffer_bytes = 0
        self._buffer_lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition()
        self._failures: list[str] = []
        self.started = 0
        self.retried = 0
        self.peak_in_flight = 0

    def submit(self, insert: _Insert, values: tuple[Any, ...]) -> None:
        encoded, size = insert.encode(values)
        batches = []
        with self._buffer_lock:
            if self._buffer and self._buffer_bytes + size > BATCH_BYTES:
                batches.append(self._take())
            self._buffer.append((insert, values, encoded))
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

    def _take(self) -> list[tuple[_Insert, tuple[Any, ...], list[Any]]]:
        items, self._buffer, self._buffer_bytes = self._buffer, [], 0
        return items

    def _send_new(self, items: list[tuple[_Insert, tuple[Any, ...], list[Any]]]) -> None:
        self._slots.acquire()
        with self._idle:
            self._pending += 1
            self.peak_in_flight = max(self.peak_in_flight, self._pending)
            self.started += len(items)
        if len(items) == 1:
            insert, values, _ = items[0]
            request: Any = (insert.statement, values)
        else:
            # What BatchStatement.add does for each prepared statement, without binding a
            # BoundStatement per row: the values are already serialized by their column types.
            batch = self._new_batch(batch_type=self._unlogged, consistency_level=self._consistency)
            batch._statements_and_parameters = [
                (True, insert.query_id, encoded) for insert, _, encoded in items
            ]
            for insert, _, encoded in items:  # the first row with a partition key routes it
                if insert.keyspace and insert.routing_index is not None:
                    routing_key = encoded[insert.routing_index]
                    if routing_key:
                        batch.routing_key = routing_key
                        batch.keyspace = insert.keyspace
                        break
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
        from cassandra import OperationTimedOut, Unavailable, WriteTimeout
        from cassandra.cluster import NoHostAvailable

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
        from cassandra import ConsistencyLevel
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import RoundRobinPolicy, TokenAwarePolicy

        self._config = config
        self._read_only = read_only
        consistency = ConsistencyLevel.name_to_value[config.consistency.upper()]
        profile = ExecutionProfile(
            load_balancing_policy=TokenAwarePolicy(RoundRobinPolicy()),
            consistency_level=consistency,
            serial_consistency_level=ConsistencyLevel.SERIAL,
            request_timeout=config.request_timeout,
        )
        self._cluster = Cluster(
            list(config.hosts),
            port=config.port,
            protocol_version=config.protocol_version,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        )
        try:
            self._session = self._cluster.connect()
            if not read_only:
                for statement in schema_statements(
                    config.keyspace, config.replication_factor, config.table_prefix
                ):
                    # Schema changes wait for agreement; give them longer than a data request.
                    self._session.execute(statement, timeout=max(config.request_timeout, 60.0))
            prefix = f"{config.keyspace}.{config.table_prefix}"
            self._statements = {
                name: self._session.prepare(query) for name, query in _queries(prefix).items()
            }
        except Exception as error:
            self._cluster.shutdown()
            raise BackendError(
                f"cannot open Cassandra keyspace {config.keyspace} at "
                f"{','.join(config.hosts)}:{config.port}: {error}"
            ) from error
        for statement in self._statements.values():
            statement.is_idempotent = True
        self._inserts = {
            name: _Insert(statement)
            for name, statement in self._statements.items()
            if name.startswith("insert_")
        }
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
        self._writes.submit(self._inserts[name], values)

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
        from cassandra import ConsistencyLevel
        from cassandra.cluster import EXEC_PROFILE_DEFAULT

        profile = self._cluster.profile_manager.profiles[EXEC_PROFILE_DEFAULT]
        return str(ConsistencyLevel.value_to_name[profile.consistency_level])

    def _do_fetch_ledger_range(self) -> LedgerRange | None:
        rows = {row.is_latest: row.sequence for row in self._read("select_range")}
        return range_from_rows(rows.get(False), rows.get(True))

    # ------------------------------------------------------------------ ledgers

    def fetch_ledger_by_sequence(self, sequence: int) -> LedgerHeader | None:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        rows = self._read("select_ledger", sequence)
        return LedgerHeader.parse(rows[0].header) if rows else None

    def fetch_ledger_by_hash(self, ledger_hash: bytes) -> LedgerHeader | None:
        check_key(ledger_hash, "ledger hash")
        rows = self._read("select_ledger_by_hash", ledger_hash)
        return self.fetch_ledger_by_sequence(rows[0].sequence) if rows else None

    def fetch_latest_ledger_sequence(self) -> int | None:
        rows = self._read("select_latest")
        return int(rows[0].sequence) if rows and rows[0].sequence is not None else None

    # ------------------------------------------------------------------ transactions

    def _transaction(self, row: Any) -> TransactionAndMetadata | None:
        if row is None or not self.is_visible(row.ledger_sequence):
            return None
        return TransactionAndMetadata(row.transaction, row.metadata, row.ledger_sequence, row.date)

    def fetch_transaction(self, tx_hash: bytes) -> TransactionAndMetadata | None:
        check_key(tx_hash, "transaction hash")
        rows = self._read("select_transaction", tx_hash)
        return self._transaction(rows[0] if rows else None)

    def fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        for tx_hash in hashes:
            check_key(tx_hash, "transaction hash")
        results = self._read_many("select_transaction", [(h,) for h in hashes])
        return [self._transaction(rows[0] if rows else None) for rows in results]

    def fetch_all_transaction_hashes_in_ledger(self, sequence: int) -> list[bytes]:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return []
        return [row.hash for row in self._read("select_ledger_transactions", sequence)]

    def _history_page(
        self,
        kind: str,
        partition: bytes,
        *,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None,
    ) -> TransactionsAndCursor:
        check_limit(limit)
        current = self.fetch_ledger_range()
        if current is None:
            return TransactionsAndCursor((), None)
        ceiling = (current.max_sequence + 1, 0)  # rows of uncommitted ledgers stay hidden
        if forward:
            start = (cursor.ledger_sequence, cursor.transaction_index) if cursor else (0, 0)
            rows = self._read(f"select_{kind}_forward", partition, start, ceiling, limit)
        else:
            start = (
                (cursor.ledger_sequence, cursor.transaction_index)
                if cursor
                else (UINT32_MAX, UINT32_MAX)
            )
            rows = self._read(f"select_{kind}_backward", partition, min(start, ceiling), limit)
        found = self.fetch_transactions([row.hash for row in rows])
        next_cursor = None
        if len(rows) == limit:
            last_seq, last_idx = rows[-1].seq_idx
            if forward and kind == "nft_tx":
                last_idx += 1  # NFT history goes forward with ">=": step past the last row
            next_cursor = TransactionsCursor(last_seq, last_idx)
        return TransactionsAndCursor(tuple(tx for tx in found if tx is not None), next_cursor)

    def fetch_account_transactions(
        self,
        account: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        check_key(account, "account", 20)
        return self._history_page(
            "account_tx", account, limit=limit, forward=forward, cursor=cursor
        )

    # ------------------------------------------------------------------ state

    def fetch_ledger_object(self, key: bytes, sequence: int) -> bytes | None:
        check_key(key)
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        rows = self._read("select_object", key, sequence)
        return rows[0].object if rows and rows[0].object else None

    def fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        check_sequence(sequence)
        for key in keys:
            check_key(key)
        if not self.is_visible(sequence):
            return [b""] * len(keys)
        results = self._read_many("select_object", [(key, sequence) for key in keys])
        return [rows[0].object or b"" if rows else b"" for rows in results]

    def fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        check_key(key)
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        rows = self._read("select_successor", key, sequence)
        if not rows or rows[0].next == LAST_KEY:
            return None
        return bytes(rows[0].next)

    def fetch_ledger_diff(self, sequence: int) -> list[LedgerObject]:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return []
        keys = [row.key for row in self._read("select_diff", sequence)]
        blobs = self.fetch_ledger_objects(keys, sequence)
        return [LedgerObject(key, blob) for key, blob in zip(keys, blobs, strict=True)]

    def _do_fetch_book_bases(self, sequence: int) -> list[bytes]:
        # One row per partition: its first (lowest) seq, so "first written at or before".
        # The driver pages through the scan.
        found = (
            bytes(row.key)
            for row in self._read("select_successor_first_rows")
            if row.key[24:] == bytes(8) and row.seq <= sequence
        )
        return sorted(found)

    # ------------------------------------------------------------------ NFTs

    def fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        check_key(token_id, "NFT token ID")
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        state = self._read("select_nft", token_id, sequence)
        uri = self._read("select_nft_uri", token_id, sequence)
        if not state:
            return None
        row = state[0]
        return NFT(
            token_id,
            row.sequence,
            row.owner,
            (uri[0].uri or b"") if uri else None,
            bool(row.is_burned),
        )

    def fetch_nft_transactions(
        self,
        token_id: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        check_key(token_id, "NFT token ID")
        return self._history_page("nft_tx", token_id, limit=limit, forward=forward, cursor=cursor)

    def fetch_nfts_by_issuer(
        self,
        issuer: bytes,
        taxon: int | None,
        sequence: int,
        limit: int,
        cursor: bytes | None = None,
    ) -> NFTsAndCursor:
        check_key(issuer, "issuer", 20)
        check_limit(limit)
        check_sequence(sequence)
        start = check_key(cursor, "cursor") if cursor is not None else bytes(32)
        if taxon is not None:
            check_sequence(taxon, "taxon")
            rows = self._read("select_nfts_by_issuer_taxon", issuer, taxon, start, limit)
        else:
            start_taxon = nft_taxon(start) if cursor is not None else 0
            rows = self._read("select_nfts_by_issuer", issuer, start_taxon, start, limit)
        token_ids = [row.token_id for row in rows]
        nfts = tuple(nft for nft in (self.fetch_nft(token, sequence) for token in token_ids) if nft)
        return NFTsAndCursor(nfts, token_ids[-1] if len(token_ids) == limit else None)

    # ------------------------------------------------------------------ writes

    def write_ledger(self, header: LedgerHeader, blob: bytes) -> None:
        stored = stored_header_blob(header, blob)
        self._write("insert_ledger", header.sequence, stored)
        self._write("insert_ledger_hash", header.hash, header.sequence)

    def write_ledger_object(self, key: bytes, sequence: int, blob: bytes) -> None:
        check_key(key)
        check_sequence(sequence)
        if self._range is not None:
            self._write("insert_diff", sequence, key)
        self._write("insert_object", key, sequence, bytes(blob))

    def write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        check_key(key)
        check_key(next_key, "next key")
        check_sequence(sequence)
        self._write("insert_successor", key, sequence, next_key)

    def write_transaction(
        self,
        tx_hash: bytes,
        sequence: int,
        date: int,
        transaction: bytes,
        metadata: bytes,
    ) -> None:
        check_key(tx_hash, "transaction hash")
        check_sequence(sequence)
        self._write("insert_ledger_transaction", sequence, tx_hash)
        self._write(
            "insert_transaction", tx_hash, sequence, date, bytes(transaction), bytes(metadata)
        )

    def write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        for record in data:
            check_key(record.tx_hash, "transaction hash")
            seq_idx = (record.ledger_sequence, record.transaction_index)
            for account in record.accounts:
                check_key(account, "account", 20)
                self._write("insert_account_tx", account, seq_idx, record.tx_hash)

    def write_nfts(self, data: Sequence[NFTsData]) -> None:
        for record in data:
            check_key(record.token_id, "NFT token ID")
            if record.only_uri_changed:
                self._write(
                    "insert_nft_uri", record.token_id, record.ledger_sequence, record.uri or b""
                )
                continue
            check_key(record.owner, "NFT owner", 20)
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

    def write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        for record in data:
            check_key(record.token_id, "NFT token ID")
            check_key(record.tx_hash, "transaction hash")
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
        from cassandra import OperationTimedOut, WriteTimeout

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
