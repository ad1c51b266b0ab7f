# Relayer on real EVM chains: two geth dev chains stand for Wormhole chains 2 and 4; the
# project's token bridge is deployed on each, a few signed transfers go listener -> Redis -> one
# EVM worker per chain -> on-chain, and the recipients' balances of the wrapped token are read
# back from the chains. The first run builds geth from the Go module proxy (~20 min, cached);
# CHAINLOOM_DEMO_EVM=0 skips this step.
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
if [ "${CHAINLOOM_DEMO_EVM:-1}" = 0 ]; then
  echo "skipped (CHAINLOOM_DEMO_EVM=0)"
  exit 0
fi
if ! python -c 'import sys; from chainloom_dev.stack.components.evm import geth_built; sys.exit(not geth_built())'; then
  echo "-- building geth once (Go module proxy, ~20 min; cached for every later run)"
fi
# Stop at the end only what this step started.
geth_was_up=0
chainloom-dev stack status --json | python -c 'import json, sys; rows = json.load(sys.stdin); sys.exit(not all(any(r["name"] == n and r["healthy"] for r in rows) for n in ("geth-2", "geth-4")))' && geth_was_up=1
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  if [ "$geth_was_up" = 0 ]; then chainloom-dev stack down --only geth-2,geth-4 >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
[ "$geth_was_up" = 1 ] || chainloom-dev stack up --only geth
eval "$(chainloom-dev stack env)"
python -c 'import secrets; print(secrets.token_hex(32))' > evm-wallet.key
chmod 600 evm-wallet.key
wallet=$(python -c 'import sys; from eth_account import Account; print(Account.from_key(open(sys.argv[1]).read().strip()).address)' evm-wallet.key)
chainloom evm deploy --rpc "$CHAINLOOM_EVM_RPC_2" --chain 2 --fund "$wallet" --json > deploy-2.json
chainloom evm deploy --rpc "$CHAINLOOM_EVM_RPC_4" --chain 4 --fund "$wallet" --json > deploy-4.json
echo "-- token bridges deployed: chain 2 at $(python -c 'import json; print(json.load(open("deploy-2.json"))["token_bridge"])'), chain 4 at $(python -c 'import json; print(json.load(open("deploy-4.json"))["token_bridge"])')"
# Six transfers of one token (native to chain 6) to three recipients, signed by the dev guardians
# as the devnet token bridges of chains 2 and 4 (the emitters the deployment registered).
python - <<'PY'
import json
import time
from chainloom_dev.sim.dev_guardians import DevGuardians
guardians = DevGuardians()
recipients = ["0x" + f"{n:040x}" for n in (0xA11CE, 0xB0B, 0xCA401)]
token = bytes(12) + bytes.fromhex("b97ef9ef8734c71904d8002f8b6bc66dd9c48a6e")
first = time.time_ns()
with open("evm-vaas.txt", "w") as out:
    for n in range(6):
        target, to, amount = (2, 4)[n % 2], recipients[n % 3], (n + 1) * 10**8
        payload = (b"\x01" + amount.to_bytes(32, "big") + token + (6).to_bytes(2, "big")
                   + bytes(12) + bytes.fromhex(to[2:]) + target.to_bytes(2, "big")
                   + (10**6).to_bytes(32, "big"))
        vaa = guardians.sign(emitter_chain=6 - target, emitter_address=guardians.token_bridge_emitter,
                             sequence=first + n, payload=payload)
        out.write(vaa.to_bytes().hex() + "\n")
with open("evm-sets.json", "w") as out:
    json.dump(guardians.sets().to_json(), out)
with open("evm-recipients.json", "w") as out:
    json.dump(recipients, out)
PY
redis_url="${CHAINLOOM_REDIS__URL%/*}/14"
python -c 'import redis, sys; redis.Redis.from_url(sys.argv[1]).flushdb()' "$redis_url"
export CHAINLOOM_REDIS__URL=$redis_url
python - <<'PY' > relayer-evm.json
import json
deployments = [json.load(open(f"deploy-{c}.json")) for c in (2, 4)]
emitter = "0x0000000000000000000000000290fb167208af455bb137780163b7b7a9a10c16"
print(json.dumps({
    "guardian_sets": {"source": "evm-sets.json"},
    "known_emitters": [{"chain": c, "address": emitter} for c in (2, 4)],
    "target_chains": [2, 4],
    "tokens": [{"chain": "*", "address": "*", "min_fee": 0}],
    "rest": {"port": 0},
    "worker": {"adapter": "evm", "recheck": 0.1, "idle_sleep": 0.05},
    "evm_chains": [{"chain": d["wormhole_chain"], "rpc_url": d["rpc_url"],
                    "evm_chain_id": d["evm_chain_id"], "token_bridge": d["token_bridge"],
                    "confirmations": 1} for d in deployments],
}))
PY
spy_port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
chainloom-dev spy serve --listen "127.0.0.1:$spy_port" --file evm-vaas.txt --lossless \
  --wait-for-subscribers 1 > evm-spy.log 2>&1 &
chainloom relayer listen --config relayer-evm.json --spy "127.0.0.1:$spy_port" > evm-listener.log 2>&1 &
incoming() { chainloom relayer queues --json | python -c 'import json, sys; print(sum(json.load(sys.stdin)["tables"]["incoming"].values()))'; }
for _ in $(seq 60); do sleep 0.5; [ "$(incoming)" -ge 6 ] && break; done
echo "-- queued by the listener:"
chainloom relayer queues
for c in 2 4; do
  chainloom relayer work --config relayer-evm.json --chain "$c" --wallet-file evm-wallet.key \
    --stop-when-idle 2 > "evm-worker-$c.log" 2>&1 &
  workers="${workers:-} $!"
done
for job in $workers; do wait "$job" || true; done
echo "-- after the EVM workers (COMPLETED counts the transfers redeemed on geth):"
chainloom relayer queues
echo "-- recipients' balances of the wrapped token (8 decimals, read from the chains):"
python - <<'PY'
import json
from web3 import Web3
from chainloom.evm.compile import contract
bridge_abi, _ = contract("ChainloomTokenBridge")
token_abi, _ = contract("ChainloomWrappedToken")
token = bytes(12) + bytes.fromhex("b97ef9ef8734c71904d8002f8b6bc66dd9c48a6e")
recipients = json.load(open("evm-recipients.json"))
for chain in (2, 4):
    deployment = json.load(open(f"deploy-{chain}.json"))
    w3 = Web3(Web3.HTTPProvider(deployment["rpc_url"]))
    bridge = w3.eth.contract(address=deployment["token_bridge"], abi=bridge_abi)
    wrapped = bridge.functions.wrappedAsset(6, token).call()
    balance = w3.eth.contract(address=wrapped, abi=token_abi).functions.balanceOf
    for to in recipients:
        owned = balance(Web3.to_checksum_address(to)).call() if int(wrapped, 16) else 0
        print(f"  chain {chain}  {to}  {owned / 10**8:12.8f}")
PY
