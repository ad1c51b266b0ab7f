"""vaa-ingest's tasks: what runs in the Python workers, one partition at a time.

Records reach Python and come back in Arrow record batches (``DataFrame.mapInArrow``), a
batch of thousands of records converted at once, never a pickled row at a time. Two tasks:

* :func:`key_batches` reads each record once to add the message's row key and whether it is a
  token attestation, so the JVM can partition by the key (every copy of a message in one task)
  and split the passes with a filter, the record's text passing through untouched;
* :func:`ingest_batches` writes a partition's records of one pass through
  :class:`EventWriter` (parse with the core codec, verify against the broadcast guardian sets,
  plan against the stored row, write only the difference), so a bulk load and ``chainloom
  events put`` cannot disagree about a row. Refused inputs become result rows, never failures
  of the task.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError, UnverifiedVAAError
from chainloom.eventstore.planner import RowPlan
from chainloom.eventstore.service import EMULATOR_ENV
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.settings import BigtableSettings
from chainloom.wormhole import (
    GuardianSets,
    KnownEmitters,
    SignatureCache,
    all_known_emitters,
    decode_vaa_text,
    parse_vaa,
)
from chainloom.wormhole.errors import (
    MessageKeyError,
    PayloadParseError,
    UnknownGuardianSetError,
    VAAEncodingError,
    WormholeError,
)
from chainloom.wormhole.payloads import AssetMeta, decode_payload
from chainloom.wormhole.vaa import VAA
from chainloom_spark.errors import SinkUnavailableError
from chainloom_spark.progress import ProgressCounters
from chainloom_spark.summary import UNKNOWN_CHAIN, ChainCounts

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast


# ----------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class PartitionContext:
    """What every task needs, shipped with the task (small) or broadcast (guardian sets)."""

    location: BigtableSettings
    """The tables to write."""
    emulator_host: str | None
    """BIGTABLE_EMULATOR_HOST of the driver (executors may have started without it)."""
    guardian_sets: Broadcast[GuardianSets]
    """The guardian sets, broadcast once."""
    writer: WriterConfig
    """Flush size, write concurrency and retries of each partition's writer."""
    progress: ProgressCounters
    """Read, written and refused, for the driver's progress lines."""


_SIGNATURE_CACHE: SignatureCache | None = None


def executor_signature_cache() -> SignatureCache:
    """The signature cache of this Python worker, shared by every partition it runs."""
    global _SIGNATURE_CACHE  # noqa: PLW0603 - one cache per worker process, on purpose
    if _SIGNATURE_CACHE is None:
        _SIGNATURE_CACHE = SignatureCache()
    return _SIGNATURE_CACHE


class Refusal(Exception):  # noqa: N818 - a verdict about an input, not a failure of the job
    """An input the job will not store: goes to the dead letter."""

    def __init__(self, rule: str, reason: str, chain: int = UNKNOWN_CHAIN) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
        self.chain = chain


def decode_record(text: str | None, data: bytes | bytearray | None) -> tuple[bytes, str | None]:
    """(VAA bytes, tx id or None) of one input record; raises :class:`Refusal`."""
    if data is not None:
        return bytes(data), None
    line = (text or "").strip()
    if line.startswith("{"):
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise Refusal("json", f"not JSON: {error}") from None
        vaa = document.get("vaa") if isinstance(document, dict) else None
        if not isinstance(vaa, str):
            raise Refusal("json", "a JSON line needs a 'vaa' string (hex or base64)")
        tx_id = document.get("tx_id")
        if tx_id is not None and not isinstance(tx_id, str):
            raise Refusal("tx-id", "'tx_id' must be a string")
        line = vaa
    else:
        tx_id = None
    try:
        return decode_vaa_text(line), tx_id
    except VAAEncodingError as error:
        raise Refusal("encoding", str(error)) from None


def prepare(writer: EventWriter, raw: bytes, tx_id: str | None) -> Any:
    """The writer's verified input for ``raw``; raises :class:`Refusal` naming the rule."""
    try:
        vaa = parse_vaa(raw)
    except WormholeError as error:
        raise Refusal("vaa-format", str(error)) from None
    chain = vaa.emitter_chain
    if vaa.signatures and vaa.guardian_set_index not in writer.guardian_sets:
        raise Refusal("guardian-set", f"guardian set {vaa.guardian_set_index} is not known", chain)
    try:
        # The parsed VAA, not the bytes: its bytes are exactly those parsed, and the writer
        # need not parse them again.
        return writer.prepare(vaa, initiating_tx_id=tx_id)
    except UnknownGuardianSetError as error:
        raise Refusal("guardian-set", str(error), chain) from None
    except PayloadParseError as error:
        raise Refusal("payload", str(error), chain) from None
    except UnverifiedVAAError as error:
        raise Refusal("signature", error.reason, chain) from None
    except MessageKeyError as error:
        raise Refusal("tx-id", str(error), chain) from None
    except WormholeError as error:
        raise Refusal("vaa-format", str(error), chain) from None


INPUT_COLUMNS = ("location", "text", "data")
"""An input record: the file it came from, and the VAA as a text line or as bytes."""

KEYED_DDL = "location STRING, text STRING, data BINARY, key STRING, attestation BOOLEAN"
"""An input record with what :func:`key_batches` adds: the message's row key ("" when it
cannot be read: refused by the second pass) and whether it is a token attestation."""

RESULT_DDL = (
    "kind STRING, chain INT, counts STRING, message_id STRING, digest STRING, "
    "location STRING, raw BINARY, rule STRING, reason STRING"
)
"""A task's output row: ``kind`` ``counts`` (``counts``: a partition's counts of ``chain``
as JSON), ``conflict`` (``message_id``, ``digest``) or ``refused`` (``location``, ``raw``:
the input as read, ``rule``, ``reason``)."""


