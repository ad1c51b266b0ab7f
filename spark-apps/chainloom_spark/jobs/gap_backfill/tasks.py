"""gap-backfill's tasks: finding the missing sequences of emitters, fetching them, writing
what was found (verified and written as vaa-ingest's tasks do)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainloom.eventstore.backfill import fetch_missing, scan_emitter
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import (
    StoreUnavailableError,
    TableMissingError,
)
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.service import EMULATOR_ENV
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.publicrpc import FetchStatus, PublicRpcClient
from chainloom.settings import BigtableSettings, PublicRpcSettings
from chainloom.wormhole import GuardianSets, all_known_emitters, parse_vaa
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.sequences import SequenceRange
from chainloom_spark.errors import SinkUnavailableError
from chainloom_spark.jobs.vaa_ingest.tasks import (
    ASSETS,
    Refusal,
    decode_record,
    executor_signature_cache,
    is_attestation,
    prepare,
)
from chainloom_spark.progress import ProgressCounters

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast


# ----------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class TaskContext:
    """What every task needs: small values shipped with it, guardian sets broadcast."""

    location: BigtableSettings
    """The tables."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver (executors may have started without it)."""
    guardian_sets: Broadcast[GuardianSets]
    """The guardian sets, broadcast once."""
    writer: WriterConfig
    """Flush size, write concurrency and retries of each partition's writer."""
    public_rpc: PublicRpcSettings
    """The endpoints and their call policy."""
    first: int | None
    """``--from-seq``."""
    last: int | None
    """``--to-seq``."""
    max_missing: int
    """Sequences looked for per emitter."""
    counters: ProgressCounters
    """The job's progress counters: fetch results read, inputs written and refused."""


def _task_environment(context: TaskContext) -> None:
    if context.emulator_host:
        os.environ[EMULATOR_ENV] = context.emulator_host
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)


Gap = tuple[int, str, int, int | None, int | None, list[tuple[int, int]], int]
"""A find task's row: (chain, emitter, stored, lowest, highest, missing ranges, skipped)."""


def find_partition(context: TaskContext, emitters: Iterable[tuple[int, str]]) -> Iterator[Gap]:
    """The missing ranges of each emitter of the partition, from its row keys
    (:func:`chainloom.eventstore.backfill.scan_emitter`, as ``chainloom events backfill``)."""
    _task_environment(context)
    try:
        with BigtableTables(context.location) as tables:
            reader = EventReader(tables)
            for chain, emitter in emitters:
                scan = scan_emitter(reader, chain, emitter, first=context.first,
                                    last=context.last, max_missing=context.max_missing)  # fmt: skip
                yield (chain, emitter, scan.stored, scan.lowest, scan.highest,
                       [(r.first, r.last) for r in scan.missing], scan.skipped)  # fmt: skip
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error


Fetched = tuple[int, str, int, str, bytes | None, str]
"""A fetched message: (chain, emitter, sequence, status, VAA bytes or None, reason)."""


def fetch_partition(
    context: TaskContext, chunks: Iterable[tuple[int, str, int, int]]
) -> Iterator[Fetched]:
    """Ask the public API for each sequence of the partition's chunks."""
    read = 0
    with PublicRpcClient(context.public_rpc) as client:
        for chain, emitter, first, last in chunks:
            for result in fetch_missing(client, chain, emitter, [SequenceRange(first, last)]):
                read += 1
                yield (chain, emitter, result.sequence, result.status.value, result.vaa,
                       result.reason)  # fmt: skip
    context.counters.add(read=read)


FETCHED_DDL = (
    "chain INT, emitter STRING, sequence DECIMAL(20,0), status STRING, raw BINARY, reason STRING"
)
""":data:`Fetched` as Spark DDL (a sequence is a uint64, beyond a LONG)."""


