"""The Bigtable adapter: connection settings, table administration, and raw table I/O.

Everything that touches google-cloud-bigtable lives here. Administration uses the classic admin
client (families and GC rules); reads and writes use the data client (``bulk_mutate_rows``,
``check_and_mutate_row``, ``read_rows``). The writer's batching, retry and back-off policy is
in :mod:`chainloom.eventstore.writer`; this module only performs single calls and translates
their results.

The emulator is used when ``BIGTABLE_EMULATOR_HOST`` is set (the client reads it itself).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from chainloom.eventstore import schema
from chainloom.eventstore.cells import Cell
from chainloom.eventstore.errors import StoreConfigError, TableMissingError
from chainloom.eventstore.planner import IndexEntry, RowSnapshot
from chainloom.settings import BigtableSettings

# ------------------------------------------------------------------------------------------
# Administration


@dataclass(frozen=True, slots=True)
class FamilyDrift:
    """One difference between a live table and the schema."""

    table: str
    """Table id."""
    family: str
    """Column family."""
    problem: str
    """``missing``, ``gc_rule`` (a different GC policy) or ``unexpected`` (not in the schema)."""
    expected: str | None
    """The schema's GC rule, as text (None for an unexpected family)."""
    actual: str | None
    """The live GC rule, as text (None for a missing family)."""


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """The result of creating or checking the tables."""

    created_tables: tuple[str, ...]
    """Tables this call created (with every family)."""
    drift: tuple[FamilyDrift, ...]
    """Differences found in tables that already existed (nothing is changed)."""

    @property
    def in_sync(self) -> bool:
        return not self.drift

    def as_dict(self) -> dict[str, Any]:
        return {
            "created_tables": list(self.created_tables),
            "in_sync": self.in_sync,
            "drift": [
                {
                    "table": d.table,
                    "family": d.family,
                    "problem": d.problem,
                    "expected": d.expected,
                    "actual": d.actual,
                }
                for d in self.drift
            ],
        }


def describe_gc_rule(rule: Any) -> str:
    """A GC rule as short text: ``max_versions=1``, ``max_age=86400s``, ``none``."""
    from google.cloud.bigtable import column_family as cf

    if rule is None:
        return "none"
    if isinstance(rule, cf.MaxVersionsGCRule):
        return f"max_versions={rule.max_num_versions}"
    if isinstance(rule, cf.MaxAgeGCRule):
        return f"max_age={int(rule.max_age.total_seconds())}s"
    if isinstance(rule, cf.GCRuleUnion):
        return "union(" + ", ".join(describe_gc_rule(r) for r in rule.rules) + ")"
    if isinstance(rule, cf.GCRuleIntersection):
        return "intersection(" + ", ".join(describe_gc_rule(r) for r in rule.rules) + ")"
    return repr(rule)


def _admin_instance(settings: BigtableSettings) -> Any:
    from google.cloud.bigtable import Client

    client = Client(project=settings.project, admin=True)
    return client.instance(settings.instance)


def _spec_rule(spec: schema.FamilySpec) -> Any:
    from google.cloud.bigtable import column_family as cf

    return cf.MaxVersionsGCRule(spec.max_versions)


def _table_drift(
    table_id: str, live: Mapping[str, Any], specs: Sequence[schema.FamilySpec]
) -> list[FamilyDrift]:
    drift = []
    wanted = {spec.name: spec for spec in specs}
    for spec in specs:
        expected = describe_gc_rule(_spec_rule(spec))
        if spec.name not in live:
            drift.append(FamilyDrift(table_id, spec.name, "missing", expected, None))
            continue
        actual = describe_gc_rule(live[spec.name].gc_rule)
        if actual != expected:
            drift.append(FamilyDrift(table_id, spec.name, "gc_rule", expected, actual))
    for name in sorted(set(live) - set(wanted)):
        drift.append(
            FamilyDrift(table_id, name, "unexpected", None, describe_gc_rule(live[name].gc_rule))
        )
    return drift


def _tables(settings: BigtableSettings) -> list[tuple[str, tuple[schema.FamilySpec, ...]]]:
    return [
        (settings.table, schema.EVENT_FAMILIES),
        (settings.index_table, schema.INDEX_FAMILIES),
    ]


