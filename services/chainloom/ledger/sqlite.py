"""The embedded ledger history backend: one SQLite file (stdlib ``sqlite3``, WAL).

Why SQLite as the default: a laptop or a demo should not need a Cassandra cluster to load and
walk a few thousand ledgers. The tables are the Cassandra ones column for column (``seq_idx``
tuples become two integer columns), so the two backends answer the conformance suite alike.

The range fence is simpler here than in Cassandra, and stronger: one ledger's writes share one
SQLite transaction (begun by the first write, ``BEGIN IMMEDIATE``), and ``finish_writes`` runs
the same two compare-and-set updates of ``ledger_range`` inside it before ``COMMIT``. A crash
before the commit leaves nothing behind; a second writer waits for the first one's transaction
(``busy_timeout``), then finds the range moved, rolls its rows back and returns False.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from chainloom.ledger.backend import (
    BackendInterface,
    check_key,
    check_limit,
    check_sequence,
    range_from_rows,
    stored_header_blob,
)
from chainloom.ledger.config import SqliteSettings
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

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
  key BLOB NOT NULL, sequence INTEGER NOT NULL, object BLOB NOT NULL,
  PRIMARY KEY (key, sequence)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactions (
  hash BLOB PRIMARY KEY, ledger_sequence INTEGER NOT NULL, date INTEGER NOT NULL,
  "transaction" BLOB NOT NULL, metadata BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_transactions (
  ledger_sequence INTEGER NOT NULL, hash BLOB NOT NULL,
  PRIMARY KEY (ledger_sequence, hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS successor (
  key BLOB NOT NULL, seq INTEGER NOT NULL, next BLOB NOT NULL,
  PRIMARY KEY (key, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS diff (
  seq INTEGER NOT NULL, key BLOB NOT NULL,
  PRIMARY KEY (seq, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS account_tx (
  account BLOB NOT NULL, seq INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
  PRIMARY KEY (account, seq, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledgers (
  sequence INTEGER PRIMARY KEY, header BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_hashes (
  hash BLOB PRIMARY KEY, sequence INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_range (
  is_latest INTEGER PRIMARY KEY, sequence INTEGER);
CREATE TABLE IF NOT EXISTS nf_tokens (
  token_id BLOB NOT NULL, sequence INTEGER NOT NULL, owner BLOB NOT NULL,
  is_burned INTEGER NOT NULL,
  PRIMARY KEY (token_id, sequence)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS issuer_nf_tokens_v2 (
  issuer BLOB NOT NULL, taxon INTEGER NOT NULL, token_id BLOB NOT NULL,
  PRIMARY KEY (issuer, taxon, token_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nf_token_uris (
  token_id BLOB NOT NULL, sequence INTEGER NOT NULL, uri BLOB NOT NULL,
  PRIMARY KEY (token_id, sequence)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nf_token_transactions (
  token_id BLOB NOT NULL, seq INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
  PRIMARY KEY (token_id, seq, idx)) WITHOUT ROWID;
"""

# The range compare-and-set, as the Cassandra LWT "IF sequence IN (expected, null)".
_UPDATE_RANGE = (
    "INSERT INTO ledger_range (is_latest, sequence) VALUES (?, ?) "
    "ON CONFLICT (is_latest) DO UPDATE SET sequence = excluded.sequence "
    "WHERE ledger_range.sequence IS NULL OR ledger_range.sequence = ?"
)


# Transaction histories: (table, forward) -> query. Backward is newest first below the cursor;
# forward is "> cursor" for accounts and ">= cursor" for NFTs (Clio's rule). Both stop below
# the first uncommitted ledger.
_HISTORY_QUERIES = {
    ("account_tx", False): (
        "SELECT hash, seq, idx FROM account_tx WHERE account = ? AND (seq, idx) < (?, ?) "
        "AND (seq, idx) < (?, ?) ORDER BY seq DESC, idx DESC LIMIT ?"
    ),
    ("account_tx", True): (
        "SELECT hash, seq, idx FROM account_tx WHERE account = ? AND (seq, idx) > (?, ?) "
        "AND (seq, idx) < (?, ?) ORDER BY seq ASC, idx ASC LIMIT ?"
    ),
    ("nf_token_transactions", False): (
        "SELECT hash, seq, idx FROM nf_token_transactions WHERE token_id = ? "
        "AND (seq, idx) < (?, ?) AND (seq, idx) < (?, ?) ORDER BY seq DESC, idx DESC LIMIT ?"
    ),
    ("nf_token_transactions", True): (
        "SELECT hash, seq, idx FROM nf_token_transactions WHERE token_id = ? "
        "AND (seq, idx) >= (?, ?) AND (seq, idx) < (?, ?) ORDER BY seq ASC, idx ASC LIMIT ?"
    ),
}


