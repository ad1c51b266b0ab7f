"""vaa-ingest's tasks: what runs in the Python workers, one partition at a time.

Each partition opens the tables and writes through :class:`EventWriter` (parse with the core
codec, verify against the broadcast guardian sets, plan against the stored row, write only the
difference), so a bulk load and ``chainloom events put`` cannot disagree about a row. Refused
inputs become result rows, never failures of the task.
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import (
    MessageKeyError,
    StoreUnavailableError,
    TableMissingError,
    UnverifiedVAAError,
)
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
    PayloadParseError,
    UnknownGuardianSetError,
    VAAEncodingError,
    WormholeError,
)
from chainloom.wormhole.payloads import AssetMeta, decode_payload
from chainloom_spark.errors import SinkUnavailableError
from chainloom_spark.progress import ProgressCounters
from chainloom_spark.summary import UNKNOWN_CHAIN, ChainCounts

if TYPE_CHECKING:
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
        return writer.prepare(raw, initiating_tx_id=tx_id)
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


Result = tuple[str, int, Any, Any, Any, Any]
"""A task's output row: (kind, chain, a, b, c, d) with kind ``counts`` (a: the counts),
``conflict`` (a: message id, b: digest) or ``refused`` (a: location, b: raw, c: rule,
d: reason)."""


ASSETS, REST = "attestations", "messages"
"""The two passes: token attestations first, then everything else (see :func:`run`)."""


def is_attestation(raw: bytes, emitters: KnownEmitters) -> bool:
    """Whether ``raw`` is a well-formed token attestation (AssetMeta of a known bridge)."""
    try:
        return isinstance(decode_payload(parse_vaa(raw), emitters=emitters), AssetMeta)
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


def message_key(record: Any) -> str:
    """The row key of the message ``record`` carries ("" when it cannot be read: refused later)."""
    try:
        raw, _ = decode_record(record.text, record.data)
        return str(parse_vaa(raw).row_key)
    except (Refusal, WormholeError):
        return ""


def partition_of(key: str) -> int:
    """A stable hash of a row key (the same in every Python worker, whatever its hash seed)."""
    return zlib.crc32(key.encode())


def _as_bytes(record: Any) -> bytes:
    if record.data is not None:
        return bytes(record.data)
    text: str = record.text or ""
    return text.encode()


def ingest_partition(
    context: PartitionContext, phase: str, records: Iterable[Any]
) -> Iterator[Result]:
    """Verify and write the records of one partition that belong to ``phase``; yield the
    partition's counts, conflicts and refusals (inputs that cannot be read at all belong to
    the second phase)."""
    if context.emulator_host:
        os.environ[EMULATOR_ENV] = context.emulator_host
        # The client warns on every connection to the emulator: expected, not news to log.
        warnings.filterwarnings("ignore", "Connecting to Bigtable emulator", RuntimeWarning)
    tally = PartitionTally()
    emitters = all_known_emitters()
    try:
        with BigtableTables(context.location) as tables:
            writer = EventWriter(
                tables,
                context.guardian_sets.value,
                emitters=emitters,
                config=context.writer,
                signature_cache=executor_signature_cache(),
            )
            for record in records:
                try:
                    raw, tx_id = decode_record(record.text, record.data)
                    if is_attestation(raw, emitters) != (phase == ASSETS):
                        continue
                    tally.read += 1
                    item = prepare(writer, raw, tx_id)
                except Refusal as refusal:
                    if phase == ASSETS:
                        continue  # unreadable: refused once, by the second pass
                    tally.refusal(refusal.chain)
                    yield ("refused", refusal.chain, record.location, _as_bytes(record),
                           refusal.rule, refusal.reason)  # fmt: skip
                    continue
                tally.chains[item.vaa.row_key] = item.vaa.emitter_chain
                tally.plans(writer.submit_prepared(item))
            tally.plans(writer.flush())
            conflicts = list(writer.summary.conflicts)
    except (StoreUnavailableError, TableMissingError) as error:
        raise SinkUnavailableError(str(error)) from error
    finally:
        context.progress.add(read=tally.read, written=tally.written, refused=tally.refused)
    for chain, chain_counts in tally.counts.items():
        yield ("counts", chain, chain_counts.as_dict(), None, None, None)
    for message_id, digest in conflicts:
        yield ("conflict", int(message_id.split("/", 1)[0]), message_id, digest, None, None)