def ensure_schema(settings: BigtableSettings) -> SchemaReport:
    """Create missing tables with every family and GC rule; report drift in existing ones.

    Idempotent. Existing tables are never altered: drift is returned as data so an operator
    can decide (see :func:`reconcile_schema`).
    """
    instance = _admin_instance(settings)
    created: list[str] = []
    drift: list[FamilyDrift] = []
    for table_id, specs in _tables(settings):
        table = instance.table(table_id)
        if not table.exists():
            table.create(column_families={spec.name: _spec_rule(spec) for spec in specs})
            created.append(table_id)
            continue
        drift += _table_drift(table_id, table.list_column_families(), specs)
    return SchemaReport(tuple(created), tuple(drift))


def check_schema(settings: BigtableSettings) -> SchemaReport:
    """Report drift without creating anything (a missing table raises)."""
    instance = _admin_instance(settings)
    drift: list[FamilyDrift] = []
    for table_id, specs in _tables(settings):
        table = instance.table(table_id)
        if not table.exists():
            raise TableMissingError(table_id)
        drift += _table_drift(table_id, table.list_column_families(), specs)
    return SchemaReport((), tuple(drift))


def reconcile_schema(settings: BigtableSettings, drift: Iterable[FamilyDrift]) -> None:
    """Create missing families and reset GC rules named in ``drift`` (unexpected families are
    left alone: deleting data is never automatic)."""
    instance = _admin_instance(settings)
    specs = {(t, s.name): s for t, ss in _tables(settings) for s in ss}
    for item in drift:
        spec = specs.get((item.table, item.family))
        if spec is None:
            continue
        family = instance.table(item.table).column_family(item.family, _spec_rule(spec))
        if item.problem == "missing":
            family.create()
        elif item.problem == "gc_rule":
            family.update()


def drop_tables(settings: BigtableSettings) -> None:
    """Delete both tables (tests and `events init --recreate`)."""
    instance = _admin_instance(settings)
    for table_id, _ in _tables(settings):
        table = instance.table(table_id)
        if table.exists():
            table.delete()


# ------------------------------------------------------------------------------------------
# Data plane


@contextlib.contextmanager
def _missing_tables_named(settings: BigtableSettings) -> Iterator[None]:
    """Turn the client's NotFound into :class:`TableMissingError` (never retried)."""
    from google.api_core.exceptions import NotFound

    try:
        yield
    except NotFound as error:
        text = str(error)
        table = settings.index_table if settings.index_table in text else settings.table
        raise TableMissingError(table) from None


