# Spark on Kubernetes: vaa-ingest as a real SparkApplication. The stack's spark-operator
# submits it (spark-submit in cluster mode), a driver pod starts two executor pods on the local
# node, and they write the stack's Bigtable emulator. The demo's other Spark step runs the same
# job in local mode. Needs the node (root; docs/stack.md) and chainloom-spark:dev (built once,
# ~10 min the first time); without a node this step says so in one line and is skipped.
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
skip() { echo "spark on kubernetes: skipped: $*"; exit 0; }
status_json() { chainloom-dev stack status --json 2>/dev/null || true; }
healthy() {
  status_json | python -c 'import json, sys; sys.exit(not any(r["name"] == sys.argv[1] and r["healthy"] for r in json.load(sys.stdin)))' "$1"
}
healthy kubelet || skip "no local node is up (the Kubernetes step starts one: sudo chainloom-dev stack up --node)"
if ! healthy spark-operator; then
  echo "starting the spark-operator (chainloom-dev stack up --only spark-operator; its first build takes minutes)"
  chainloom-dev stack up --only spark-operator > spark-operator-up.log 2>&1 ||
    skip "the spark-operator could not start: $(tail -n 1 spark-operator-up.log)"
fi
echo "-- chainloom-spark:dev in the node (chainloom-dev stack image --spark: built once, then reused)"
chainloom-dev stack image --spark > spark-image.log 2>&1 || skip "the Spark image failed: $(tail -n 1 spark-image.log)"

ns=chainloom-spark-demo
app=demo-ingest
gateway=$(kubectl get node localhost -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
bigtable_port=$(python -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$gateway")
socat "TCP-LISTEN:$bigtable_port,bind=$gateway,fork,reuseaddr" "TCP:$BIGTABLE_EMULATOR_HOST" &
input=$(mktemp -d /tmp/chainloom-demo-spark-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$input"' EXIT
cp vaas.txt "$input/vaas.txt"
# The image holds the product only (no dev kit): the pods read the dev guardians as a file.
cp dev-sets.json "$input/dev-sets.json"
chmod 755 "$input"; chmod 644 "$input/vaas.txt" "$input/dev-sets.json"

# Driver and executors read the input from the host (Spark's own hostPath volume settings: the
# controller runs without its webhook) and reach the emulator through the relay on the node's IP.
cat > spark-k8s.yaml <<EOF
spark:
  conf:
    spark.kubernetes.driver.request.cores: 250m
    spark.kubernetes.executor.request.cores: 250m
    spark.kubernetes.driver.volumes.hostPath.input.mount.path: /input
    spark.kubernetes.driver.volumes.hostPath.input.options.path: $input
    spark.kubernetes.executor.volumes.hostPath.input.mount.path: /input
    spark.kubernetes.executor.volumes.hostPath.input.options.path: $input
bigtable: {project: demo, instance: demo}
kubernetes:
  namespace: $ns
  image: chainloom-spark:dev
  image_pull_policy: Never
  driver_memory: 768m
  executor_instances: 2
  executor_memory: 768m
  env: {BIGTABLE_EMULATOR_HOST: "$gateway:$bigtable_port"}
EOF
kubectl delete namespace "$ns" --ignore-not-found --wait=true --timeout=180s > /dev/null
kubectl create namespace "$ns" > /dev/null
kubectl label namespace "$ns" chainloom.io/spark-operator=enabled > /dev/null  # the stack's spark-operator runs it
echo "-- chainloom spark manifest --with-access vaa-ingest ... | kubectl apply (ServiceAccount, Role, RoleBinding, SparkApplication)"
CHAINLOOM_SPARK_CONFIG=spark-k8s.yaml chainloom spark manifest --with-access --name "$app" vaa-ingest \
  --input /input/vaas.txt --table demo-spark-k8s --guardian-set /input/dev-sets.json --partitions 4 |
  kubectl apply -f - > /dev/null
started=$(date +%s)
state=""
executors=0
while [ $(($(date +%s) - started)) -lt 900 ]; do
  state=$(kubectl -n "$ns" get sparkapplication "$app" -o jsonpath='{.status.applicationState.state}')
  running=$(kubectl -n "$ns" get pods -l "sparkoperator.k8s.io/app-name=$app,spark-role=executor" \
    --field-selector=status.phase=Running -o name | wc -l)
  [ "$running" -gt "$executors" ] && executors=$running && kubectl -n "$ns" get pods -o wide
  case "$state" in COMPLETED|FAILED|SUBMISSION_FAILED) break ;; esac
  sleep 3
done
echo "-- SparkApplication $app: $state after $(($(date +%s) - started)) s, $executors executor pods running at once"
kubectl -n "$ns" get sparkapplication "$app"
echo "-- the job's counts (the driver pod's termination message):"
kubectl -n "$ns" get pod "$app-driver" -o jsonpath='{.status.containerStatuses[0].state.terminated.message}'
echo
[ "$state" = COMPLETED ] || { kubectl -n "$ns" logs "$app-driver" --tail=40 || true; exit 1; }
kubectl delete namespace "$ns" --wait=false > /dev/null
