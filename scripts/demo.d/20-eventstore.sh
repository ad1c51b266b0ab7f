# Event store: the VAAs into the Bigtable emulator, then the queries.
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
events() { chainloom events --project demo --instance demo --table demo-events "$@"; }
events init
echo "-- storing the VAAs (copies are idempotent, conflicts are kept and reported):"
events put --guardian-set dev - < vaas.txt
echo "-- Ethereum's first messages by sequence:"
events scan --chain ethereum --limit 3 --families TokenTransferPayload,TokenTransferDetails
echo "-- the newest Solana messages:"
events recent --chain solana --limit 3
