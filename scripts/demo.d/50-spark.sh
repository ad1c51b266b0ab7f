# Spark (PySpark, local mode): the same VAAs as a bulk load into a second events table, and the
# ledger dump loaded into Cassandra in parallel ledger ranges (a rerun of either writes nothing:
# the tests check it). The same jobs run on Kubernetes as SparkApplications
# (`chainloom spark manifest`).
set -euo pipefail
cd "$CHAINLOOM_DEMO_DIR"
echo "(local mode, local[2] in one process; the spark-kubernetes step runs vaa-ingest through the spark-operator)"
echo "-- vaa-ingest into a fresh table (verify per partition, write through the event store):"
chainloom spark run vaa-ingest --master 'local[2]' --input vaas.txt --guardian-set dev \
  --project demo --instance demo --table demo-spark --dead-letter dead-letter
chainloom events --project demo --instance demo --table demo-spark scan --chain ethereum --limit 2 \
  --families TokenTransferPayload
if [ -f ledgers.jsonl ]; then
  echo "-- ledger-load: the ledger dump into Cassandra, two ledger ranges written in parallel:"
  chainloom spark run ledger-load --master 'local[2]' --input ledgers.jsonl --backend cassandra \
    --keyspace demo_spark_ledger
  chainloom ledger range --backend cassandra --keyspace demo_spark_ledger
fi
