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

from chainloom.ledger.backend import BackendInterface, HistoryKind, range_from_rows
from chainloom.ledger.config import SqliteSettings
from chainloom.ledger.errors import BackendError, DatabaseFileError
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
CREATE TABLE IF NOT EXISTS mp_token_holders (
  mpt_id BLOB NOT NULL, holder BLOB NOT NULL,
  PRIMARY KEY (mpt_id, holder)) WITHOUT ROWID;
"""

# The range compare-and-set, as the Cassandra LWT "IF sequence IN (expected, null)".
_UPDATE_RANGE = (
    "INSERT INTO ledger_range (is_latest, sequence) VALUES (?, ?) "
    "ON CONFLICT (is_latest) DO UPDATE SET sequence = excluded.sequence "
    "WHERE ledger_range.sequence IS NULL OR ledger_range.sequence = ?"
)


# Transaction histories: (kind, forward) -> query. Backward is newest first below the cursor;
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
    ("nft_tx", False): (
        "SELECT hash, seq, idx FROM nf_token_transactions WHERE token_id = ? "
        "AND (seq, idx) < (?, ?) AND (seq, idx) < (?, ?) ORDER BY seq DESC, idx DESC LIMIT ?"
    ),
    ("nft_tx", True): (
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
            raise _database_error(
                error, f"cannot open the SQLite ledger database {path}"
            ) from error
        except OSError as error:  # its directory cannot be made (a file in the way, ...)
            raise DatabaseFileError(
                f"cannot open the SQLite ledger database {path}: {error.strerror or error}"
            ) from None

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as error:
                raise _database_error(error, f"SQLite read failed ({self._config.path})") from error

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
                raise _database_error(
                    error, f"SQLite write failed ({self._config.path})"
                ) from error

    def _fetch_ledger_range(self) -> LedgerRange | None:
        with self._reading() as db:
            rows = dict(db.execute("SELECT is_latest, sequence FROM ledger_range").fetchall())
        return range_from_rows(rows.get(0), rows.get(1))

    # ------------------------------------------------------------------ reads

    def _fetch_latest_ledger_sequence(self) -> int | None:
        with self._reading() as db:
            row = db.execute("SELECT sequence FROM ledger_range WHERE is_latest = 1").fetchone()
        return None if row is None else int(row[0])

    def _fetch_ledger_header(self, sequence: int) -> bytes | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT header FROM ledgers WHERE sequence = ?", (sequence,)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def _fetch_ledger_sequence(self, ledger_hash: bytes) -> int | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT sequence FROM ledger_hashes WHERE hash = ?", (ledger_hash,)
            ).fetchone()
        return None if row is None else int(row[0])

    def _fetch_transactions(self, hashes: Sequence[bytes]) -> list[TransactionAndMetadata | None]:
        found: list[TransactionAndMetadata | None] = []
        with self._reading() as db:
            for tx_hash in hashes:
                row = db.execute(
                    'SELECT "transaction", metadata, ledger_sequence, date FROM transactions '
                    "WHERE hash = ?",
                    (tx_hash,),
                ).fetchone()
                found.append(None if row is None else TransactionAndMetadata(*row))
        return found

    def _fetch_transaction_hashes(self, sequence: int) -> list[bytes]:
        with self._reading() as db:
            rows = db.execute(
                "SELECT hash FROM ledger_transactions WHERE ledger_sequence = ?", (sequence,)
            ).fetchall()
        return [row[0] for row in rows]

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
        with self._reading() as db:
            rows = db.execute(
                _HISTORY_QUERIES[kind, forward], (partition, *start, *ceiling, limit)
            ).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]

    def _fetch_ledger_objects(self, keys: Sequence[bytes], sequence: int) -> list[bytes]:
        blobs = []
        with self._reading() as db:
            for key in keys:
                row = db.execute(
                    "SELECT object FROM objects WHERE key = ? AND sequence <= ? "
                    "ORDER BY sequence DESC LIMIT 1",
                    (key, sequence),
                ).fetchone()
                blobs.append(row[0] or b"" if row is not None else b"")
        return blobs

    def _fetch_successor_key(self, key: bytes, sequence: int) -> bytes | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT next FROM successor WHERE key = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
                (key, sequence),
            ).fetchone()
        return None if row is None else bytes(row[0])

    def _fetch_diff_keys(self, sequence: int) -> list[bytes]:
        with self._reading() as db:
            return [row[0] for row in db.execute("SELECT key FROM diff WHERE seq = ?", (sequence,))]

    def _fetch_book_bases(self, sequence: int) -> list[bytes]:
        with self._reading() as db:
            rows = db.execute(
                "SELECT DISTINCT key FROM successor "
                "WHERE substr(key, 25) = zeroblob(8) AND seq <= ? ORDER BY key",
                (sequence,),
            ).fetchall()
        return [bytes(row[0]) for row in rows]

    # ------------------------------------------------------------------ NFTs

    def _fetch_nft(self, token_id: bytes, sequence: int) -> NFT | None:
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

    def _fetch_nft_ids_by_issuer(
        self, issuer: bytes, taxon: int, start: bytes, limit: int, *, one_taxon: bool
    ) -> list[bytes]:
        with self._reading() as db:
            if one_taxon:
                rows = db.execute(
                    "SELECT token_id FROM issuer_nf_tokens_v2 WHERE issuer = ? AND taxon = ? "
                    "AND token_id > ? ORDER BY taxon ASC, token_id ASC LIMIT ?",
                    (issuer, taxon, start, limit),
                ).fetchall()
            else:
                rows = db.execute(
                    "SELECT token_id FROM issuer_nf_tokens_v2 WHERE issuer = ? "
                    "AND (taxon, token_id) > (?, ?) ORDER BY taxon ASC, token_id ASC LIMIT ?",
                    (issuer, taxon, start, limit),
                ).fetchall()
        return [row[0] for row in rows]

    def _fetch_mpt_holder_accounts(self, mpt_id: bytes, after: bytes, limit: int) -> list[bytes]:
        with self._reading() as db:
            rows = db.execute(
                "SELECT holder FROM mp_token_holders WHERE mpt_id = ? AND holder > ? "
                "ORDER BY holder ASC LIMIT ?",
                (mpt_id, after, limit),
            ).fetchall()
        return [row[0] for row in rows]

    # ------------------------------------------------------------------ writes

    def _write_ledger(self, header: LedgerHeader, stored: bytes) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO ledgers (sequence, header) VALUES (?, ?)",
                (header.sequence, stored),
            )
            db.execute(
                "INSERT OR REPLACE INTO ledger_hashes (hash, sequence) VALUES (?, ?)",
                (header.hash, header.sequence),
            )

    def _write_ledger_object(
        self, key: bytes, sequence: int, blob: bytes, *, with_diff: bool
    ) -> None:
        with self._writing() as db:
            if with_diff:
                db.execute("INSERT OR REPLACE INTO diff (seq, key) VALUES (?, ?)", (sequence, key))
            db.execute(
                "INSERT OR REPLACE INTO objects (key, sequence, object) VALUES (?, ?, ?)",
                (key, sequence, blob),
            )

    def _write_successor(self, key: bytes, sequence: int, next_key: bytes) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO successor (key, seq, next) VALUES (?, ?, ?)",
                (key, sequence, next_key),
            )

    def _write_transaction(
        self, tx_hash: bytes, sequence: int, date: int, transaction: bytes, metadata: bytes
    ) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO ledger_transactions (ledger_sequence, hash) VALUES (?, ?)",
                (sequence, tx_hash),
            )
            db.execute(
                'INSERT OR REPLACE INTO transactions (hash, ledger_sequence, date, "transaction", '
                "metadata) VALUES (?, ?, ?, ?, ?)",
                (tx_hash, sequence, date, transaction, metadata),
            )

    def _write_account_transactions(self, data: Sequence[AccountTransactionsData]) -> None:
        rows = [
            (account, record.ledger_sequence, record.transaction_index, record.tx_hash)
            for record in data
            for account in record.accounts
        ]
        with self._writing() as db:
            db.executemany(
                "INSERT OR REPLACE INTO account_tx (account, seq, idx, hash) VALUES (?, ?, ?, ?)",
                rows,
            )

    def _write_mpt_holders(self, data: Sequence[MPTHolderData]) -> None:
        with self._writing() as db:
            db.executemany(
                "INSERT OR IGNORE INTO mp_token_holders (mpt_id, holder) VALUES (?, ?)",
                [(record.mpt_id, record.holder) for record in data],
            )

    def _write_nfts(self, data: Sequence[NFTsData]) -> None:
        tokens, issuers, uris = [], [], []
        for record in data:
            if record.only_uri_changed:
                uris.append((record.token_id, record.ledger_sequence, record.uri or b""))
                continue
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

    def _write_nft_transactions(self, data: Sequence[NFTTransactionsData]) -> None:
        rows = [
            (record.token_id, record.ledger_sequence, record.transaction_index, record.tx_hash)
            for record in data
        ]
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

    def _do_flush_writes(self) -> None:
        with self._lock:
            if not self._in_transaction:
                return
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                raise BackendError(f"SQLite write failed ({self._config.path}): {error}") from error
            finally:
                self._in_transaction = self._db.in_transaction

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


def _database_error(error: sqlite3.Error, what: str) -> BackendError | DatabaseFileError:
    """A locked or busy database is an outage (retry later); any other failure means the file
    itself cannot be used (a directory, unreadable, not a database), which is the caller's to
    fix."""
    text = str(error)
    if "locked" in text or "busy" in text:
        return BackendError(f"{what}: {text}")
    return DatabaseFileError(f"{what}: {text}")
