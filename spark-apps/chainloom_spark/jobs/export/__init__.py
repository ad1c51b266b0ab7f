"""export: the events table as a Parquet data lake, plus daily volume aggregates.

A data team queries months of messages with Spark, DuckDB or pandas rather than Bigtable
scans, so the job writes a flat copy with one column per stored value, decoded by the event
store's own codecs (:func:`chainloom.eventstore.encoding.decode_value`):

* ``OUTPUT/events``: one row per events-table row, partitioned by ``emitter_chain`` and the UTC
  ``day`` of the VAA timestamp (:data:`EVENT_COLUMNS`, documented in docs/spark.md);
* ``OUTPUT/daily``: per (day, source chain, target chain, token): messages, token transfers,
  priced transfers and the USD volume (:data:`DAILY_COLUMNS`), partitioned by ``day``.

The table is read in key ranges cut at the data client's row-key samples, one Spark partition
per range (:mod:`chainloom_spark.table_scan`). A rerun replaces the output **per partition**
(Spark's dynamic partition overwrite): every (chain, day) directory the run produces is
swapped in when the job commits, and directories the run does not produce are left as they
were. A run that fails before its commit leaves the previous output untouched.

The sections are modules: :mod:`.arguments` (flags and the plan), :mod:`.tasks` (the columns
and the row conversion the Python workers run) and :mod:`.driver`.
"""

from chainloom_spark.jobs.export.arguments import JOB, ExportPlan, check_output, parser, resolve
from chainloom_spark.jobs.export.driver import COUNTERS, daily, main, run
from chainloom_spark.jobs.export.tasks import DAILY_COLUMNS, EVENT_COLUMNS, ddl, event_row

__all__ = [
    "COUNTERS",
    "DAILY_COLUMNS",
    "EVENT_COLUMNS",
    "JOB",
    "ExportPlan",
    "check_output",
    "daily",
    "ddl",
    "event_row",
    "main",
    "parser",
    "resolve",
    "run",
]