class BigtableTables:
    """Reads and writes of the events and index tables through the data client.

    Every call raises :class:`TableMissingError` when a table does not exist.
    """

    def __init__(self, settings: BigtableSettings) -> None:
        from google.cloud.bigtable.data import BigtableDataClient

        if settings.project is None or settings.instance is None:
            raise StoreConfigError(
                "Bigtable project and instance must be set (chainloom.eventstore.service.locate "
                "fills them in on the emulator)"
            )
        self.settings = settings
        self._client = BigtableDataClient(project=settings.project)
        timeout = settings.operation_timeout
        options = {
            "default_operation_timeout": timeout,
            "default_attempt_timeout": min(timeout, 10.0),
            "default_read_rows_operation_timeout": timeout,
            "default_read_rows_attempt_timeout": min(timeout, 10.0),
            "default_mutate_rows_operation_timeout": timeout,
            "default_mutate_rows_attempt_timeout": min(timeout, 10.0),
        }
        self.events = self._client.get_table(settings.instance, settings.table, **options)
        self.index = self._client.get_table(settings.instance, settings.index_table, **options)
        self._threads: tuple[int, ThreadPoolExecutor] | None = None

    def close(self) -> None:
        if self._threads is not None:
            self._threads[1].shutdown()
            self._threads = None
        self._client.close()

    def __enter__(self) -> BigtableTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads -----------------------------------------------------------------------------

    def read_event_rows(
        self, row_keys: Iterable[str], families: Sequence[str] | None = None
    ) -> dict[str, RowSnapshot]:
        """The latest cell of every column of each existing row."""
        from google.cloud.bigtable.data import ReadRowsQuery
        from google.cloud.bigtable.data import row_filters as rf

        wanted: list[str | bytes] = sorted(set(row_keys))
        if not wanted:
            return {}
        row_filter: rf.RowFilter = rf.CellsColumnLimitFilter(1)
        if families:
            row_filter = rf.RowFilterChain(
                [rf.FamilyNameRegexFilter(_alternation(families)), rf.CellsColumnLimitFilter(1)]
            )
        with _missing_tables_named(self.settings):
            rows = self.events.read_rows(ReadRowsQuery(row_keys=wanted, row_filter=row_filter))
        return {row.row_key.decode(): snapshot(row) for row in rows}

    def read_index_rows(self, row_keys: Iterable[str]) -> dict[str, dict[str, bytes]]:
        from google.cloud.bigtable.data import ReadRowsQuery
        from google.cloud.bigtable.data import row_filters as rf

        wanted: list[str | bytes] = sorted(set(row_keys))
        if not wanted:
            return {}
        query = ReadRowsQuery(row_keys=wanted, row_filter=rf.CellsColumnLimitFilter(1))
        with _missing_tables_named(self.settings):
            rows = self.index.read_rows(query)
        return {
            row.row_key.decode(): {c.qualifier.decode(): c.value for c in row.cells} for row in rows
        }

    # --- writes ----------------------------------------------------------------------------

    def bulk_write(
        self, table: Any, entries: Sequence[tuple[str, Sequence[Cell] | Sequence[IndexEntry]]]
    ) -> list[int]:
        """Write entries with one MutateRows call; returns the indexes of failed entries.

        A failure of the whole call (an outage) raises the client's exception.
        """
        from google.cloud.bigtable.data import MutationsExceptionGroup, RowMutationEntry

        mutation_entries = [RowMutationEntry(key, _mutations(cells)) for key, cells in entries]
        try:
            with _missing_tables_named(self.settings):
                table.bulk_mutate_rows(mutation_entries)
        except MutationsExceptionGroup as group:
            failed = sorted(
                {e.index for e in group.exceptions if getattr(e, "index", None) is not None}
            )
            if not failed:
                raise
            return failed
        return []

    def write_many_if_unsigned(
        self, rows: Sequence[tuple[str, Sequence[Cell]]], in_flight: int
    ) -> list[bool]:
        """Write each row's cells only if its ``QuorumState:SignedVAA`` is absent; per row,
        True if written.

        One ``check_and_mutate_row`` of the data client per row (its retries and time budget
        apply), with up to ``in_flight`` calls outstanding on a pool of threads. Errors are the
        data client's (``google.api_core`` exceptions, :class:`TableMissingError`); the first
        one is raised only after every call already issued has finished, and no further call
        is issued after a failure.
        """
        predicate = _signed_vaa_predicate()

        def write(row_key: str, cells: Sequence[Cell]) -> bool:
            matched = self.events.check_and_mutate_row(
                row_key, predicate, false_case_mutations=_mutations(cells)
            )
            return not matched

        pool = self._pool(in_flight)
        calls: list[Future[bool]] = []
        window: deque[Future[bool]] = deque()  # the calls outstanding, oldest first
        for row_key, cells in rows:
            if len(window) >= in_flight and window.popleft().exception() is not None:
                break  # waits for the oldest call; a failure stops issuing more
            call = pool.submit(write, row_key, cells)
            calls.append(call)
            window.append(call)
        futures.wait(calls)
        with _missing_tables_named(self.settings):
            return [call.result() for call in calls]  # raises the first failure

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        """The threads that issue concurrent calls (made again when ``workers`` changes)."""
        if self._threads is None or self._threads[0] != workers:
            if self._threads is not None:
                self._threads[1].shutdown()
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bigtable")
            self._threads = (workers, pool)
        return self._threads[1]

    # --- scans -----------------------------------------------------------------------------

    def scan_events(
        self,
        ranges: Sequence[tuple[str, str]],
        *,
        families: Sequence[str] | None = None,
        limit: int | None = None,
        end_inclusive: bool = True,
        sequence_width: bool = False,
    ) -> Iterator[tuple[str, RowSnapshot]]:
        """Rows of each range in turn (ranges are read one after the other, in the given order).

        With ``sequence_width`` each range keeps only keys whose sequence part is as long as
        the range's start key's.
        """
        from google.cloud.bigtable.data import ReadRowsQuery, RowRange
        from google.cloud.bigtable.data import row_filters as rf

        remaining = limit
        for start, end in ranges:
            if remaining is not None and remaining <= 0:
                return
            parts: list[rf.RowFilter] = []
            if sequence_width:
                # A key range of one sequence width also spans longer keys with the same
                # leading digits; keep only keys whose sequence has exactly this width.
                width = len(start.rsplit(":", 1)[1])
                parts.append(rf.RowKeyRegexFilter(f"^[^:]*:[^:]*:[0-9]{{{width}}}$".encode()))
            if families:
                parts.append(rf.FamilyNameRegexFilter(_alternation(families)))
            parts.append(rf.CellsColumnLimitFilter(1))
            row_filter: rf.RowFilter = parts[0] if len(parts) == 1 else rf.RowFilterChain(parts)
            query = ReadRowsQuery(
                row_ranges=[
                    RowRange(start, end, start_is_inclusive=True, end_is_inclusive=end_inclusive)
                ],
                limit=remaining or 0,
                row_filter=row_filter,
            )
            with _missing_tables_named(self.settings):
                rows = self.events.read_rows(query)
            for row in rows:
                yield row.row_key.decode(), snapshot(row)
                if remaining is not None:
                    remaining -= 1

    def scan_index(
        self, start: str, end: str, *, limit: int | None = None, keys_only: bool = False
    ) -> list[tuple[str, dict[str, bytes]]]:
        """Index rows in ``[start, end)``."""
        from google.cloud.bigtable.data import ReadRowsQuery, RowRange
        from google.cloud.bigtable.data import row_filters as rf

        row_filter: rf.RowFilter = rf.CellsColumnLimitFilter(1)
        if keys_only:
            row_filter = rf.RowFilterChain([row_filter, rf.StripValueTransformerFilter(True)])
        query = ReadRowsQuery(
            row_ranges=[RowRange(start, end)], limit=limit or 0, row_filter=row_filter
        )
        with _missing_tables_named(self.settings):
            rows = self.index.read_rows(query)
        return [
            (row.row_key.decode(), {c.qualifier.decode(): c.value for c in row.cells})
            for row in rows
        ]


