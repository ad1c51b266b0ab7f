# Wormhole core: generate signed VAAs with the deterministic dev guardians, decode and verify.
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
chainloom vaa guardian-set --source dev > dev-sets.json
chainloom-dev vaa generate --count 600 --seed 42 > vaas.txt
echo "generated $(wc -l < vaas.txt) signed VAAs (a mainnet-like mix, with guardian copies and conflicts)"
echo "-- the first one, decoded and verified (signatures left out):"
head -n 1 vaas.txt > first.txt
chainloom vaa decode --verify --guardian-set dev - < first.txt |
  python -c 'import json, sys; v = json.load(sys.stdin); v.pop("signatures"); print(json.dumps(v, indent=2))'

