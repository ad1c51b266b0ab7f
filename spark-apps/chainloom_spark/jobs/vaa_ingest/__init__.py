"""vaa-ingest: files of signed VAAs -> the event store, verified, idempotent, in parallel.

The same writer as ``chainloom events put`` does the work (:class:`EventWriter`: parse with
the core codec, verify against the guardian sets, plan against the stored row, write only the
difference, index rows included), once per partition, so a bulk load and the live path cannot
disagree about a row. What Spark adds is reading any path it can read, splitting it across
executors, and collecting what every partition did:

* **Inputs.** Text files whose lines are hex or base64 VAAs or JSON objects
  (``{"vaa": ..., "tx_id": ..., "observed_at": ...}``), told apart line by line; or Parquet
  with a binary (or hex/base64 string) ``vaa`` column and optional ``tx_id``.
  ``observed_at`` is accepted and not stored: every cell's time comes from the VAA itself,
  which is what makes a rerun write nothing.
* **Verification.** The guardian sets are broadcast once; each Python worker keeps one
  :class:`SignatureCache` for every partition it runs (:func:`executor_signature_cache`).
* **Writes.** Each partition opens the tables and writes in flushes of ``writer.flush_rows``
  with at most ``writer.conditional_workers`` check-and-mutate calls in flight; the
  conditional first-quorum write keeps concurrent partitions (and a rerun after a kill)
  correct whatever the order.
* **Refusals** never stop the job: each becomes a dead-letter row (:mod:`dead_letter`).
* **Exit codes.** A missing input or a bad flag exits 2, an unreachable store 4, before any
  task starts when it can be seen from the driver.

The sections are modules: :mod:`.arguments` (flags and the plan), :mod:`.tasks` (what the
Python workers run) and :mod:`.driver` (checks, the passes, the summary); this package names
what the CLI, ``submit.py``, gap-backfill and the tests use.
"""

from chainloom_spark.jobs.vaa_ingest.arguments import (
    FORMATS,
    JOB,
    IngestPlan,
    input_format,
    parser,
    resolve,
)
from chainloom_spark.jobs.vaa_ingest.driver import check_store, key_input, main, read_input, run
from chainloom_spark.jobs.vaa_ingest.tasks import (
    ASSETS,
    REST,
    PartitionContext,
    Refusal,
    decode_record,
    executor_signature_cache,
    ingest_batches,
    is_attestation,
    key_batches,
    message_key,
    prepare,
)

__all__ = [
    "ASSETS",
    "FORMATS",
    "JOB",
    "REST",
    "IngestPlan",
    "PartitionContext",
    "Refusal",
    "check_store",
    "decode_record",
    "executor_signature_cache",
    "ingest_batches",
    "input_format",
    "is_attestation",
    "key_batches",
    "key_input",
    "main",
    "message_key",
    "parser",
    "prepare",
    "read_input",
    "resolve",
    "run",
]
