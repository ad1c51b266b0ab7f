# Kubernetes: the chart installed on the local node (its operator running in a pod), one
# resource of each kind applied, and `kubectl get` showing them Ready. The node needs root
# (docs/stack.md); without one this step says so in one line and is skipped.
set -euo pipefail
repo=$PWD
cd "$CHAINLOOM_DEMO_DIR"
skip() { echo "kubernetes: skipped: $*"; exit 0; }
# stack status exits 1 when any component is unhealthy: only the rows matter here.
status_json() { chainloom-dev stack status --json 2>/dev/null || true; }
node_up() {
  status_json |
    python -c 'import json, sys; sys.exit(not any(r["name"] == "kubelet" and r["healthy"] for r in json.load(sys.stdin)))'
}
if ! node_up; then
  [ "$(id -u)" = 0 ] || skip "the local node needs root (containerd, iptables, cgroups; docs/stack.md)"
  echo "starting the local node (chainloom-dev stack up --node: ~1 min once its parts are cached, ~10 min the first time)"
  chainloom-dev stack up --node > node-up.log 2>&1 || skip "the local node could not start: $(tail -n 1 node-up.log)"
  eval "$(chainloom-dev stack env)"
fi
image=${CHAINLOOM_NODE_IMAGE:-chainloom:dev}
if [ "$image" = chainloom:dev ] && status_json | grep -q "source changed since"; then
  echo "rebuilding chainloom:dev from this checkout (chainloom-dev stack image)"
  chainloom-dev stack image > image.log 2>&1
fi
ns=chainloom-demo
release=demo
# Pods sit on the node's bridge; the stack's servers listen on the host's loopback. socat on
# the node's IP (the bridge's gateway) relays to them, as the stack's apiserver-relay does.
gateway=$(kubectl get node localhost -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
free_port() { python -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$gateway"; }
relay() {  # relay PORT_ON_GATEWAY LOOPBACK_HOST:PORT
  socat "TCP-LISTEN:$1,bind=$gateway,fork,reuseaddr" "TCP:$2" &
}
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
redis_address=${CHAINLOOM_REDIS__URL#redis://}
redis_port=$(free_port); relay "$redis_port" "${redis_address%%/*}"
bigtable_port=$(free_port); relay "$bigtable_port" "$BIGTABLE_EMULATOR_HOST"
spy_port=$(free_port)
# A spy replaying the demo's VAAs, for the relayer's listener and the indexer to subscribe to.
chainloom-dev spy serve --listen "$gateway:$spy_port" --file vaas.txt > k8s-spy.log 2>&1 &

started=$(date +%s)
kubectl delete namespace "$ns" --ignore-not-found --wait=true --timeout=180s > /dev/null
kubectl create namespace "$ns" > /dev/null
kubectl apply --server-side --force-conflicts --field-manager=chainloom-demo -f "$repo/crds/" > /dev/null
echo "-- helm install $release charts/chainloom (image $image, the operator on the node)"
helm uninstall "$release" --namespace "$ns" --wait > /dev/null 2>&1 || true
helm install "$release" "$repo/charts/chainloom" --namespace "$ns" \
  --set "image.repository=${image%:*}" --set "image.tag=${image##*:}" --set image.pullPolicy=Never \
  --set "operator.namespaces={$ns}" --set operator.replicas=1 --set operator.recheckInterval=10 \
  --set-json 'operator.nodeSelector={"chainloom.io/node": "real"}' \
  --set "config.bigtable.emulatorHost=$gateway:$bigtable_port" \
  --skip-crds --wait --timeout 300s > /dev/null  # crds/ applied above
kubectl -n "$ns" get pods -o wide

python -c 'import secrets; print(secrets.token_hex(32))' > k8s-wallet.key
kubectl -n "$ns" create secret generic eth-hot-1 --from-file=key=k8s-wallet.key > /dev/null
rm k8s-wallet.key
kubectl -n "$ns" apply -f - > /dev/null <<EOF
apiVersion: chainloom.io/v1alpha1
kind: BackendTable
metadata: {name: events}
spec:
  backend: bigtable
  bigtable: {table: demo-events}
---
apiVersion: chainloom.io/v1alpha1
kind: IngestPipeline
metadata: {name: live}
spec:
  mode: streaming
  sink: events
  streaming:
    replicas: 1
    image: $image
    spy: {address: "$gateway:$spy_port"}
    env: {BIGTABLE_EMULATOR_HOST: "$gateway:$bigtable_port"}
    guardian_sets: {source: devnet}
    placement: {node_selector: {chainloom.io/node: real}}
---
apiVersion: chainloom.io/v1alpha1
kind: RelayerPool
metadata: {name: demo}
spec:
  image: $image
  image_pull_policy: Never
  spy_address: "$gateway:$spy_port"
  redis: {url: "redis://$gateway:$redis_port/14"}
  validation: {guardian_sets: {source: devnet}, known_emitters: [devnet]}
  placement: {node_selector: {chainloom.io/node: real}}
  chains:
    - chain: ethereum
      wallets: [{name: hot-1, secret_ref: {name: eth-hot-1}}]
EOF
echo "-- applied a BackendTable, a streaming IngestPipeline and a RelayerPool; waiting for Ready"
kubectl -n "$ns" wait --for=condition=Ready --timeout=300s backendtable/events ingestpipeline/live relayerpool/demo > /dev/null
kubectl -n "$ns" get ingestpipelines,relayerpools,backendtables
kubectl -n "$ns" get pods
echo "kubernetes: ready $(($(date +%s) - started)) s after the install started"
# Leave nothing behind: the release (its ClusterRole is cluster-wide) and the namespace.
helm uninstall "$release" --namespace "$ns" --wait > /dev/null
kubectl delete namespace "$ns" --wait=false > /dev/null
