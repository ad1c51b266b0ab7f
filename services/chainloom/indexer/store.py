"""The event writer as the pipeline's :class:`~chainloom.indexer.pipeline.BatchStore`.

Why an adapter: the pipeline retries a failed batch as a whole and acknowledges it only when a
write returns, while :class:`~chainloom.eventstore.writer.EventWriter` keeps what it could not
write queued and retries it on its next :meth:`~EventWriter.flush`. This adapter joins the
two: a fresh batch is queued and flushed; after a failure the writer still holds the batch,
so the retry only flushes again (queueing it twice would write it twice). Verification is
the writer's own :meth:`~EventWriter.prepare`, the same as ``chainloom events put``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from chainloom.eventstore.planner import MessageInput
from chainloom.eventstore.writer import EventWriter

log = logging.getLogger(__name__)

PROBE_ROW = "0:0000000000000000000000000000000000000000000000000000000000000000:0"
"""The row key a store check reads (chain 0 is never used, so it reads nothing)."""


class EventWriterStore:
    """Writes the pipeline's batches with one :class:`EventWriter` (one thread at a time)."""

    def __init__(self, writer: EventWriter, check_timeout: float = 5.0) -> None:
        self.writer = writer
        """The writer, configured with ``flush_rows`` at least the pipeline's batch size."""
        self.check_timeout = check_timeout
        """Seconds a store check may take."""

    def prepare(self, raw: bytes) -> MessageInput:
        """Parse and verify one VAA exactly as the event writer does for every input."""
        return self.writer.prepare(raw)

    def write(self, batch: Sequence[MessageInput]) -> None:
        """Write ``batch``; after a StoreUnavailableError the same batch is only flushed again."""
        if self.writer.pending == 0:
            for item in batch:
                self.writer.submit_prepared(item)
        self.writer.flush()
        self._report_findings()

    def _report_findings(self) -> None:
        """Log the batch's conflicts and price failures, then drop them from the summary (a
        service running for months must not keep every one in memory)."""
        summary = self.writer.summary
        for message_id, digest in summary.conflicts:
            log.info("indexer: %s: conflicting VAA %s recorded", message_id, digest)
        for problem in summary.enrichment_errors:
            log.info("indexer: stored without a USD notional: %s", problem)
        summary.conflicts.clear()
        summary.enrichment_errors.clear()

    def check(self) -> None:
        """Read one row that does not exist (raises StoreUnavailableError, TableMissingError)."""
        self.writer.tables.read_event_rows([PROBE_ROW], timeout=self.check_timeout)

    def outcomes(self) -> Mapping[str, int]:
        """Rows written since start, by outcome."""
        summary = self.writer.summary
        return {
            "new": summary.new,
            "updated": summary.updated,
            "unchanged": summary.unchanged,
            "conflicting": summary.conflicting,
        }