def files_batches(
    missing: Broadcast[dict[tuple[int, str], list[tuple[int, int]]]],
    counters: ProgressCounters,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The VAAs among the input lines (batches of Spark's text reader, in Arrow) whose id is
    missing, as :data:`FETCHED_DDL` batches (other lines ignored); every line counts as
    read."""
    import pyarrow as pa

    wanted = missing.value
    schema = pa.schema([
        ("chain", pa.int32()), ("emitter", pa.string()), ("sequence", pa.decimal128(20, 0)),
        ("status", pa.string()), ("raw", pa.binary()), ("reason", pa.string()),
    ])  # fmt: skip
    read = 0
    for batch in batches:
        found: list[dict[str, Any]] = []
        for line in batch.column("value").to_pylist():
            read += 1
            try:
                raw, _ = decode_record(line, None)
                vaa = parse_vaa(raw)
            except (Refusal, WormholeError):
                continue
            emitter = vaa.emitter_address.hex()
            ranges = wanted.get((vaa.emitter_chain, emitter))
            if ranges and any(first <= vaa.sequence <= last for first, last in ranges):
                found.append({"chain": vaa.emitter_chain, "emitter": emitter,
                              "sequence": Decimal(vaa.sequence), "raw": raw, "reason": "",
                              "status": FetchStatus.FOUND.value})  # fmt: skip
        if found:
            yield pa.RecordBatch.from_pylist(found, schema=schema)
    counters.add(read=read)


def as_fetched(row: Any) -> Fetched:
    """A :data:`FETCHED_DDL` row as a :data:`Fetched` tuple."""
    return (row.chain, row.emitter, int(row.sequence), row.status, bytes(row.raw), row.reason)


Written = tuple[str, int, str, Any, Any, Any]
"""A write task's row: (kind, chain, emitter, a, b, c) with kind ``counts`` (a: the counts),
``refused`` (a: sequence, b: rule, c: reason) or ``conflict`` (a: message id, b: digest)."""


def write_partition(context: TaskContext, phase: str, rows: Iterable[Fetched]) -> Iterator[Written]:
    """Verify and write the found VAAs of the partition that belong to ``phase``."""
    _task_environment(context)
    emitters = all_known_emitters()
    counts: dict[tuple[int, str], dict[str, int]] = {}
    owner: dict[str, tuple[int, str]] = {}
    refused: list[Written] = []

    def tally(plans: Iterable[Any]) -> None:
        for plan in plans:
            into = counts.setdefault(owner[plan.row_key], _zero())
            into[plan.outcome.value] += 1
            if plan.cells:
                into["written"] += 1

    try:
        with BigtableTables(context.location) as tables:
            writer = EventWriter(tables, context.guardian_sets.value, emitters=emitters,
                                 config=context.writer,
                                 signature_cache=executor_signature_cache())  # fmt: skip
            for chain, emitter, sequence, status, raw, _ in rows:
                if status != FetchStatus.FOUND.value or raw is None:
                    continue
                if is_attestation(raw, emitters) != (phase == ASSETS):
                    continue
                counts.setdefault((chain, emitter), _zero())["found"] += 1
                try:
                    item = prepare(writer, raw, None)
                except Refusal as refusal:
                    counts[(chain, emitter)]["refused"] += 1
                    refused.append(("refused", chain, emitter, sequence, refusal.rule,
                                    refusal.reason))  # fmt: skip
                    continue
                owner[item.vaa.row_key] = (chain, emitter)
                tally(writer.submit_prepared(item))
            tally(writer.flush())
            conflicts = list(writer.summary.conflicts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    context.counters.add(written=sum(c["written"] for c in counts.values()), refused=len(refused))
    for (chain, emitter), emitter_counts in counts.items():
        yield ("counts", chain, emitter, emitter_counts, None, None)
    yield from refused
    for message_id, digest in conflicts:
        chain_text, emitter, _ = message_id.split("/")
        yield ("conflict", int(chain_text), emitter, message_id, digest, None)


def _zero() -> dict[str, int]:
    return dict.fromkeys(("found", "new", "updated", "unchanged", "conflicting", "refused",
                          "written"), 0)  # fmt: skip
