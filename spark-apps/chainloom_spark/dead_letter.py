"""The dead-letter dataset: every input a job refused, with why, as Parquet.

A refused input never stops a job; it is written here instead, so nothing read is lost
silently and a bad batch can be inspected or replayed after a fix. One row per refused input:

==========  ========  =========================================================
column      type      meaning
==========  ========  =========================================================
location    string    the file it was read from (as Spark names it)
raw         binary    the input as read (the text line's bytes, or the Parquet cell)
rule        string    which check refused it (:data:`RULES`)
reason      string    the library's message
job         string    the job that refused it
==========  ========  =========================================================

Rows are appended: two runs over the same bad input add its rows twice (a dead letter is a
log of refusals, not a table keyed by input).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RULES = {
    "encoding": "the text is neither hex nor base64 of a VAA",
    "json": "a JSON line that is not an object with a 'vaa' string",
    "vaa-format": "the bytes are not a well-formed VAA (the core codec refused them)",
    "payload": "the payload of a known emitter does not decode",
    "signature": "the signatures do not match the guardian set the VAA names",
    "guardian-set": "the VAA names a guardian set that is not known",
    "tx-id": "the tx_id field is not a transaction id",
}
"""Rule name -> what it checks (docs/spark.md lists them too)."""

COLUMNS = ("location", "raw", "rule", "reason", "job")
"""The dataset's columns, in order."""

SCHEMA_DDL = "location STRING, raw BINARY, rule STRING, reason STRING, job STRING"
"""The dataset's schema as Spark DDL."""


def write_dead_letter(frame: DataFrame, path: str) -> None:
    """Append ``frame`` (with :data:`COLUMNS`) to the Parquet dataset at ``path``."""
    frame.select(*COLUMNS).write.mode("append").parquet(path)