def _alternation(names: Sequence[str]) -> str:
    import re

    return "^(" + "|".join(re.escape(n) for n in names) + ")$"


def _signed_vaa_predicate() -> Any:
    """The check-and-mutate predicate: a ``QuorumState:SignedVAA`` cell exists."""
    from google.cloud.bigtable.data import row_filters as rf

    return rf.RowFilterChain(
        [
            rf.FamilyNameRegexFilter(schema.QUORUM_STATE),
            rf.ColumnQualifierRegexFilter(schema.Q.SIGNED_VAA.encode()),
            rf.CellsColumnLimitFilter(1),
            rf.StripValueTransformerFilter(True),
        ]
    )


def _mutations(cells: Sequence[Cell] | Sequence[IndexEntry]) -> list[Any]:
    from google.cloud.bigtable.data import SetCell

    out = []
    for cell in cells:
        if isinstance(cell, Cell):
            out.append(SetCell(cell.family, cell.qualifier, cell.value, cell.timestamp_micros))
        else:
            out.append(
                SetCell(schema.INDEX_FAMILY, cell.qualifier, cell.value, cell.timestamp_micros)
            )
    return out


def snapshot(row: Any) -> RowSnapshot:
    """A data-client row as family -> qualifier -> latest value."""
    result: RowSnapshot = {}
    for cell in row.cells:
        family = result.setdefault(cell.family, {})
        qualifier = cell.qualifier.decode()
        if qualifier not in family:
            family[qualifier] = cell.value
    return result