class SqliteBackend(BackendInterface):
    """:class:`BackendInterface` on one SQLite file."""

    def __init__(self, config: SqliteSettings, *, read_only: bool = False) -> None:
        super().__init__()
        self._config = config
        self._read_only = read_only
        self._lock = threading.RLock()
        self._in_transaction = False
        path = Path(config.path)
        try:
            if read_only:
                self._db = sqlite3.connect(
                    f"file:{path}?mode=ro",
                    uri=True,
                    timeout=config.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(
                    path,
                    timeout=config.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(SCHEMA)
        except sqlite3.Error as error:
            raise BackendError(f"cannot open the SQLite ledger database {path}: {error}") from error

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as error:
                raise BackendError(f"SQLite read failed ({self._config.path}): {error}") from error

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        if self._read_only:
            raise BackendError(f"the ledger database {self._config.path} was opened read-only")
        with self._lock:
            try:
                if not self._in_transaction:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._in_transaction = True
                yield self._db
            except sqlite3.Error as error:
                raise BackendError(f"SQLite write failed ({self._config.path}): {error}") from error

    def _do_fetch_ledger_range(self) -> LedgerRange | None:
        with self._reading() as db:
            rows = dict(db.execute("SELECT is_latest, sequence FROM ledger_range").fetchall())
        return range_from_rows(rows.get(0), rows.get(1))

    # ------------------------------------------------------------------ ledgers

    def fetch_ledger_by_sequence(self, sequence: int) -> LedgerHeader | None:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        with self._reading() as db:
            row = db.execute(
                "SELECT header FROM ledgers WHERE sequence = ?", (sequence,)
            ).fetchone()
        return None if row is None else LedgerHeader.parse(row[0])

    def fetch_ledger_by_hash(self, ledger_hash: bytes) -> LedgerHeader | None:
        check_key(ledger_hash, "ledger hash")
        with self._reading() as db:
            row = db.execute(
                "SELECT sequence FROM ledger_hashes WHERE hash = ?", (ledger_hash,)
            ).fetchone()
        return None if row is None else self.fetch_ledger_by_sequence(row[0])

    def fetch_latest_ledger_sequence(self) -> int | None:
        with self._reading() as db:
            row = db.execute("SELECT sequence FROM ledger_range WHERE is_latest = 1").fetchone()
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ transactions

    def fetch_transaction(self, tx_hash: bytes) -> TransactionAndMetadata | None:
        check_key(tx_hash, "transaction hash")
        with self._reading() as db:
            row = db.execute(
                'SELECT "transaction", metadata, ledger_sequence, date FROM transactions '
                "WHERE hash = ?",
                (tx_hash,),
            ).fetchone()
        if row is None or not self.is_visible(row[2]):
            return None
        return TransactionAndMetadata(row[0], row[1], row[2], row[3])

    def fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        return [self.fetch_transaction(tx_hash) for tx_hash in hashes]

    def fetch_all_transaction_hashes_in_ledger(self, sequence: int) -> list[bytes]:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return []
        with self._reading() as db:
            rows = db.execute(
                "SELECT hash FROM ledger_transactions WHERE ledger_sequence = ? ORDER BY hash",
                (sequence,),
            ).fetchall()
        return [row[0] for row in rows]

    def _history_page(
        self,
        table: str,
        partition: bytes,
        *,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None,
        inclusive_forward: bool,
    ) -> TransactionsAndCursor:
        check_limit(limit)
        current = self.fetch_ledger_range()
        if current is None:
            return TransactionsAndCursor((), None)
        ceiling = (current.max_sequence + 1, 0)  # rows of uncommitted ledgers stay hidden
        if forward:
            start = (cursor.ledger_sequence, cursor.transaction_index) if cursor else (0, 0)
        else:
            start = (
                (cursor.ledger_sequence, cursor.transaction_index)
                if cursor
                else (UINT32_MAX, UINT32_MAX)
            )
            start = min(start, ceiling)
        query = _HISTORY_QUERIES[table, forward]
        with self._reading() as db:
            rows = db.execute(query, (partition, *start, *ceiling, limit)).fetchall()
        found = self.fetch_transactions([row[0] for row in rows])
        transactions = tuple(tx for tx in found if tx is not None)
        next_cursor = None
        if len(rows) == limit:
            last_seq, last_idx = rows[-1][1], rows[-1][2]
            if forward and inclusive_forward:
                last_idx += 1
            next_cursor = TransactionsCursor(last_seq, last_idx)
        return TransactionsAndCursor(transactions, next_cursor)

    def fetch_account_transactions(
        self,
        account: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        check_key(account, "account", 20)
        return self._history_page(
            "account_tx",
            account,
            limit=limit,
            forward=forward,
            cursor=cursor,
            inclusive_forward=False,
        )

    # ------------------------------------------------------------------ state

    def fetch_ledger_object(self, key: bytes, sequence: int) -> bytes | None:
        check_key(key)
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        with self._reading() as db:
            row = db.execute(
                "SELECT object FROM objects WHERE key = ? AND sequence <= ? "
                "ORDER BY sequence DESC LIMIT 1",
                (key, sequence),
            ).fetchone()
        return row[0] if row is not None and row[0] else None

    def fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        return [self.fetch_ledger_object(key, sequence) or b"" for key in keys]

    def fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        check_key(key)
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        with self._reading() as db:
            row = db.execute(
                "SELECT next FROM successor WHERE key = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
                (key, sequence),
            ).fetchone()
        if row is None or row[0] == LAST_KEY:
            return None
        return bytes(row[0])

    def fetch_ledger_diff(self, sequence: int) -> list[LedgerObject]:
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return []
        with self._reading() as db:
            keys = [
                row[0]
                for row in db.execute(
                    "SELECT key FROM diff WHERE seq = ? ORDER BY key", (sequence,)
                )
            ]
        blobs = self.fetch_ledger_objects(keys, sequence)
        return [LedgerObject(key, blob) for key, blob in zip(keys, blobs, strict=True)]

    def _do_fetch_book_bases(self, sequence: int) -> list[bytes]:
        with self._reading() as db:
            rows = db.execute(
                "SELECT DISTINCT key FROM successor "
                "WHERE substr(key, 25) = zeroblob(8) AND seq <= ? ORDER BY key",
                (sequence,),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    # ------------------------------------------------------------------ NFTs

    def fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
        check_key(token_id, "NFT token ID")
        check_sequence(sequence)
        if not self.is_visible(sequence):
            return None
        with self._reading() as db:
            row = db.execute(
                "SELECT sequence, owner, is_burned FROM nf_tokens WHERE token_id = ? "
                "AND sequence <= ? ORDER BY sequence DESC LIMIT 1",
                (token_id, sequence),
            ).fetchone()
            if row is None:
                return None
            uri = db.execute(
                "SELECT uri FROM nf_token_uris WHERE token_id = ? AND sequence <= ? "
                "ORDER BY sequence DESC LIMIT 1",
                (token_id, sequence),
            ).fetchone()
        return NFT(token_id, row[0], row[1], None if uri is None else uri[0], bool(row[2]))

    def fetch_nft_transactions(
        self,
        token_id: bytes,
        limit: int,
        forward: bool,
        cursor: TransactionsCursor | None = None,
    ) -> TransactionsAndCursor:
        check_key(token_id, "NFT token ID")
        return self._history_page(
            "nf_token_transactions",
            token_id,
            limit=limit,
            forward=forward,
            cursor=cursor,
            inclusive_forward=True,
        )

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
        with self._reading() as db:
            if taxon is not None:
                check_sequence(taxon, "taxon")
                rows = db.execute(
                    "SELECT token_id FROM issuer_nf_tokens_v2 WHERE issuer = ? AND taxon = ? "
                    "AND token_id > ? ORDER BY taxon ASC, token_id ASC LIMIT ?",
                    (issuer, taxon, start, limit),
                ).fetchall()
            else:
                start_taxon = nft_taxon(start) if cursor is not None else 0
                rows = db.execute(
                    "SELECT token_id FROM issuer_nf_tokens_v2 WHERE issuer = ? "
                    "AND (taxon, token_id) > (?, ?) ORDER BY taxon ASC, token_id ASC LIMIT ?",
                    (issuer, start_taxon, start, limit),
                ).fetchall()
        token_ids = [row[0] for row in rows]
        nfts = tuple(nft for nft in (self.fetch_nft(token, sequence) for token in token_ids) if nft)
        return NFTsAndCursor(nfts, token_ids[-1] if len(token_ids) == limit else None)

    # ------------------------------------------------------------------ writes

    def write_ledger(self, header: LedgerHeader, blob: bytes) -> None:
        stored = stored_header_blob(header, blob)
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO ledgers (sequence, header) VALUES (?, ?)",
                (header.sequence, stored),
            )
            db.execute(
                "INSERT OR REPLACE INTO ledger_hashes (hash, sequence) VALUES (?, ?)",
                (header.hash, header.sequence),
            )

    def write_ledger_object(self, key: bytes, sequence: int, blob: bytes) -> None:
        check_key(key)
        check_sequence(sequence)
        with self._writing() as db:
            if self._range is not None:
                db.execute("INSERT OR REPLACE INTO diff (seq, key) VALUES (?, ?)", (sequence, key))
            db.execute(
                "INSERT OR REPLACE INTO objects (key, sequence, object) VALUES (?, ?, ?)",
                (key, sequence, bytes(blob)),
            )

    def write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        check_key(key)
        check_key(next_key, "next key")
        check_sequence(sequence)
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO successor (key, seq, next) VALUES (?, ?, ?)",
                (key, sequence, next_key),
            )

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
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO ledger_transactions (ledger_sequence, hash) VALUES (?, ?)",
                (sequence, tx_hash),
            )
            db.execute(
                'INSERT OR REPLACE INTO transactions (hash, ledger_sequence, date, "transaction", '
                "metadata) VALUES (?, ?, ?, ?, ?)",
                (tx_hash, sequence, date, bytes(transaction), bytes(metadata)),
            )

    def write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        rows = []
        for record in data:
            check_key(record.tx_hash, "transaction hash")
            for account in record.accounts:
                check_key(account, "account", 20)
                rows.append(
                    (account, record.ledger_sequence, record.transaction_index, record.tx_hash)
                )
        with self._writing() as db:
            db.executemany(
                "INSERT OR REPLACE INTO account_tx (account, seq, idx, hash) VALUES (?, ?, ?, ?)",
                rows,
            )

    def write_nfts(self, data: Sequence[NFTsData]) -> None:
        tokens, issuers, uris = [], [], []
        for record in data:
            check_key(record.token_id, "NFT token ID")
            if record.only_uri_changed:
                uris.append((record.token_id, record.ledger_sequence, record.uri or b""))
                continue
            check_key(record.owner, "NFT owner", 20)
            tokens.append(
                (record.token_id, record.ledger_sequence, record.owner, int(record.is_burned))
            )
            if record.uri is not None:
                issuers.append((record.issuer, record.taxon, record.token_id))
                uris.append((record.token_id, record.ledger_sequence, record.uri))
        with self._writing() as db:
            db.executemany(
                "INSERT OR REPLACE INTO nf_tokens (token_id, sequence, owner, is_burned) "
                "VALUES (?, ?, ?, ?)",
                tokens,
            )
            db.executemany(
                "INSERT OR REPLACE INTO issuer_nf_tokens_v2 (issuer, taxon, token_id) "
                "VALUES (?, ?, ?)",
                issuers,
            )
            db.executemany(
                "INSERT OR REPLACE INTO nf_token_uris (token_id, sequence, uri) VALUES (?, ?, ?)",
                uris,
            )

    def write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        rows = []
        for record in data:
            check_key(record.token_id, "NFT token ID")
            check_key(record.tx_hash, "transaction hash")
            rows.append(
                (record.token_id, record.ledger_sequence, record.transaction_index, record.tx_hash)
            )
        with self._writing() as db:
            db.executemany(
                "INSERT OR REPLACE INTO nf_token_transactions (token_id, seq, idx, hash) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )

    def _do_finish_writes(self, sequence: int) -> bool:
        with self._writing() as db:
            try:
                if self._range is None:
                    # First ledger ever: the min row, "IF sequence IN (seq, null)".
                    db.execute(_UPDATE_RANGE, (0, sequence, sequence))
                applied = db.execute(_UPDATE_RANGE, (1, sequence, sequence - 1)).rowcount == 1
                if applied:
                    db.execute("COMMIT")
                else:
                    db.execute("ROLLBACK")
            finally:
                self._in_transaction = self._db.in_transaction
        return applied

    def abandon_writes(self) -> None:
        """Roll back the ledger being written (what a crash before ``finish_writes`` does)."""
        with self._lock:
            if self._in_transaction:
                self._db.execute("ROLLBACK")
                self._in_transaction = False

    def close(self) -> None:
        with self._lock:
            try:
                self.abandon_writes()
            finally:
                self._db.close()
