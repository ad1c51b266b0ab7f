"""The Bigtable adapter: connection settings, table administration, and raw table I/O.

Everything that touches google-cloud-bigtable lives here. Administration uses the classic admin
client (families and GC rules); reads and writes use the data client (``bulk_mutate_rows``,
``check_and_mutate_row``, ``read_rows``). The writer's batching, retry and back-off policy is
in :mod:`chainloom.eventstore.writer`; this module only performs single calls and translates
their results.

The emulator is used when ``BIGTABLE_EMULATOR_HOST`` is set (the client reads it itself).
Every client opened here carries the same credentials (:func:`google_credentials`: the key of
``bigtable.credentials_file``, else Application Default Credentials) and every table handle the
app profile ``bigtable.app_profile``, so the services, the Spark jobs and the operator reach
Bigtable as one identity through one profile.

Every call is bounded by ``bigtable.operation_timeout`` (the client's own retries included), and
an outage surfaces as :class:`StoreUnavailableError` naming the endpoint and the last error the
client saw, never as the client's exception group: callers (the writer's retries, the CLI's exit
code 4) need to tell "Bigtable is away" from a bug.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc
from google.api_core.exceptions import NotFound
from google.api_core.retry import Retry
from google.auth.credentials import Credentials
from google.cloud.bigtable import Client
from google.cloud.bigtable import column_family as cf
from google.cloud.bigtable.data import (
    BigtableDataClient,
    MutationsExceptionGroup,
    ReadRowsQuery,
    RowMutationEntry,
    RowRange,
    SetCell,
)
from google.cloud.bigtable.data import row_filters as rf
from google.cloud.bigtable.data.exceptions import RetryExceptionGroup
from google.cloud.bigtable_admin_v2.types import Table
from google.oauth2 import service_account
from opentelemetry import trace

from chainloom import telemetry
from chainloom.credentials import CredentialsError, read_service_account_key
from chainloom.eventstore import schema
from chainloom.eventstore.cells import Cell, IndexEntry
from chainloom.eventstore.errors import (
    StoreConfigError,
    StoreUnavailableError,
    TableMissingError,
)
from chainloom.eventstore.planner import RowSnapshot
from chainloom.settings import BigtableSettings

_tracer = trace.get_tracer("chainloom.eventstore.bigtable")

EMULATOR_ENV = "BIGTABLE_EMULATOR_HOST"
"""Set (to host:port) when the Bigtable client should talk to the emulator; read by the client."""


def endpoint(settings: BigtableSettings) -> str:
    """Where the calls go, for error messages: the emulator's address or the instance's name."""
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        return f"emulator {emulator}"
    return f"projects/{settings.project}/instances/{settings.instance}"


DEFAULT_DATA_HOST = ("bigtable.googleapis.com", 443)
"""Where the data client connects when no emulator is set."""


def check_reachable(settings: BigtableSettings) -> None:
    """Open (and close) one TCP connection to where the calls go, within
    ``bigtable.connect_timeout``: a refused or silent endpoint is a
    :class:`StoreUnavailableError` in seconds, not after the client's retries ran out
    ``bigtable.operation_timeout``. A bad ``bigtable.credentials_file`` is told first (a
    :class:`~chainloom.credentials.CredentialsError`): bad input comes before the network."""
    google_credentials(settings)
    emulator = os.environ.get(EMULATOR_ENV)
    host, port = DEFAULT_DATA_HOST
    if emulator:
        host, _, port_text = emulator.rpartition(":")
        port = int(port_text) if port_text.isascii() and port_text.isdigit() else 0
    timeout = settings.connect_timeout
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except TimeoutError:
        cause = f"no connection within {timeout:g} s"
        raise StoreUnavailableError(endpoint(settings), cause) from None
    except OSError as error:
        cause = f"cannot connect: {error.strerror or error}"
        raise StoreUnavailableError(endpoint(settings), cause) from None


def _outage_errors() -> tuple[type[BaseException], ...]:
    """The client's errors that mean the service is unreachable, overloaded or too slow.

    Other API errors (permission denied, invalid argument) are not outages and propagate.
    """
    return (
        gexc.ServiceUnavailable,
        gexc.DeadlineExceeded,
        gexc.RetryError,
        gexc.Aborted,
        gexc.InternalServerError,
        gexc.Unknown,
        gexc.ResourceExhausted,
        gexc.Cancelled,
        RetryExceptionGroup,
    )


def describe_outage(error: BaseException, timeout: float | None = None) -> str:
    """One line saying why a call failed: the time spent and the last attempt's error.

    The data client raises ``DeadlineExceeded`` from a group holding every attempt's error; the
    classic admin client raises ``RetryError`` carrying the last one. The last attempt says why.
    """
    group = error if isinstance(error, BaseExceptionGroup) else error.__cause__
    last: BaseException | None = None
    if isinstance(group, BaseExceptionGroup) and group.exceptions:
        last = group.exceptions[-1]
    elif isinstance(error, gexc.RetryError) and error.cause is not None:
        last = error.cause
    if isinstance(error, gexc.DeadlineExceeded | gexc.RetryError):
        spent = f"no answer within {timeout:g} s" if timeout else "deadline exceeded"
        text = f"{spent} (last error: {_one_line(last)})" if last is not None else spent
    else:
        text = _one_line(error)
    return text


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or error.__class__.__name__


@contextlib.contextmanager
def store_calls(settings: BigtableSettings, timeout: float | None = None) -> Iterator[None]:
    """Turn the client's NotFound into :class:`TableMissingError` and an outage into
    :class:`StoreUnavailableError` (one line naming the endpoint and the cause)."""
    try:
        yield
    except NotFound as error:
        text = str(error)
        table = settings.index_table if settings.index_table in text else settings.table
        raise TableMissingError(table) from None
    except _outage_errors() as error:
        cause = describe_outage(error, timeout or settings.operation_timeout)
        raise StoreUnavailableError(endpoint(settings), cause) from error


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
    """A GC rule as short text: ``max_versions=1``, ``max_age=86400s``, ``none``.

    Takes a classic GC rule object (``column_family.MaxVersionsGCRule``, ...) or the admin
    API's ``GcRule`` message, so the schema and a live table are described alike.
    """
    if rule is None:
        return "none"
    if hasattr(rule, "to_pb"):
        rule = rule.to_pb()
    if "max_num_versions" in rule:
        return f"max_versions={rule.max_num_versions}"
    if "max_age" in rule:
        return f"max_age={int(rule.max_age.total_seconds())}s"
    if "union" in rule:
        return "union(" + ", ".join(describe_gc_rule(r) for r in rule.union.rules) + ")"
    if "intersection" in rule:
        parts = ", ".join(describe_gc_rule(r) for r in rule.intersection.rules)
        return "intersection(" + parts + ")"
    return "none"


def _live_families(
    client: Any, instance: Any, table_id: str, timeout: float
) -> dict[str, Any] | None:
    """The table's families and their GC rules (``GcRule`` messages), or None if it does not
    exist.

    One GetTable call of the admin API within ``timeout`` seconds, retries included (the
    classic client's ``exists`` and ``list_column_families`` would retry for a minute each).
    """
    admin = instance.table(table_id)
    try:
        live = client.table_admin_client.get_table(
            request={"name": admin.name, "view": Table.View.SCHEMA_VIEW},
            retry=Retry(timeout=timeout),
            timeout=timeout,
        )
    except NotFound:
        return None
    return {name: family.gc_rule for name, family in live.column_families.items()}


BIGTABLE_SCOPE = "https://www.googleapis.com/auth/bigtable.admin"
"""The OAuth scope of a key's credentials: the admin scope covers the data API too."""


def google_credentials(settings: BigtableSettings) -> Credentials | None:
    """The credentials of ``bigtable.credentials_file`` (read and parsed now: a bad file is a
    :class:`~chainloom.credentials.CredentialsError` naming it), or None for Application
    Default Credentials. On the emulator the key is checked all the same but None is returned:
    the emulator takes no credentials."""
    path = settings.credentials_file
    if path is None:
        return None
    setting = "bigtable.credentials_file"
    info = read_service_account_key(path, setting)
    try:
        credentials = service_account.Credentials.from_service_account_info(
            info, scopes=(BIGTABLE_SCOPE,)
        )
    except ValueError:
        raise CredentialsError(
            f"{setting} {path}: not a service-account key (its private_key is not a PEM key)"
        ) from None
    return None if os.environ.get(EMULATOR_ENV) else credentials


def _admin(settings: BigtableSettings) -> tuple[Any, Any]:
    """The classic admin client and the instance."""
    client = Client(project=settings.project, credentials=google_credentials(settings), admin=True)
    return client, client.instance(settings.instance)


def _spec_rule(spec: schema.FamilySpec) -> Any:
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
        actual = describe_gc_rule(live[spec.name])
        if actual != expected:
            drift.append(FamilyDrift(table_id, spec.name, "gc_rule", expected, actual))
    for name in sorted(set(live) - set(wanted)):
        drift.append(FamilyDrift(table_id, name, "unexpected", None, describe_gc_rule(live[name])))
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
    client, instance = _admin(settings)
    created: list[str] = []
    drift: list[FamilyDrift] = []
    with store_calls(settings):
        for table_id, specs in _tables(settings):
            live = _live_families(client, instance, table_id, settings.operation_timeout)
            if live is None:
                instance.table(table_id).create(
                    column_families={spec.name: _spec_rule(spec) for spec in specs}
                )
                created.append(table_id)
                continue
            drift += _table_drift(table_id, live, specs)
    return SchemaReport(tuple(created), tuple(drift))


def check_schema(settings: BigtableSettings) -> SchemaReport:
    """Report drift without creating anything (a missing table raises)."""
    client, instance = _admin(settings)
    drift: list[FamilyDrift] = []
    with store_calls(settings):
        for table_id, specs in _tables(settings):
            live = _live_families(client, instance, table_id, settings.operation_timeout)
            if live is None:
                raise TableMissingError(table_id)
            drift += _table_drift(table_id, live, specs)
    return SchemaReport((), tuple(drift))


def reconcile_schema(settings: BigtableSettings, drift: Iterable[FamilyDrift]) -> None:
    """Create missing families and reset GC rules named in ``drift`` (unexpected families are
    left alone: deleting data is never automatic)."""
    _, instance = _admin(settings)
    specs = {(t, s.name): s for t, ss in _tables(settings) for s in ss}
    with store_calls(settings):
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
    client, instance = _admin(settings)
    with store_calls(settings):
        for table_id, _ in _tables(settings):
            if _live_families(client, instance, table_id, settings.operation_timeout) is not None:
                instance.table(table_id).delete()


# ------------------------------------------------------------------------------------------
# Data plane


class BigtableTables:
    """Reads and writes of the events and index tables through the data client.

    Every call raises :class:`TableMissingError` when a table does not exist and
    :class:`StoreUnavailableError` when Bigtable does not answer within its time budget:
    ``timeout`` seconds where a call takes one (the writer's remaining deadline), else the
    tables' default, ``bigtable.operation_timeout``.
    """

    def __init__(self, settings: BigtableSettings) -> None:
        if settings.project is None or settings.instance is None:
            raise StoreConfigError(
                "Bigtable project and instance must be set (chainloom.eventstore.service.locate "
                "fills them in on the emulator)"
            )
        self.settings = settings
        self._client = BigtableDataClient(
            project=settings.project, credentials=google_credentials(settings)
        )
        timeout = settings.operation_timeout
        options = {
            "default_operation_timeout": timeout,
            "default_attempt_timeout": min(timeout, 10.0),
            "default_read_rows_operation_timeout": timeout,
            "default_read_rows_attempt_timeout": min(timeout, 10.0),
            "default_mutate_rows_operation_timeout": timeout,
            "default_mutate_rows_attempt_timeout": min(timeout, 10.0),
        }
        profile = settings.app_profile
        self.events = self._client.get_table(
            settings.instance, settings.table, app_profile_id=profile, **options
        )
        self.index = self._client.get_table(
            settings.instance, settings.index_table, app_profile_id=profile, **options
        )
        self._threads: tuple[int, ThreadPoolExecutor] | None = None

    def close(self) -> None:
        if self._threads is not None:
            self._threads[1].shutdown()
            self._threads = None
        self._client.close()

    def _budget(self, timeout: float | None) -> float:
        """A call's time budget: ``timeout`` when given, else ``bigtable.operation_timeout``."""
        return self.settings.operation_timeout if timeout is None else timeout

    def __enter__(self) -> BigtableTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads -----------------------------------------------------------------------------

    def read_event_rows(
        self,
        row_keys: Iterable[str],
        families: Sequence[str] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, RowSnapshot]:
        """The latest cell of every column of each existing row."""
        wanted: list[str | bytes] = sorted(set(row_keys))
        if not wanted:
            return {}
        row_filter: rf.RowFilter = rf.CellsColumnLimitFilter(1)
        if families:
            row_filter = rf.RowFilterChain(
                [rf.FamilyNameRegexFilter(_alternation(families)), rf.CellsColumnLimitFilter(1)]
            )
        with store_calls(self.settings, timeout):
            rows = self.events.read_rows(
                ReadRowsQuery(row_keys=wanted, row_filter=row_filter),
                operation_timeout=self._budget(timeout),
            )
        return {row.row_key.decode(): snapshot(row) for row in rows}

    def read_index_rows(
        self, row_keys: Iterable[str], *, timeout: float | None = None
    ) -> dict[str, dict[str, bytes]]:
        wanted: list[str | bytes] = sorted(set(row_keys))
        if not wanted:
            return {}
        query = ReadRowsQuery(row_keys=wanted, row_filter=rf.CellsColumnLimitFilter(1))
        with store_calls(self.settings, timeout):
            rows = self.index.read_rows(query, operation_timeout=self._budget(timeout))
        return {
            row.row_key.decode(): {c.qualifier.decode(): c.value for c in row.cells} for row in rows
        }

    # --- writes ----------------------------------------------------------------------------

    def bulk_write(
        self,
        table: Any,
        entries: Sequence[tuple[str, Sequence[Cell] | Sequence[IndexEntry]]],
        *,
        timeout: float | None = None,
    ) -> list[int]:
        """Write entries with one MutateRows call; returns the indexes of failed entries.

        A failure of the whole call, or of every entry (an outage), raises
        :class:`StoreUnavailableError`.
        """
        mutation_entries = [RowMutationEntry(key, _mutations(cells)) for key, cells in entries]
        try:
            with store_calls(self.settings, timeout):
                table.bulk_mutate_rows(mutation_entries, operation_timeout=self._budget(timeout))
        except MutationsExceptionGroup as group:
            failed = sorted(
                {e.index for e in group.exceptions if getattr(e, "index", None) is not None}
            )
            if failed and len(failed) < len(entries):
                return failed
            first = group.exceptions[0]
            cause = describe_outage(first.__cause__ or first, timeout)
            raise StoreUnavailableError(endpoint(self.settings), cause) from group
        return []

    def write_many_if_unsigned(
        self,
        rows: Sequence[tuple[str, Sequence[Cell]]],
        in_flight: int,
        *,
        timeout: float | None = None,
    ) -> list[bool]:
        """Write each row's cells only if its ``QuorumState:SignedVAA`` is absent; per row,
        True if written.

        One ``check_and_mutate_row`` of the data client per row (its retries and time budget
        apply), with up to ``in_flight`` calls outstanding on a pool of threads. The first error
        (:class:`StoreUnavailableError`, :class:`TableMissingError`, or an API error that is
        not an outage) is raised only after every call already issued has finished, and no
        further call is issued after a failure.
        """
        with telemetry.start_span(_tracer, "eventstore.check_and_mutate") as span:
            results = self._write_many_if_unsigned(rows, in_flight, timeout)
            span.set_attributes(
                {"chainloom.rows": len(results), "chainloom.lost_races": results.count(False)}
            )
        return results

    def _write_many_if_unsigned(
        self, rows: Sequence[tuple[str, Sequence[Cell]]], in_flight: int, timeout: float | None
    ) -> list[bool]:
        predicate = _signed_vaa_predicate()

        def write(row_key: str, cells: Sequence[Cell]) -> bool:
            matched = self.events.check_and_mutate_row(
                row_key,
                predicate,
                false_case_mutations=_mutations(cells),
                operation_timeout=self._budget(timeout),
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
        with store_calls(self.settings, timeout):
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
            with store_calls(self.settings):
                rows = self.events.read_rows(query)
            for row in rows:
                yield row.row_key.decode(), snapshot(row)
                if remaining is not None:
                    remaining -= 1

    def scan_event_keys(
        self, start: str | None, end: str | None, *, limit: int | None = None
    ) -> Iterator[str]:
        """Row keys of the events table in ``[start, end)`` (None: unbounded), ascending,
        streamed.

        Keys only: one cell per row with its value stripped (Bigtable has no keys-only read,
        this is its documented equivalent), so a scan over millions of rows moves little more
        than the keys.
        """
        row_filter = rf.RowFilterChain(
            [rf.CellsRowLimitFilter(1), rf.StripValueTransformerFilter(True)]
        )
        query = ReadRowsQuery(
            row_ranges=[RowRange(start, end)], limit=limit or 0, row_filter=row_filter
        )
        with store_calls(self.settings):
            for row in self.events.read_rows_stream(query):
                yield row.row_key.decode()

    def sample_event_keys(self) -> list[bytes]:
        """Row keys that cut the events table into pieces of similar size, in key order.

        The data client's ``sample_row_keys``: the last key is ``b""`` (the end of the table);
        bulk readers split the table at these keys so each piece is read on its own.
        """
        with store_calls(self.settings):
            return [key for key, _offset in self.events.sample_row_keys()]

    def stream_events(
        self,
        start: str,
        end: str,
        *,
        families: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> Iterator[tuple[str, RowSnapshot]]:
        """Rows in ``[start, end)`` (``""`` is the table's edge), streamed, not collected.

        For bulk reads of a whole key range: rows arrive as the server sends them, so memory
        stays flat however large the range. ``timeout`` bounds the whole stream (default
        ``bigtable.operation_timeout``).
        """
        parts: list[rf.RowFilter] = []
        if families:
            parts.append(rf.FamilyNameRegexFilter(_alternation(families)))
        parts.append(rf.CellsColumnLimitFilter(1))
        row_filter: rf.RowFilter = parts[0] if len(parts) == 1 else rf.RowFilterChain(parts)
        query = ReadRowsQuery(row_ranges=[RowRange(start, end)], row_filter=row_filter)
        with store_calls(self.settings, timeout):
            for row in self.events.read_rows_stream(query, operation_timeout=self._budget(timeout)):
                yield row.row_key.decode(), snapshot(row)

    def scan_index(
        self, start: str, end: str, *, limit: int | None = None, keys_only: bool = False
    ) -> list[tuple[str, dict[str, bytes]]]:
        """Index rows in ``[start, end)``."""
        row_filter: rf.RowFilter = rf.CellsColumnLimitFilter(1)
        if keys_only:
            row_filter = rf.RowFilterChain([row_filter, rf.StripValueTransformerFilter(True)])
        query = ReadRowsQuery(
            row_ranges=[RowRange(start, end)], limit=limit or 0, row_filter=row_filter
        )
        with store_calls(self.settings):
            rows = self.index.read_rows(query)
        return [
            (row.row_key.decode(), {c.qualifier.decode(): c.value for c in row.cells})
            for row in rows
        ]


def _alternation(names: Sequence[str]) -> str:
    return "^(" + "|".join(re.escape(n) for n in names) + ")$"


def _signed_vaa_predicate() -> Any:
    """The check-and-mutate predicate: a ``QuorumState:SignedVAA`` cell exists."""
    return rf.RowFilterChain(
        [
            rf.FamilyNameRegexFilter(schema.QUORUM_STATE),
            rf.ColumnQualifierRegexFilter(schema.Q.SIGNED_VAA.encode()),
            rf.CellsColumnLimitFilter(1),
            rf.StripValueTransformerFilter(True),
        ]
    )


def _mutations(cells: Sequence[Cell] | Sequence[IndexEntry]) -> list[Any]:
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
