# Relayer: the spy server replays the VAAs to the listener, which validates and queues the
# transfers in Redis; one worker per target chain redeems them on a simulated chain.
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
# The spy server and the listener run in the background for this step only.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
chains="1 2 4 5 6 23 24 30"
# A database of its own (15), emptied first, so the demo can run again on a running stack.
redis_url="${CHAINLOOM_REDIS__URL%/*}/15"
python -c 'import redis, sys; redis.Redis.from_url(sys.argv[1]).flushdb()' "$redis_url"
export CHAINLOOM_REDIS__URL=$redis_url
{
  echo "redis: {url: '$redis_url'}"
  echo "guardian_sets: {source: dev-sets.json}"
  echo "known_emitters:"
  for c in $chains; do echo "  - {chain: $c, address: '0x0290fb167208af455bb137780163b7b7a9a10c16'}"; done
  echo "target_chains: [${chains// /, }]"
  echo 'tokens: [{chain: "*", address: "*", min_fee: 0}]'
  echo "rest: {port: 0}"
} > relayer.yaml
python -c 'import secrets; print(secrets.token_hex(32))' > wallet.key
chmod 600 wallet.key
spy_port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
chainloom-dev spy serve --listen "127.0.0.1:$spy_port" --file vaas.txt --lossless \
  --wait-for-subscribers 1 > spy.log 2>&1 &
chainloom relayer listen --config relayer.yaml --spy "127.0.0.1:$spy_port" > listener.log 2>&1 &
# Wait until the listener has queued the spy's whole replay (Incoming stops growing).
incoming() { chainloom relayer queues --json | python -c 'import json, sys; print(sum(json.load(sys.stdin)["tables"]["incoming"].values()))'; }
previous=-1
for _ in $(seq 120); do
  sleep 1
  now=$(incoming)
  if [ "$now" -gt 0 ] && [ "$now" = "$previous" ]; then break; fi
  previous=$now
done
echo "-- queued by the listener:"
chainloom relayer queues
for c in $chains; do
  chainloom relayer work --chain "$c" --wallet-file wallet.key --stop-when-idle 2 > "worker-$c.log" 2>&1 &
done
wait_for_workers() { for job in $(jobs -p | tail -n 8); do wait "$job" || true; done; }
wait_for_workers
echo "-- after the workers (Incoming empty; COMPLETED counts the redeemed transfers):"
chainloom relayer queues