ASSETS, REST = "attestations", "messages"
"""The two passes: token attestations first, then everything else (see :func:`run`)."""


def is_attestation(raw: bytes | VAA, emitters: KnownEmitters) -> bool:
    """Whether ``raw`` is a well-formed token attestation (AssetMeta of a known bridge)."""
    try:
        vaa = raw if isinstance(raw, VAA) else parse_vaa(raw)
        return isinstance(decode_payload(vaa, emitters=emitters), AssetMeta)
    except WormholeError:
        return False


class PartitionTally:
    """What one partition did, per emitter chain, and the totals for progress lines."""

    def __init__(self) -> None:
        self.counts: dict[int, ChainCounts] = {}
        """Per-chain counts."""
        self.chains: dict[str, int] = {}
        """Row key -> emitter chain of the inputs queued."""
        self.read = 0
        """Inputs of this pass read."""
        self.written = 0
        """Inputs that wrote cells."""
        self.refused = 0
        """Inputs refused."""

    def plans(self, plans: list[RowPlan]) -> None:
        """Count the plans a flush executed."""
        for plan in plans:
            into = self.counts.setdefault(self.chains[plan.row_key], ChainCounts())
            setattr(into, plan.outcome.value, getattr(into, plan.outcome.value) + 1)
            if plan.cells:
                into.written += 1
                self.written += 1

    def refusal(self, chain: int) -> None:
        """Count a refused input."""
        self.read += 1
        self.refused += 1
        self.counts.setdefault(chain, ChainCounts()).refused += 1


def message_key(text: str | None, data: bytes | None, emitters: KnownEmitters) -> tuple[str, bool]:
    """(row key, is a token attestation) of the message an input record carries; ("", False)
    when it cannot be read (refused by the second pass)."""
    try:
        raw, _ = decode_record(text, data)
        vaa = parse_vaa(raw)
    except (Refusal, WormholeError):
        return "", False
    return str(vaa.row_key), is_attestation(vaa, emitters)


def key_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch of input records with their row key and attestation flag (:data:`KEYED_DDL`);
    the input columns pass through as they came."""
    import pyarrow as pa

    emitters = all_known_emitters()
    for batch in batches:
        keyed = [
            message_key(text, data, emitters)
            for text, data in zip(
                batch.column("text").to_pylist(), batch.column("data").to_pylist(), strict=True
            )
        ]
        yield pa.RecordBatch.from_arrays(
            [
                *(batch.column(name) for name in INPUT_COLUMNS),
                pa.array([key for key, _ in keyed], pa.string()),
                pa.array([flag for _, flag in keyed], pa.bool_()),
            ],
            names=[*INPUT_COLUMNS, "key", "attestation"],
        )


def _task_environment(context: PartitionContext) -> None:
    if context.emulator_host:
        os.environ[EMULATOR_ENV] = context.emulator_host
        # The client warns on every connection to the emulator: expected, not news to log.
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)


def ingest_batches(
    context: PartitionContext, phase: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Verify and write the records of one partition in ``phase`` (the driver has filtered
    them; records that cannot be read are in the second phase); yield one batch of the
    partition's counts, conflicts and refusals (:data:`RESULT_DDL`)."""
    import pyarrow as pa

    _task_environment(context)
    tally = PartitionTally()
    results: list[dict[str, Any]] = []
    try:
        with BigtableTables(context.location) as tables:
            writer = EventWriter(
                tables,
                context.guardian_sets.value,
                emitters=all_known_emitters(),
                config=context.writer,
                signature_cache=executor_signature_cache(),
            )
            for batch in batches:
                columns = [batch.column(name).to_pylist() for name in INPUT_COLUMNS]
                for location, text, data in zip(*columns, strict=True):
                    try:
                        raw, tx_id = decode_record(text, data)
                        item = prepare(writer, raw, tx_id)
                    except Refusal as refusal:
                        tally.refusal(refusal.chain)
                        results.append({
                            "kind": "refused", "chain": refusal.chain, "location": location,
                            "raw": data if data is not None else (text or "").encode(),
                            "rule": refusal.rule, "reason": refusal.reason,
                        })  # fmt: skip
                        continue
                    tally.read += 1
                    tally.chains[item.vaa.row_key] = item.vaa.emitter_chain
                    tally.plans(writer.submit_prepared(item))
            tally.plans(writer.flush())
            conflicts = list(writer.summary.conflicts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    finally:
        context.progress.add(read=tally.read, written=tally.written, refused=tally.refused)
    for chain, chain_counts in tally.counts.items():
        results.append({"kind": "counts", "chain": chain,
                        "counts": orjson.dumps(chain_counts.as_dict()).decode()})  # fmt: skip
    for message_id, digest in conflicts:
        results.append({"kind": "conflict", "chain": int(message_id.split("/", 1)[0]),
                        "message_id": message_id, "digest": digest})  # fmt: skip
    if results:
        yield pa.RecordBatch.from_pylist(results, schema=result_schema())


def result_schema() -> pa.Schema:
    """:data:`RESULT_DDL` as an Arrow schema."""
    import pyarrow as pa

    return pa.schema([
        ("kind", pa.string()), ("chain", pa.int32()), ("counts", pa.string()),
        ("message_id", pa.string()), ("digest", pa.string()), ("location", pa.string()),
        ("raw", pa.binary()), ("rule", pa.string()), ("reason", pa.string()),
    ])  # fmt: skip
