"""ledger-load: an XRPL ledger dump into Cassandra (or SQLite) with Spark executors writing.

Why it is split the way it is: the ledger ETL's checks are of two kinds. Some need the whole
history before a ledger -- the sequence, the parent hash, the state diff against the key set,
and the successor rows, which depend on every key that exists before the ledger. Those are
cheap and run on the driver, in order, with the ETL's own functions
(:mod:`chainloom.ledger.etl`). The rest need only the ledger itself -- the transaction tree
root, every transaction and metadata blob, the ``account_tx`` and NFT rows -- and, with the
writes, are where the time goes. The driver cuts the dump into batches of consecutive ledgers,
each batch into ``--partitions`` ranges, and ships every ledger with its precomputed successor
rows to the executors, which check and write their range through
:class:`~chainloom.ledger.backend.BackendInterface` and flush it without touching the range.

The ``ledger_range`` fence moves only on the driver, ledger by ledger in order, once every
partition of a batch has reported: a failed or killed job leaves written-but-invisible rows
(exactly what a crashed ETL leaves), and a rerun resumes after the stored range, rebuilding the
key set from the store as the ETL does, and rewrites those ledgers (every write is an
idempotent upsert). So the tables come out identical to the sequential ETL's.

The first ledger of an empty store (the full state) is written and committed by the driver
before any executor starts: a backend writes ``diff`` rows only once a range exists.

Settings come from two models: the database from the ledger settings, read as ``chainloom
ledger load`` reads them (``--config`` / ``$CHAINLOOM_LEDGER_CONFIG``), and the SparkSession
from the jobs' shared ``spark`` settings through :func:`chainloom_spark.session.job_session`,
as every job builds it (``$CHAINLOOM_SPARK_CONFIG``, ``CHAINLOOM_SPARK__...``, ``--master``).

SQLite: executors' writers to one file take turns on its write lock (each ledger is one
transaction), so a SQLite load gains nothing from more partitions; it is for local runs.

The sections are modules: :mod:`.arguments` (flags and settings), :mod:`.tasks` (what the
executors run) and :mod:`.driver` (the checks, the batches, the fence).
"""

from chainloom_spark.jobs.ledger_load.arguments import DEFAULT_BATCH, JOB, ledger_settings, parser
from chainloom_spark.jobs.ledger_load.driver import (
    LedgerLoad,
    LedgerWriteConflictError,
    LoadOptions,
    LoadSummary,
    main,
)
from chainloom_spark.jobs.ledger_load.tasks import LedgerTask, PartitionReport, write_partition

__all__ = [
    "DEFAULT_BATCH",
    "JOB",
    "LedgerLoad",
    "LedgerTask",
    "LedgerWriteConflictError",
    "LoadOptions",
    "LoadSummary",
    "PartitionReport",
    "ledger_settings",
    "main",
    "parser",
    "write_partition",
]
