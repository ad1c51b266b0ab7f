"""Reading the whole events table in parallel: one Spark partition per row-key range.

The jobs that read the event store in bulk (enrich, export) cut the table at the row keys the
Bigtable data client's ``sample_row_keys`` returns (Bigtable's own split points, pieces of
similar size) and read each key range in its own Spark partition with the same Python client
the rest of the project uses, streaming rows so a task's memory stays flat. That choice over
the Spark Bigtable connector (0.4.0, which also works on Spark 4 and the emulator) is
explained in docs/spark.md: no Maven jars to fetch and ship, and the rows are decoded by the
event store's own codecs rather than a second catalog of the schema.

The rows a task converts reach the JVM in Arrow record batches (``DataFrame.mapInArrow``), a
batch of rows converted at once rather than a pickled row at a time.

Tasks set ``BIGTABLE_EMULATOR_HOST`` from the driver's (executors may start without it).
"""

from __future__ import annotations

import os
import socket
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from chainloom.eventstore.bigtable import BigtableTables, check_schema
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.service import EMULATOR_ENV
from chainloom.settings import BigtableSettings
from chainloom_spark.errors import SinkUnavailableError
from chainloom_spark.progress import ProgressCounters

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

BATCH_ROWS = 4096
"""Converted rows per Arrow record batch a scanning task hands to the JVM."""

SCAN_TIMEOUT = 3600.0
"""Seconds one key range may take to stream (the client's budget covers the whole stream)."""


@dataclass(frozen=True, slots=True)
class KeyRange:
    """A half-open range of row keys, read by one task."""

    start: str
    """First key (inclusive); ``""`` is the start of the table."""
    end: str
    """Key after the last (exclusive); ``""`` is the end of the table."""


def key_ranges(samples: Iterable[bytes]) -> list[KeyRange]:
    """The ranges between consecutive sample keys, covering the whole table exactly once."""
    cuts = sorted({key.decode() for key in samples if key})
    edges = ["", *cuts, ""]
    return [KeyRange(start, end) for start, end in pairwise(edges)]


@dataclass(frozen=True, slots=True)
class ScanContext:
    """What each scanning task needs (small: shipped with the task)."""

    location: BigtableSettings
    """The tables."""
    emulator_host: str | None
    """``BIGTABLE_EMULATOR_HOST`` of the driver."""
    families: tuple[str, ...]
    """Column families to read (empty: all)."""


def use_emulator(host: str | None) -> None:
    """In a task: talk to the driver's emulator, without the client's warning on each call."""
    if host:
        os.environ[EMULATOR_ENV] = host
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)


def scan_range(context: ScanContext, key_range: KeyRange) -> Iterator[tuple[str, RowSnapshot]]:
    """The rows of one key range (latest cell of each column), streamed."""
    use_emulator(context.emulator_host)
    try:
        with BigtableTables(context.location) as tables:
            yield from tables.stream_events(
                key_range.start,
                key_range.end,
                families=context.families or None,
                timeout=SCAN_TIMEOUT,
            )
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error


def _scan_batches(
    context: ScanContext,
    convert: Callable[[str, RowSnapshot], tuple[Any, ...] | None],
    schema: pa.Schema,
    counters: ProgressCounters | None,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Scan the key ranges of the partition (batches of ``start``, ``end``) and hand the
    converted rows back as record batches of ``schema``."""
    import pyarrow as pa

    def batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
        columns = list(zip(*rows, strict=True))
        return pa.RecordBatch.from_arrays(
            [
                pa.array(column, type=field.type)
                for column, field in zip(columns, schema, strict=True)
            ],
            schema=schema,
        )

    read = 0
    rows: list[tuple[Any, ...]] = []
    for ranges in batches:
        for start, end in zip(
            ranges.column("start").to_pylist(), ranges.column("end").to_pylist(), strict=True
        ):
            for row_key, row in scan_range(context, KeyRange(start, end)):
                read += 1
                item = convert(row_key, row)
                if item is not None:
                    rows.append(item)
                if len(rows) >= BATCH_ROWS:
                    yield batch(rows)
                    rows = []
    if rows:
        yield batch(rows)
    if counters is not None:
        counters.add(read=read)


def table_frame(
    spark: SparkSession,
    context: ScanContext,
    ranges: Sequence[KeyRange],
    convert: Callable[[str, RowSnapshot], tuple[Any, ...] | None],
    ddl: str,
    *,
    counters: ProgressCounters | None = None,
) -> DataFrame:
    """A DataFrame (schema ``ddl``) of ``convert(row_key, row)`` for every row (None results
    dropped), one partition per key range; each row scanned counts as read in ``counters``.
    ``convert`` must be a module-level function (tasks pickle it)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = spark.createDataFrame([], ddl).schema
    source = spark.sparkContext.parallelize(
        [(r.start, r.end) for r in ranges], max(len(ranges), 1)
    ).toDF("start STRING, end STRING")
    scan = partial(_scan_batches, context, convert, to_arrow_schema(schema, timezone="UTC"))
    return source.mapInArrow(partial(scan, counters), schema)


def probe_emulator(timeout: float = 5.0) -> None:
    """On the emulator, a TCP connect first: the client would retry for its whole deadline
    before saying nobody answers. Raises :class:`SinkUnavailableError`."""
    host = os.environ.get(EMULATOR_ENV)
    if not host:
        return
    name, _, port = host.rpartition(":")
    try:
        with socket.create_connection((name or "localhost", int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as error:
        raise SinkUnavailableError(
            f"Bigtable emulator {EMULATOR_ENV}={host} unreachable: {error}"
        ) from None


def require_tables(location: BigtableSettings) -> None:
    """The tables must exist (TableMissingError, exit 2) and Bigtable answer (exit 4).

    Drift in the families is not checked here: the jobs read and write only families every
    version of the schema has.
    """
    probe_emulator()
    from google.api_core.exceptions import GoogleAPIError

    try:
        check_schema(location)
    except StoreUnavailableError as error:
        raise SinkUnavailableError(str(error)) from None
    except GoogleAPIError as error:
        raise SinkUnavailableError(
            f"Bigtable unreachable: {type(error).__name__}: {error}"
        ) from None


def plan_ranges(location: BigtableSettings) -> list[KeyRange]:
    """The events table's key ranges, from the data client's row-key samples."""
    try:
        with BigtableTables(location) as tables:
            return key_ranges(tables.sample_event_keys())
    except StoreUnavailableError as error:
        raise SinkUnavailableError(str(error)) from None


def scan_context(location: BigtableSettings, families: Sequence[str]) -> ScanContext:
    """The context for the driver's location and emulator."""
    return ScanContext(location, os.environ.get(EMULATOR_ENV), tuple(families))


def describe_ranges(ranges: Sequence[KeyRange]) -> list[dict[str, Any]]:
    """The ranges as JSON-ready data (for summaries)."""
    return [{"start": r.start, "end": r.end} for r in ranges]
