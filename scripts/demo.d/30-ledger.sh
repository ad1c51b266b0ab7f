# XRPL history: ledgers generated from ledger 38129's real state, loaded into SQLite and into
# Cassandra, then read back. Needs the shared vectors (../shared/vectors or $CHAINLOOM_VECTORS).
set -euo pipefail
vectors=${CHAINLOOM_VECTORS:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/vectors}
if [ ! -f "$vectors/xrpl_vectors.json" ]; then
  echo "skipped: ledger 38129's state is read from $vectors/xrpl_vectors.json, which is absent"
  exit 0
fi
cd "$CHAINLOOM_DEMO_DIR"
chainloom-dev ledger generate --from-state 38129 --ledgers 20 --txs-per-ledger 100 --seed 7 \
  --vectors "$vectors" --out ledgers.jsonl
echo "-- into SQLite:"
chainloom ledger load ledgers.jsonl --sqlite-path ledger.sqlite3 --quiet
chainloom ledger range --sqlite-path ledger.sqlite3
echo "-- into Cassandra:"
# The stack's node comes from `chainloom-dev stack env` (CHAINLOOM_DATABASE__CASSANDRA__*).
chainloom ledger load ledgers.jsonl --backend cassandra --keyspace demo_ledger --quiet
chainloom ledger range --backend cassandra --keyspace demo_ledger
echo "-- the first objects of the state at the newest ledger (a ledger page walk):"
chainloom ledger objects --at 38149 --limit 5 --sqlite-path ledger.sqlite3
