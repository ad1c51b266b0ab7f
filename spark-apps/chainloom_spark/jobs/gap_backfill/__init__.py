"""gap-backfill: find the sequences the event store lacks per emitter, fetch them, write them.

Token bridges emit consecutive sequences, so a hole between two stored sequences is a message
the store missed. The job works in three Spark stages, each reusing the library:

1. **Find.** The emitters (``--emitters``, or every emitter in the table through
   :meth:`EventReader.emitters`, a skip scan costing one small read per emitter) are spread
   over tasks; each task reads its emitters' row keys only (:meth:`EventReader.sequences`)
   into a :class:`~chainloom.wormhole.sequences.SequenceTracker`
   (:func:`chainloom.eventstore.backfill.scan_emitter`, shared with ``chainloom events
   backfill``). The driver collects the missing
   *ranges*, which stay small however many rows are stored.
2. **Fetch.** The missing ids are cut into chunks spread over ``--partitions`` tasks. With
   ``--public-api`` each task asks the guardian endpoints in turn
   (:class:`chainloom.publicrpc.PublicRpcClient`: per-call timeout, bounded rounds with
   backoff; found, not found, or error with the endpoints' reasons). With ``--files`` Spark
   reads the files (lines of hex or base64 VAAs, or JSON lines, as vaa-ingest) and keeps the
   VAAs whose id is missing.
3. **Write.** Found VAAs are verified and written by the event store's writer exactly as
   vaa-ingest does (:func:`chainloom_spark.jobs.vaa_ingest.prepare`; index rows included;
   token attestations in a first pass so transfers are enriched whatever the partitioning).

Idempotent: a rerun finds only what is still missing, asks for it again and writes only what
it now finds. What stays missing is reported per emitter with the reason; it does not fail the
job. A store or every endpoint unreachable before the job starts exits 4, a bad flag or a
missing ``--files`` path 2 (docs/exit-codes.md).

The sections are modules: :mod:`.arguments` (flags and the plan), :mod:`.tasks` (what the
Python workers run) and :mod:`.driver` (checks, stages, the summary).
"""

from chainloom_spark.jobs.gap_backfill.arguments import (
    CHUNK,
    JOB,
    BackfillPlan,
    parse_emitters,
    parser,
    resolve,
)
from chainloom_spark.jobs.gap_backfill.driver import main, run

__all__ = ["CHUNK", "JOB", "BackfillPlan", "main", "parse_emitters", "parser", "resolve", "run"]
