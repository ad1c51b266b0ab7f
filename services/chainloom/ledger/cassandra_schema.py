"""The ledger's Cassandra schema: Clio's keyspace, tables and statements, as CQL text.

Kept apart from the backend that writes through it (as Clio keeps ``Schema.hpp`` apart from its
backend), so whoever needs the tables (the backend, the operator creating a BackendTable's
keyspace, tests checking what exists) imports the schema, not the adapter. Pure text: no
driver, no connection (those are :mod:`chainloom.ledger.cassandra_session`).
"""

from __future__ import annotations

from collections.abc import Mapping

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
    "mp_token_holders",
)
"""The 14 tables of Clio's ``Schema.hpp``, in its order."""


def replication_map(replication: Mapping[str, str]) -> str:
    """A keyspace's ``replication`` as a CQL map literal (names and values are checked by the
    settings: letters, digits, ``_ . -``)."""
    return "{" + ", ".join(f"'{key}': '{value}'" for key, value in replication.items()) + "}"


def schema_statements(keyspace: str, replication: Mapping[str, str], prefix: str = "") -> list[str]:
    """``CREATE KEYSPACE`` and the 14 ``CREATE TABLE`` statements of Clio's ``Schema.hpp``;
    ``replication`` is the keyspace's map (``{'class': 'SimpleStrategy', ...}``)."""
    t = f"{keyspace}.{prefix}"
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
        f"{replication_map(replication)} AND durable_writes = true",
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
        f"CREATE TABLE IF NOT EXISTS {t}mp_token_holders (mpt_id blob, holder blob, "
        "PRIMARY KEY (mpt_id, holder)) WITH CLUSTERING ORDER BY (holder ASC)",
    ]


def queries(t: str) -> dict[str, str]:
    """Every prepared statement (as Clio's ``Schema.hpp`` has them), tables prefixed ``t``."""
    return {name: query.replace("{t}", t) for name, query in QUERY_TEMPLATES.items()}


QUERY_TEMPLATES = {
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
    "insert_mpt_holder": "INSERT INTO {t}mp_token_holders (mpt_id, holder) VALUES (?, ?)",
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
    "select_mpt_holders": "SELECT holder FROM {t}mp_token_holders "
    "WHERE mpt_id = ? AND holder > ? LIMIT ?",
    "select_ledger_by_hash": "SELECT sequence FROM {t}ledger_hashes WHERE hash = ? LIMIT 1",
    "select_ledger": "SELECT header FROM {t}ledgers WHERE sequence = ?",
    "select_latest": "SELECT sequence FROM {t}ledger_range WHERE is_latest = true",
    "select_range": "SELECT is_latest, sequence FROM {t}ledger_range",
}
"""Statement texts; ``{t}`` becomes ``keyspace.prefix``."""
